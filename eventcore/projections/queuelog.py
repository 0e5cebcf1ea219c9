"""The queue as HTCondor's compacted ``job_queue.log`` text (schedd.md section 7).

``queue_log_text(fold, creation_time, sequence=1, next_cluster=None)`` writes
what HTCondor writes when it compacts its log: the ``107`` header, the
header ad ``0.0`` with ``NextClusterNum``, then every cluster ad (key
``0<c>.-1``) and proc ad (``<c>.<p>``) as one ``101`` record followed by one
``103`` record per attribute of that ad's own.  No transactions.  For
diffing a replayed queue against a real schedd's; pure.
"""

from __future__ import annotations

from jobledger.eventcore.projections.queue import QueueFold

__all__ = ["queue_log_text"]


def _ad_lines(key: str, ad: dict) -> list[str]:
    lines = [f"101 {key} Job Machine"]
    lines.extend(f"103 {key} {name} {expr}" for name, expr in ad.items())
    return lines


def queue_log_text(fold: QueueFold, creation_time: int, sequence: int = 1,
                   next_cluster: int | None = None) -> str:
    """The compacted ``job_queue.log`` for the queue ``fold`` holds."""
    clusters = sorted(c for c, ad in fold.clusters.items() if ad is not None)
    jobs = list(fold.jobs())
    if next_cluster is None:
        seen = clusters + [c for (c, _), _ in jobs]
        next_cluster = max(seen, default=0) + 1
    lines = [f"107 {sequence} CreationTimestamp {int(creation_time)}"]
    lines += _ad_lines("0.0", {"NextClusterNum": str(next_cluster)})
    by_cluster: dict[int, list] = {}
    for (cluster, proc), row in jobs:
        by_cluster.setdefault(cluster, []).append((proc, row))
    for cluster in sorted(set(clusters) | set(by_cluster)):
        ad = fold.clusters.get(cluster)
        if ad is not None:
            lines += _ad_lines(f"0{cluster}.-1", ad)
        for proc, row in by_cluster.get(cluster, []):
            lines += _ad_lines(f"{cluster}.{proc}", row.ad)
    return "\n".join(lines) + "\n"
