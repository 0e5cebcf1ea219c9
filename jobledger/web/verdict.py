"""The audit verdict the page and the static report show: ``daemons.audit`` of a pool's
LOCAL_DIR, summed up as ``{"ok", "text", "position", "findings"}``.

``ok`` is None when there is nothing to audit (a picture of imported user logs), False
when the audit found something or could not run, True when the logs, the tables and the
journal agree.  ``position`` is the journal head the verdict was computed at.
"""

from __future__ import annotations

from jobledger.eventcore.errors import JobledgerError

__all__ = ["audit_verdict", "no_pool"]

SHOWN_FINDINGS = 20


def no_pool(head: int) -> dict:
    """The verdict of a picture with no pool behind it."""
    return {"ok": None, "text": "no pool to audit", "position": head}


def audit_verdict(local_dir: str | None, head: int) -> dict:
    """Audit the pool at ``local_dir`` (None: nothing to audit)."""
    if local_dir is None:
        return no_pool(head)
    from jobledger.daemons.audit import audit
    try:
        report = audit(local_dir)
    except JobledgerError as exc:
        return {"ok": False, "text": f"audit failed: {exc}", "position": head}
    text = f"{'OK' if report.ok else 'FAILED'}: {len(report.findings)} findings"
    return {"ok": report.ok, "text": text, "position": head,
            "findings": [str(f) for f in report.findings[:SHOWN_FINDINGS]]}
