"""Processes and I/O: the SQLite journal store, the projector and the daemons.

The schedd is the only writer of the journal; every change of state is an
append, and the views (queue, history, user logs, event log) follow from it.
"""
