"""The submit description language: from submit text to the job ads of a cluster.

Pure: the caller supplies a ``SubmitEnvironment`` (``env.py``) that reads
files, globs, the process environment, the clock and random numbers.
``daemons/client/submit.py`` holds the real one and the façade's
``jobledger.Submit``; ``StaticEnvironment`` is the in-memory one.

Modules
    ``parse``         text -> macro table + the queue line (continuations,
                      here-documents, ``+Attr``, include, if/elif/else/endif)
    ``macros``        ``$(X)``, ``$(X:default)``, ``$ENV()``, ``$INT()``,
                      ``$REAL()``, ``$STRING()``, ``$EVAL()``, ``$SUBSTR()``,
                      ``$CHOICE()``, ``$RANDOM_*()``, ``$F[flags]()``,
                      ``$BASENAME()``/``$DIRNAME()``; ``$$(X)`` left alone
    ``queue``         the queue statement and its item rows
    ``description``   ``Submit``: the htcondor2-compatible mapping
    ``translate``     commands -> job attributes (rules with declared inputs)
    ``args``          V1/V2 ``arguments`` and ``environment``
    ``requirements``  the generated ``Requirements``
    ``jobs``          ``plan_cluster``: all proc ads of a cluster at once

For users (``import jobledger as htcondor``)
    ``Submit(text | dict | None, queue=None, **commands)``; mapping access
    (raw values), ``expand(key)``, ``getQArgs()``/``setQArgs()``,
    ``itemdata(qargs=None)``, ``str(sub)``; and, beyond htcondor2,
    ``sub.jobs(count=0, itemdata=None, clusterid=1, procid=0, qdate=0,
    owner="")`` yielding full job ``ClassAd``s, ``sub.procs(...)`` the
    per-proc parts, ``sub.cluster(...)`` the ``ClusterPlan``.
    ``Submit.using(env, text)`` binds another environment (tests, or a
    description whose files come from elsewhere).

    ``expand()`` is lenient like htcondor2 (a failing macro function gives
    nothing); building jobs is strict like condor_submit: a failing macro
    function, an unknown ``$NAME(``, a circular reference, a bad command
    value or a bad queue statement raise ``SubmitError``/``MacroError``
    with the line and its text.

For the schedd (the fast path)
    ``plan_cluster(sub, env, *, cluster_id, count=0, itemdata=None,
    queue=None, spool=False, owner="", qdate=0, first_proc=0)`` returns a
    ``ClusterPlan`` with

    * ``cluster_attrs``: ``{attribute: ClassAd expression text}`` common to
      every proc (ClusterId, QDate, Owner, Cmd, Requirements, ...);
    * ``proc_attrs``: one dict per proc with ``ProcId``, ``JobStatus`` and
      every attribute whose command uses a per-job macro (``$(ProcId)``,
      ``$(Step)``, ``$(Row)``, queue variables, ``$RANDOM_...``);
    * ``merged(i)``, ``ads()`` (ClassAds), ``cluster_ad()``, ``num_procs``,
      ``warnings`` (texts for ``warnings.warn``).

    ``count``/``itemdata``/``queue`` have ``Schedd.submit``'s meaning
    (itemdata: strings bind ``Item``, dicts bind their keys).  A statement
    that makes no jobs, bad syntax, a missing item file, a bad command value
    or a failing macro function raises ``SubmitError`` (a ``ValueError``)
    naming the line and its text; nothing is returned half-built.  The
    schedd adds ``User``, ``GlobalJobId``, ``TotalSubmitProcs`` itself.
    ``daemons.client.submit.build_cluster(...)`` wraps this with the real
    environment and returns ``(cluster_attrs, proc_attrs, warnings)``.
"""

from .description import Submit
from .env import StaticEnvironment, SubmitEnvironment
from .jobs import ClusterPlan, plan_cluster

__all__ = ["Submit", "StaticEnvironment", "SubmitEnvironment", "ClusterPlan", "plan_cluster"]
