"""The schedd's spool: where a job's files live on the access point's side.

``job_spool(SPOOL, job)`` is ``$(SPOOL)/<cluster>/<proc>``.  It holds the
files of ON_EXIT_OR_EVICT jobs saved at an eviction (``evicted/``, input
of the next run).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from eventcore.ids import JobId


def job_spool(spool_dir: Path, job: JobId) -> Path:
    return Path(spool_dir) / str(job.cluster) / str(job.proc)


def remove_job_spool(spool_dir: Path, job: JobId) -> None:
    """Forget a job's spooled files (and its cluster's directory once empty)."""
    where = job_spool(spool_dir, job)
    shutil.rmtree(where, ignore_errors=True)
    try:
        where.parent.rmdir()
    except OSError:
        pass
