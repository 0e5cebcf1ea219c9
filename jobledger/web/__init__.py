"""``jobledger web``: a live and replayable picture of a run (see ``jobledger.web.app``).

The folds it draws are ``eventcore.projections.picture``, ``story`` and
``trace``; this package only serves them (``source``, ``app``) and writes the
static report (``report``).  It needs the ``[web]`` extra (Starlette, uvicorn).
"""
