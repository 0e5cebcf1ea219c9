"""Credentials in a real pool with a credd: stored owner-only, given to the jobs that ask for
them in their sandbox (``_CONDOR_CREDS``), and never in the journal or any log."""

from __future__ import annotations

import getpass
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import jobledger as htcondor
from jobledger.classad import ClassAd
from tests.pool.conftest import running_pool, wait_until

BIN = Path(sys.executable).parent
ME = f"{getpass.getuser()}@{socket.gethostname()}"
SECRETS = {"password": "pw-5f1c0a-never-logged", "krb": b"krb-7d2e91-never-logged",
           "box": b'{"access_token": "box-3a9c44-never-logged"}', "drive": b"drive-8b7f12-never-logged"}


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    yield from running_pool(tmp_path_factory, DAEMON_LIST="MASTER COLLECTOR NEGOTIATOR SCHEDD STARTD CREDD",
                            SEC_CREDENTIAL_DIRECTORY="$(LOCAL_DIR)/cred_dir", UID_DOMAIN=socket.gethostname())


def cred_dir(pool) -> Path:
    return Path(pool.local_dir) / "cred_dir"


def private(path: Path, mode: int) -> bool:
    st = path.stat()
    return stat.S_IMODE(st.st_mode) == mode and st.st_uid == os.getuid()


def store_cred(pool, *args, status: int = 0, stdin: bytes | None = None) -> str:
    env = dict(os.environ, CONDOR_CONFIG=str(pool.config_file))
    done = subprocess.run([str(BIN / "condor_store_cred"), *args], env=env, capture_output=True,
                          input=stdin, timeout=60)
    assert done.returncode == status, (args, done.stdout, done.stderr)
    return done.stdout.decode() + done.stderr.decode()


def test_passwords_and_credentials_are_stored_owner_only_and_queried(pool):
    credd = htcondor.Credd()
    assert credd.query_password() is False
    credd.add_password(SECRETS["password"])
    assert credd.query_password() is True and credd.query_password(ME) is True
    user = ME.split("@")[0]
    assert private(cred_dir(pool) / f"{user}.pwd", 0o600) and private(cred_dir(pool), 0o700)
    assert credd.delete_password() is True and credd.query_password() is False

    credd.add_user_cred(htcondor.CredType.Kerberos, SECRETS["krb"])
    stored = credd.query_user_cred(htcondor.CredType.Kerberos)
    assert isinstance(stored, int) and stored > 0
    assert private(cred_dir(pool) / f"{user}.cred", 0o600)
    assert (cred_dir(pool) / f"{user}.cred").read_bytes() == SECRETS["krb"]

    credd.add_user_service_cred(htcondor.CredType.OAuth, SECRETS["box"], "box")
    record = credd.query_user_service_cred(htcondor.CredType.OAuth, "box")
    assert 'Service = "box"' in record and "IsRefresh = false" in record
    assert private(cred_dir(pool) / user / "box.use", 0o600) and private(cred_dir(pool) / user, 0o700)
    assert credd.get_oauth2_credential("box", None) == SECRETS["box"].decode()
    check = credd.check_user_service_creds(htcondor.CredType.OAuth,
                                           [ClassAd({"Service": "box"}), ClassAd({"Service": "drive"})])
    assert not check.present and "drive" in check.error and check.url is None
    assert check.services == "box,drive"
    credd.add_user_service_cred(htcondor.CredType.OAuth, SECRETS["drive"], "drive")
    assert credd.check_user_service_creds(htcondor.CredType.OAuth, [ClassAd({"Service": "drive"})]).present
    credd.add_user_service_cred(htcondor.CredType.OAuth, b'{"refresh_token": "r"}', "cloud", handle="work")
    assert "IsRefresh = true" in credd.query_user_service_cred(htcondor.CredType.OAuth, "cloud", "work")
    credd.delete_user_service_cred(htcondor.CredType.OAuth, "cloud", "work")
    assert credd.query_user_service_cred(htcondor.CredType.OAuth, "cloud", "work") is None

    with pytest.raises(ValueError):
        credd.add_password("")
    with pytest.raises(ValueError):
        credd.add_user_cred(htcondor.CredType.OAuth, b"x")
    with pytest.raises(ValueError):
        credd.add_user_service_cred(htcondor.CredType.Kerberos, b"x", "box")
    with pytest.raises(ValueError):
        credd.check_user_service_creds(htcondor.CredType.OAuth, [ClassAd({"Handle": "h"})])
    with pytest.raises(htcondor.HTCondorException, match="invalid service name"):
        credd.add_user_service_cred(htcondor.CredType.OAuth, b"x", "../escape")


