"""``Schedd.refreshGSIProxy`` with a real pool: a running job reading its proxy through
X509_USER_PROXY sees the refreshed one in its sandbox; the submit-side file is replaced
too; the journal gets the new expiration, never the proxy."""

from __future__ import annotations

import datetime
import time
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

import jobledger as htcondor
import jobledger.v1 as v1
from tests.pool.conftest import running_pool, wait_until

# Waits (bounded: 120 s) until its proxy's text changes, then shows what it saw.
JOB = """#!/bin/sh
first=$(cat "$X509_USER_PROXY")
i=0
while [ "$(cat "$X509_USER_PROXY")" = "$first" ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done
cat "$X509_USER_PROXY" > seen.pem
echo "$X509_USER_PROXY" > where.txt
"""


def proxy(hours: float) -> tuple[bytes, int]:
    """A certificate and its key, as a proxy file holds them; and its notAfter."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "alice"),
                      x509.NameAttribute(NameOID.COMMON_NAME, "proxy")])
    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    end = now + datetime.timedelta(hours=hours)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now).not_valid_after(end)
            .sign(key, hashes.SHA256()))
    pem = cert.public_bytes(serialization.Encoding.PEM) + key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption())
    return pem, int(end.timestamp())


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    yield from running_pool(tmp_path_factory, NUM_CPUS="2")


def test_a_running_job_sees_its_refreshed_proxy(pool, tmp_path):
    first, _ = proxy(1)
    fresh, fresh_end = proxy(2)
    (tmp_path / "x509up").write_bytes(first)
    (tmp_path / "job.sh").write_text(JOB)
    (tmp_path / "job.sh").chmod(0o755)
    (tmp_path / "fresh.pem").write_bytes(fresh)
    schedd = htcondor.Schedd()
    cluster = schedd.submit(htcondor.Submit({
        "executable": "job.sh", "x509userproxy": "x509up", "initialdir": str(tmp_path),
        "request_cpus": "1", "request_memory": "1", "should_transfer_files": "YES"})).cluster()
    ad = schedd.query(f"ClusterId == {cluster}", ["x509userproxy"])[0]
    assert ad["x509userproxy"] == str(tmp_path / "x509up")
    wait_until(lambda: schedd.query(f"ClusterId == {cluster}", ["JobStatus"])[0]["JobStatus"] == 2,
               120, what="the job running")

    left = schedd.refreshGSIProxy(cluster, 0, str(tmp_path / "fresh.pem"))
    assert fresh_end - int(time.time()) - 5 <= left <= fresh_end - int(time.time()) + 1
    assert (tmp_path / "x509up").read_bytes() == fresh            # the submit side's file
    assert (tmp_path / "x509up").stat().st_mode & 0o777 == 0o600
    wait_until(lambda: (tmp_path / "where.txt").exists(), 120, what="the job to see the new proxy")
    assert (tmp_path / "seen.pem").read_bytes() == fresh          # what the job read in its sandbox
    sandbox = Path((tmp_path / "where.txt").read_text().strip())
    assert sandbox.name == "x509up" and sandbox.parent != tmp_path
    history = wait_until(lambda: schedd.history(f"ClusterId == {cluster}",
                                                ["x509UserProxyExpiration", "x509userproxysubject"]),
                         120, what="the job in the history")
    assert history[0]["x509UserProxyExpiration"] == fresh_end
    assert history[0]["x509userproxysubject"] == "CN=proxy,CN=alice"

    # the proxy itself is in no file of the pool (journal, views, logs) once the job's
    # starter, answered after its end was committed, has removed the sandbox
    wait_until(lambda: not list((Path(pool.local_dir) / "execute").glob("dir_*")), 60,
               what="the job's sandbox removed")
    body = fresh.decode().splitlines()[2].encode()
    for path in Path(pool.local_dir).rglob("*"):
        if path.is_file():
            assert body not in path.read_bytes(), path


def test_refusals_say_why(pool, tmp_path):
    schedd = v1.Schedd()
    good, _ = proxy(1)
    (tmp_path / "good.pem").write_bytes(good)
    (tmp_path / "bad.pem").write_text("not a certificate\n")
    cluster = schedd.submit(htcondor.Submit({"executable": "/bin/true", "hold": "true",
                                             "initialdir": str(tmp_path)})).cluster()
    try:
        with pytest.raises(htcondor.HTCondorException, match=f"job {cluster}.0 has no X.509 proxy"):
            schedd.refreshGSIProxy(cluster, 0, str(tmp_path / "good.pem"))
        with pytest.raises(htcondor.HTCondorException, match="no PEM certificate"):
            schedd.refreshGSIProxy(cluster, 0, str(tmp_path / "bad.pem"))
        with pytest.raises(htcondor.HTCondorException, match="no job 999999.0"):
            schedd.refreshGSIProxy(999999, 0, str(tmp_path / "good.pem"))
        with pytest.raises(htcondor.HTCondorException, match="cannot read the proxy"):
            schedd.refreshGSIProxy(cluster, 0, str(tmp_path / "absent.pem"))
        with pytest.raises(TypeError):
            schedd.refreshGSIProxy("1", 0, str(tmp_path / "good.pem"))
    finally:
        schedd.act(htcondor.JobAction.Remove, f"ClusterId == {cluster}")
