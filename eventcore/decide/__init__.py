"""The schedd's pure decisions: what an action does to a job in each status
(``actions``), the periodic and exit policy (``policy``), what a run writes (``runs``).

Functions of a job ad (``{attribute: expression text}``) and the time, returning the
journal records to append; the daemons read the queue, call them, append what they
return (naming the state they decided on: ``eventcore.records.Assumed``) and tell the
starters.
"""