def test_a_job_gets_the_credentials_it_asks_for_in_its_sandbox(pool, tmp_path):
    credd = htcondor.Credd()
    credd.add_user_cred(htcondor.CredType.Kerberos, SECRETS["krb"])
    for service in ("box", "drive"):
        credd.add_user_service_cred(htcondor.CredType.OAuth, SECRETS[service], service)
    script = tmp_path / "job.sh"
    script.write_text('#!/bin/sh\nls "$_CONDOR_CREDS" > listing\nstat -c %a "$_CONDOR_CREDS" > mode\n'
                      'cat "$_CONDOR_CREDS/drive.use" > drive.copy\necho "$_CONDOR_CREDS" > where\n')
    script.chmod(0o755)
    schedd = htcondor.Schedd()
    cluster = schedd.submit(htcondor.Submit({
        "executable": str(script), "initialdir": str(tmp_path), "log": str(tmp_path / "job.log"),
        "use_oauth_services": "box, drive", "send_credential": "true"})).cluster()
    wait_until(lambda: not schedd.query(f"ClusterId == {cluster}", projection=["ClusterId"]), 120,
               what="the job to finish")
    assert (tmp_path / "listing").read_text().split() == ["box.use", "drive.use", f"{ME.split('@')[0]}.cred"]
    assert (tmp_path / "mode").read_text().strip() == "700"
    assert (tmp_path / "drive.copy").read_bytes() == SECRETS["drive"]
    assert not Path((tmp_path / "where").read_text().strip()).exists()     # gone with the job
    ad = schedd.history(f"ClusterId == {cluster}", projection=["OAuthServicesNeeded", "SendCredential"],
                        match=1)[0]
    assert ad["OAuthServicesNeeded"] == "box,drive" and ad["SendCredential"] is True

    # a service with nothing stored: the job is held, saying which
    held = schedd.submit(htcondor.Submit({
        "executable": str(script), "initialdir": str(tmp_path), "use_oauth_services": "nowhere"})).cluster()
    ad = wait_until(lambda: next(iter(schedd.query(f"ClusterId == {held} && JobStatus == 5",
                                                   projection=["HoldReason", "HoldReasonCode"])), None),
                    120, what="the job to be held")
    assert ad["HoldReasonCode"] == 4 and "nowhere" in ad["HoldReason"]
    schedd.act(htcondor.JobAction.Remove, f"ClusterId == {held}")


def test_credentials_never_reach_the_journal_or_any_log(pool, tmp_path):
    """After the tests above stored, used and deleted them: not one byte of a secret in
    any file of the pool (journal, its WAL, daemon logs, user and event logs, spool,
    job_queue.log, history) but the credential directory itself."""
    wait_until(lambda: not htcondor.Schedd().query("true", projection=["ClusterId"]), 60, what="an empty queue")
    needles = [s.encode() if isinstance(s, str) else s for s in SECRETS.values()]
    needles += [n.split(b'"')[3] for n in needles if n.startswith(b"{")]    # the token inside the JSON
    roots = [Path(pool.local_dir), tmp_path.parent]
    found = []
    for root in roots:
        for path in root.rglob("*"):
            if not path.is_file() or cred_dir(pool) in path.parents or path.name in ("drive.copy",):
                continue
            data = path.read_bytes()
            found += [f"{path}: {n!r}" for n in needles if n in data]
    assert not found, found


def test_condor_store_cred(pool, tmp_path):
    assert store_cred(pool, "query", status=1) == f"Account: {ME}\n\nNo credential is stored.\n"
    assert store_cred(pool, "add", "-p", "cli-secret") == f"Account: {ME}\n\nOperation succeeded.\n"
    assert store_cred(pool, "query").endswith("A credential is stored and is valid.\n")
    assert store_cred(pool, "delete").endswith("Operation succeeded.\n")
    token = tmp_path / "token"
    token.write_bytes(b"tok")
    assert store_cred(pool, "add-oauth", "-s", "svc", "-i", str(token)).endswith("Operation succeeded.\n")
    assert store_cred(pool, "query-oauth", "-s", "svc").endswith("A credential is stored and is valid.\n")
    assert store_cred(pool, "add-krb", "-i", "-", stdin=b"krb").endswith("Operation succeeded.\n")
    assert "Unrecognized command - 'frobnicate'" in store_cred(pool, "frobnicate", status=1)
    assert "is not of the form: account@domain" in store_cred(pool, "query", "-u", "nodomain", status=1)
    assert "needs -s service" in store_cred(pool, "add-oauth", "-i", str(token), status=1)
