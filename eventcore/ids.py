"""Job identifiers: ``JobId(cluster, proc)``, HTCondor's "C.P".

``JobId`` is a frozen, ordered value.  ``str(JobId(12, 3))`` is ``"12.3"``;
``JobId.parse("12.3")`` gives it back (``"12"`` alone means proc 0 is *not*
assumed: a bare cluster is ``JobId(12, -1)``, the cluster-level id that
HTCondor writes as ``12.-1``).  Ordering is by (cluster, proc).
"""

from __future__ import annotations

import attrs

__all__ = ["JobId"]


@attrs.frozen(order=True)
class JobId:
    """One job: ``cluster`` (ClusterId) and ``proc`` (ProcId, -1 = whole cluster)."""

    cluster: int = attrs.field(validator=attrs.validators.instance_of(int))
    proc: int = attrs.field(default=-1, validator=attrs.validators.instance_of(int))

    def __str__(self) -> str:
        return f"{self.cluster}.{self.proc}"

    @classmethod
    def parse(cls, text: str) -> "JobId":
        """``"C.P"`` or ``"C"`` (cluster only) -> JobId; ValueError otherwise."""
        if not isinstance(text, str):
            raise TypeError(f"job id must be a str, not {type(text).__name__}")
        parts = text.strip().split(".")
        try:
            if len(parts) == 1:
                return cls(int(parts[0]), -1)
            if len(parts) == 2:
                return cls(int(parts[0]), int(parts[1]))
        except ValueError:
            pass
        raise ValueError(f"not a job id (expected CLUSTER.PROC): {text!r}")

    @property
    def is_cluster(self) -> bool:
        """True for a cluster-level id (proc -1)."""
        return self.proc < 0
