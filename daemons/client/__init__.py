"""The client library: what programs use to talk to a pool's daemons.

``api`` holds the htcondor2 objects (Schedd, Collector, Transaction) the façade re-exports and
``api_v1`` their v1 forms; ``credd``, ``master``, ``negotiator``, ``startd``, ``userrecs`` and
``watch`` the other daemons' handles; ``located`` how a handle finds its daemon; ``submit`` the
submit description with its file-system side; ``personal`` a personal pool started from
Python; ``importer`` user logs read into a journal; ``debuglog`` enable_debug/enable_log.
No daemon imports this package but DAGMan, a client of the schedd (tests/test_layering.py).
"""
