"""``Schedd.refreshGSIProxy``: a job's X.509 proxy replaced by a fresh one.

The proxy text comes with the request.  The schedd checks it is a certificate and
replaces the file the job's ``x509userproxy`` names (whole, owner-only), appends the new
``x509UserProxyExpiration`` and ``x509userproxysubject`` to the journal (never the proxy
itself), and, while the job runs, hands the proxy to the startd holding its claim, which
replaces the sandbox's copy the job reads through X509_USER_PROXY.  As HTCondor's schedd
passes a refreshed proxy on to a running job after answering, a startd that cannot be
reached is logged, not an error of the refresh.
"""

from __future__ import annotations

import posixpath
from pathlib import Path

from jobledger.daemons.x509_proxy import MAX_PROXY_BYTES, proxy_facts, replace_file
from jobledger.daemons.storage.interfaces import JobLedger
from jobledger.eventcore import adwire
from jobledger.eventcore.errors import HTCondorException, PermissionDenied
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.records import SetAttributes


def refresh_proxy(store: JobLedger, lock, startd_call, log, only, cluster, proc, proxy) -> int:
    """The refreshed proxy's expiration (Unix time); ``only``: (Owner, identity) the
    requester is limited to, or None."""
    for value, what in ((cluster, "cluster"), (proc, "proc")):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise HTCondorException(f"refreshGSIProxy: {what} must be a non-negative integer")
    if not isinstance(proxy, str) or len(proxy) > MAX_PROXY_BYTES:
        raise HTCondorException(f"refreshGSIProxy: the proxy must be text of at most {MAX_PROXY_BYTES} bytes")
    job = JobId(cluster, proc)
    facts = proxy_facts(proxy.encode(), f"the proxy sent for job {job}")
    with lock:
        ad = store.job_ad(job)
        if ad is None:
            raise HTCondorException(f"refreshGSIProxy: no job {job}")
        if only is not None and adwire.string_literal(ad, "Owner") != only[0]:
            raise PermissionDenied(only[1], f"refreshGSIProxy of job {job}", "OWNER", "it is another user's job")
        path = adwire.string_literal(ad, "x509userproxy")
        if path is None or not posixpath.isabs(path):
            raise HTCondorException(f"refreshGSIProxy: job {job} has no X.509 proxy (x509userproxy)")
        replace_file(Path(path), proxy.encode())
        store.append([SetAttributes(job, set={"x509UserProxyExpiration": str(facts["expiration"]),
                                              "x509userproxysubject": adwire.quote(facts["subject"])},
                                    by="refresh_proxy")])
        claim, startd = adwire.string_literal(ad, "ClaimId"), adwire.string_literal(ad, "StartdIpAddr")
    if claim and startd:
        try:
            startd_call("refresh_proxy", address=startd, claim=claim, name=posixpath.basename(path), proxy=proxy)
        except HTCondorException as exc:
            log.info("job %s: the refreshed proxy did not reach its sandbox: %s", job, exc)
    return facts["expiration"]
