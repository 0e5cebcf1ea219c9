"""The schedd: the job queue's daemon, built of parts.

``daemon`` is the process (its IPC table, ads and loop); each other module is one part it
composes and hands only the store interface it needs (``daemons/storage/interfaces.py``):
``act`` (remove, hold, release, ...), ``match`` (claims and EXECUTE), ``runs`` (starts and
ends), ``policy`` (periodic and exit expressions), ``query`` and ``watch`` (readers),
``userrecs``, ``submitters`` and ``usage`` (per-owner state and its hourly and daily
usage), ``local`` (local and scheduler universe), ``claims``, ``dagman``, ``epochs``,
``export`` and ``proxy``.
"""
