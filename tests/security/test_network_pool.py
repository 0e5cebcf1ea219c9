"""A pool others can reach: TLS on 127.0.0.1, IDTOKENS, authorization, more than one user.

The pool runs for real (master, collector, shared_port, schedd, ...) with
COLLECTOR_HOST = 127.0.0.1:PORT.  Each client is a separate Python process with
none of the pool's configuration: only a token directory and a known_hosts file in
a HOME of its own, so everything it does goes through the network.  Only loopback
addresses are used (127.0.0.1; 127.0.0.2 for the certificate of another host).
"""

from __future__ import annotations

import json
import os
import socket
import ssl
import struct
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from jobledger.daemons import idtokens
from jobledger.daemons.client.personal import PersonalPool
from tests.pool.conftest import stop_and_check

REVOKED_JTI = "0badc0de" * 4


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def net_pool(tmp_path_factory):
    port = free_port()
    pool = PersonalPool(local_dir=tmp_path_factory.mktemp("netpool"), config={
        "COLLECTOR_HOST": f"127.0.0.1:{port}", "TRUST_DOMAIN": "test.pool",
        "SEC_TOKEN_REVOCATION_EXPR": f'member(jti, {{"{REVOKED_JTI}"}})',
        "SEC_HANDSHAKE_TIMEOUT": "3", "ALLOW_WRITE": "*@test.pool", "DENY_WRITE": "eve@test.pool",
        "NET_MAX_SPOOL_MB": "2",
    })
    pool.start()
    pool.port = port
    yield pool
    stop_and_check(pool)


def make_token(pool, identity: str, **kw) -> str:
    get = {"SEC_TOKEN_POOL_SIGNING_KEY_FILE": str(pool.local_dir / "passwords.d" / "POOL")}.get
    return idtokens.create_token(identity, "test.pool", idtokens.read_signing_key("POOL", get), **kw)


CLIENT = """
import json, sys
import jobledger as htcondor
from jobledger.eventcore.errors import JobledgerError
ADDRESS = {address!r}
def report(value):
    print("RESULT " + json.dumps(value, default=str))
try:
{body}
except JobledgerError as exc:
    report({{"error": type(exc).__name__, "message": str(exc),
             "attrs": {{k: v for k, v in vars(exc).items() if isinstance(v, (str, int, type(None)))}}}})
"""


def client(tmp_path: Path, pool, body: str, tokens: dict[str, str] | None = None,
           config: str = "", name: str = "client"):
    """Run ``body`` in a fresh client process holding only ``tokens``; its report."""
    home = tmp_path / name
    (home / "tokens.d").mkdir(parents=True, exist_ok=True)
    for file, text in (tokens or {}).items():
        (home / "tokens.d" / file).write_text(text + "\n")
    (home / "condor_config").write_text(
        f"SEC_TOKEN_DIRECTORY = {home}/tokens.d\nSEC_KNOWN_HOSTS = {home}/known_hosts\n{config}")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CONDOR_CONFIG", "_CONDOR_"))}
    env.update(CONDOR_CONFIG=str(home / "condor_config"), HOME=str(home))
    code = CLIENT.format(address=f"127.0.0.1:{pool.port}", body=textwrap.indent(textwrap.dedent(body), "    "))
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=home, capture_output=True,
                          text=True, timeout=120)
    results = [json.loads(line[7:]) for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and results, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    return results[-1]


SUBMIT = """
coll = htcondor.Collector(ADDRESS)
schedd = htcondor.Schedd(coll.locate(htcondor.DaemonType.Schedd))
result = schedd.submit(htcondor.Submit({"executable": "/bin/sleep", "arguments": "300"}))
report({"cluster": result.cluster(), "address": schedd.location["MyAddress"]})
"""


def test_the_default_personal_pool_opens_no_port(tmp_path):
    pool = PersonalPool(local_dir=tmp_path / "pool")
    pool.start()
    try:
        ad = pool.schedd.location
        assert ":0?sock=/" in ad["MyAddress"]
        assert not (tmp_path / "pool" / "log" / "SharedPortLog").exists()
    finally:
        stop_and_check(pool)


def test_a_client_with_only_a_token_submits_queries_and_removes(net_pool, tmp_path):
    alice = {"alice": make_token(net_pool, "alice@test.pool")}
    made = client(tmp_path, net_pool, SUBMIT, alice)
    assert made["address"].startswith(f"<127.0.0.1:{net_pool.port}?sock=/")   # a sinful string
    seen = client(tmp_path, net_pool, f"""
        schedd = htcondor.Schedd(htcondor.Collector(ADDRESS).locate(htcondor.DaemonType.Schedd))
        ads = schedd.query(constraint="ClusterId == {made['cluster']}", projection=["Owner", "User"])
        schedd.act(htcondor.JobAction.Remove, "{made['cluster']}.0")
        report([(ad["Owner"], ad["User"]) for ad in ads])
    """, alice)
    # the authenticated identity is the job's owner, not the client's ad or its uid
    assert seen == [["alice", "alice@test.pool"]]
    known = (tmp_path / "client" / "known_hosts").read_text().split()
    assert known[:2] == [f"127.0.0.1:{net_pool.port}", "SSL"]     # trusted on first use


def test_refusals_are_typed(net_pool, tmp_path):
    ping = 'report(len(htcondor.Collector(ADDRESS).query(htcondor.AdType.Schedd)))'
    nothing = client(tmp_path, net_pool, ping, {}, name="nobody")
    assert nothing["error"] == "AuthenticationFailed"
    assert "no token for trust domain 'test.pool'" in nothing["message"]

    foreign = idtokens.create_token("alice@test.pool", "test.pool", os.urandom(32))
    forged = client(tmp_path, net_pool, ping, {"t": foreign}, name="forger")
    assert forged["error"] == "AuthenticationFailed" and "signed by another key" in forged["message"]
    assert forged["attrs"]["identity"] == "alice@test.pool"

    old = make_token(net_pool, "alice@test.pool", lifetime=10, now=int(time.time()) - 100)
    expired = client(tmp_path, net_pool, ping, {"t": old}, name="late")
    assert expired["error"] == "AuthenticationFailed" and "expired" in expired["message"]

    dead = make_token(net_pool, "alice@test.pool", jti=REVOKED_JTI)
    revoked = client(tmp_path, net_pool, ping, {"t": dead}, name="revoked")
    assert revoked["error"] == "AuthenticationFailed" and "revoked" in revoked["message"]

    reader = make_token(net_pool, "carol@test.pool", authz=["READ"])
    assert client(tmp_path, net_pool, ping, {"t": reader}, name="reader") >= 1   # READ is enough to query
    submit = client(tmp_path, net_pool, SUBMIT, {"t": reader}, name="reader")
    assert submit["error"] == "PermissionDenied"
    assert submit["attrs"]["identity"] == "carol@test.pool" and submit["attrs"]["permission"] == "WRITE"
    assert "schedd" in submit["attrs"]["command"] and "limited to READ" in submit["message"]

    denied = client(tmp_path, net_pool, SUBMIT, {"t": make_token(net_pool, "eve@test.pool")}, name="eve")
    assert denied["error"] == "PermissionDenied" and "DENY_WRITE names it" in denied["message"]


def test_a_second_identity_cannot_touch_the_first_ones_jobs(net_pool, tmp_path):
    alice = {"a": make_token(net_pool, "alice@test.pool")}
    bob = {"b": make_token(net_pool, "bob@test.pool")}
    cluster = client(tmp_path, net_pool, SUBMIT, alice, name="alice")["cluster"]
    for action in (f'schedd.act(htcondor.JobAction.Remove, "{cluster}.0")',
                   f'schedd.act(htcondor.JobAction.Hold, "ClusterId == {cluster}")',
                   f'schedd.edit("{cluster}.0", "Foo", "1")'):
        refused = client(tmp_path, net_pool, f"""
            schedd = htcondor.Schedd(htcondor.Collector(ADDRESS).locate(htcondor.DaemonType.Schedd))
            report({action})
        """, bob, name="bob")
        assert refused["error"] == "PermissionDenied", refused
        assert refused["attrs"]["identity"] == "bob@test.pool" and refused["attrs"]["permission"] == "OWNER"
        assert f"job {cluster}.0" in refused["message"]
    still = client(tmp_path, net_pool, f"""
        schedd = htcondor.Schedd(htcondor.Collector(ADDRESS).locate(htcondor.DaemonType.Schedd))
        report([ad["JobStatus"] for ad in schedd.query(constraint="ClusterId == {cluster}")])
    """, alice, name="alice")
    assert still in ([1], [2])          # idle or running: neither held nor removed
    # QUEUE_SUPER_USERS (default root, condor) may act on anyone's jobs
    admin = {"c": make_token(net_pool, "condor@test.pool")}
    removed = client(tmp_path, net_pool, f"""
        schedd = htcondor.Schedd(htcondor.Collector(ADDRESS).locate(htcondor.DaemonType.Schedd))
        report(schedd.act(htcondor.JobAction.Remove, "{cluster}.0")["TotalSuccess"])
    """, admin, name="admin")
    assert removed == 1


def test_sessions_are_cached_and_tls_resumed(net_pool, tmp_path):
    seen = client(tmp_path, net_pool, """
        from jobledger.daemons import ipc
        infos = []
        for _ in range(3):
            sock = ipc.connect(ADDRESS)
            infos.append(sock.auth_info)
            sock.close()
        report([(i["user"], i["resumed"], i["tls"]) for i in infos])
    """, {"a": make_token(net_pool, "alice@test.pool")})
    assert [s[:2] for s in seen] == [["alice@test.pool", False], ["alice@test.pool", True],
                                     ["alice@test.pool", True]]
    assert seen[0][2] in ("TLSv1.2", "TLSv1.3")


def test_a_changed_certificate_is_refused(net_pool, tmp_path):
    home = tmp_path / "client"
    home.mkdir()
    (home / "known_hosts").write_text(f"127.0.0.1:{net_pool.port} SSL AAAA\n")
    refused = client(tmp_path, net_pool, 'report(htcondor.Collector(ADDRESS).query())',
                     {"a": make_token(net_pool, "alice@test.pool")})
    assert refused["error"] == "AuthenticationFailed"
    assert "not the one trusted" in refused["message"]


def test_a_certificate_for_another_host_is_refused(net_pool, tmp_path):
    """The pool's own certificate served from 127.0.0.2: a client trusting the pool's CA
    refuses it there (the name does not match)."""
    ssl_dir = net_pool.local_dir / "ssl"
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(ssl_dir / "host.crt", ssl_dir / "host.key")
    listener = socket.create_server(("127.0.0.2", 0))
    port = listener.getsockname()[1]

    def serve():
        try:
            conn, _ = listener.accept()
            with context.wrap_socket(conn, server_side=True):
                pass
        except OSError:
            pass
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        ca = net_pool.local_dir / "trust_domain_ca.pem"
        refused = client(tmp_path, net_pool, f'report(htcondor.Collector("127.0.0.2:{port}").query())',
                         {"a": make_token(net_pool, "alice@test.pool")},
                         config=f"AUTH_SSL_CLIENT_CAFILE = {ca}\n")
        assert refused["error"] == "AuthenticationFailed"
        assert "127.0.0.2" in refused["message"] and "TLS" in refused["message"]
        trusted = client(tmp_path, net_pool, 'report(len(htcondor.Collector(ADDRESS).query()))',
                         {"a": make_token(net_pool, "alice@test.pool")},
                         config=f"AUTH_SSL_CLIENT_CAFILE = {ca}\n", name="ca-client")
        assert trusted >= 1
    finally:
        listener.close()
        thread.join(10)


def _raw(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=10)


def _tls(port: int) -> ssl.SSLSocket:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context.wrap_socket(_raw(port))


def _closed(sock) -> bool:
    """Does the server close ``sock`` (within the socket's timeout)?"""
    try:
        while True:
            if not sock.recv(65536):
                return True
    except (ssl.SSLError, ConnectionError):
        return True
    except TimeoutError:
        return False


def test_bad_clients_do_not_stop_the_good_one(net_pool, tmp_path):
    """Plaintext, garbage, an oversized frame and silent clients, all at once: each is
    closed by the pool (silent ones after SEC_HANDSHAKE_TIMEOUT), and a good client is
    served meanwhile."""
    port = net_pool.port
    plain = _raw(port)
    plain.sendall(struct.pack(">I", 30) + b'{"cmd":"query","args":{}}    ')
    garbage = _raw(port)
    garbage.sendall(os.urandom(4096))
    silent = [_raw(port) for _ in range(20)]
    huge = _tls(port)
    huge.recv(65536)                        # the server's hello
    huge.sendall(struct.pack(">I", 1 << 30))
    unauthenticated = _tls(port)
    unauthenticated.recv(65536)
    unauthenticated.sendall(struct.pack(">I", 25) + b'{"cmd":"query","args":{}}')
    good = client(tmp_path, net_pool, 'report(len(htcondor.Collector(ADDRESS).query(htcondor.AdType.Schedd)))',
                  {"a": make_token(net_pool, "alice@test.pool")})
    assert good == 1
    for sock in (plain, garbage, huge, unauthenticated, *silent):
        assert _closed(sock)
        sock.close()


def test_ping_secman_and_security_context(net_pool, tmp_path):
    reader = make_token(net_pool, "carol@test.pool", authz=["READ"])
    seen = client(tmp_path, net_pool, f"""
        import jobledger.v1 as v1
        location = htcondor.Collector(ADDRESS).locate(htcondor.DaemonType.Schedd)
        ad = htcondor.ping(location, "READ")
        out = {{"user": ad["MyRemoteUserName"], "methods": ad["AuthMethods"], "enc": ad["Encryption"],
               "ok": ad["AuthorizationSucceeded"]}}
        try:
            htcondor.ping(location, "WRITE")
        except htcondor.HTCondorException as exc:
            out["write"] = type(exc).__name__
        # a SecurityContext's token is preferred over the token files
        ad = htcondor.ping(location, "WRITE", htcondor.SecurityContext({make_token(net_pool, 'dave@test.pool')!r}))
        out["context"] = ad["MyRemoteUserName"]
        secman = v1.SecMan()
        out["command"] = secman.getCommandString(60021)
        secman.setToken(v1.Token({make_token(net_pool, 'erin@test.pool')!r}))
        secman.invalidateAllSessions()
        out["settoken"] = secman.ping(location, "READ")["MyRemoteUserName"]
        report(out)
    """, {"r": reader})
    assert seen == {"user": "carol@test.pool", "methods": "IDTOKENS", "enc": "YES", "ok": True,
                    "write": "PermissionDenied", "context": "dave@test.pool", "command": "DC_NOP_WRITE",
                    "settoken": "erin@test.pool"}


def _tool_env(tmp_path: Path, tokens: dict[str, str]) -> dict:
    home = tmp_path / "tools"
    (home / "tokens.d").mkdir(parents=True, exist_ok=True)
    for file, text in tokens.items():
        (home / "tokens.d" / file).write_text(text + "\n")
    (home / "condor_config").write_text(f"SEC_TOKEN_DIRECTORY = {home}/tokens.d\n"
                                        f"SEC_KNOWN_HOSTS = {home}/known_hosts\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CONDOR_CONFIG", "_CONDOR_"))}
    env.update(CONDOR_CONFIG=str(home / "condor_config"), HOME=str(home))
    return env


def test_tools_reach_the_pool_with_dash_pool(net_pool, tmp_path):
    env = _tool_env(tmp_path, {"a": make_token(net_pool, "alice@test.pool", authz=["READ"])})
    where = f"127.0.0.1:{net_pool.port}"
    bin_dir = Path(sys.executable).parent

    def tool(*argv):
        return subprocess.run([str(bin_dir / argv[0]), *argv[1:]], env=env, capture_output=True,
                              text=True, timeout=120)
    status = tool("condor_status", "-pool", where, "-schedd", "-af", "Name")
    assert status.returncode == 0 and status.stdout.strip(), status.stderr
    queue = tool("condor_q", "-pool", where, "-allusers", "-totals")
    assert queue.returncode == 0, queue.stderr
    ping = tool("condor_ping", "-pool", where, "READ", "WRITE")
    assert ping.returncode == 1
    assert "READ command using (" in ping.stdout and "IDTOKENS) succeeded as alice@test.pool" in ping.stdout
    assert "WRITE command failed: alice@test.pool is not authorized" in ping.stderr
    assert "Traceback" not in ping.stderr


def test_a_token_request_approved_by_the_admin(net_pool, tmp_path):
    """A client with no token asks for one (anonymously), the pool's admin approves it
    with condor_token_request_approve, the client gets it and submits with it."""
    home = tmp_path / "newcomer"
    (home / "tokens.d").mkdir(parents=True)
    (home / "condor_config").write_text(f"SEC_TOKEN_DIRECTORY = {home}/tokens.d\n"
                                        f"SEC_KNOWN_HOSTS = {home}/known_hosts\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CONDOR_CONFIG", "_CONDOR_"))}
    env.update(CONDOR_CONFIG=str(home / "condor_config"), HOME=str(home))
    code = textwrap.dedent(f"""
        import sys
        import jobledger as htcondor, jobledger.v1 as v1
        from jobledger.daemons import netauth
        netauth.ALLOW_ANONYMOUS.set(True)
        try:                         # anonymous: only asking for a token is allowed
            htcondor.Collector("127.0.0.1:{net_pool.port}").query()
        except htcondor.HTCondorException as exc:
            print("QUERY", type(exc).__name__, exc, flush=True)
        request = v1.TokenRequest("frank@test.pool", ["READ", "WRITE"], 600)
        request.submit("127.0.0.1:{net_pool.port}")
        print("REQID", request.request_id, flush=True)
        token = request.result(60)
        token.write("frank")
        netauth.ALLOW_ANONYMOUS.set(False)
        schedd = htcondor.Schedd(htcondor.Collector("127.0.0.1:{net_pool.port}").locate(htcondor.DaemonType.Schedd))
        cluster = schedd.submit(htcondor.Submit({{"executable": "/bin/true"}})).cluster()
        print("OWNER", schedd.query(constraint=f"ClusterId == {{cluster}}", projection=["Owner"])[0]["Owner"],
              flush=True)
    """)
    asker = subprocess.Popen([sys.executable, "-c", code], env=env, cwd=home, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        query = asker.stdout.readline().split()
        assert query[:2] == ["QUERY", "PermissionDenied"] and "unauthenticated@unmapped" in query
        line = asker.stdout.readline().split()
        assert line[0] == "REQID", asker.stderr.read() if asker.poll() is not None else line
        listed = subprocess.run([str(Path(sys.executable).parent / "condor_token_request_list")],
                                capture_output=True, text=True, timeout=60)
        assert f'RequestId = "{line[1]}"' in listed.stdout and '"frank@test.pool"' in listed.stdout
        assert 'AuthenticatedIdentity = "unauthenticated@unmapped"' in listed.stdout
        approved = subprocess.run([str(Path(sys.executable).parent / "condor_token_request_approve"),
                                   "-reqid", line[1], "-yes"], capture_output=True, text=True, timeout=60)
        assert approved.returncode == 0 and "approved successfully" in approved.stdout, approved.stderr
        out, err = asker.communicate(timeout=120)
        assert asker.returncode == 0, err[-3000:]
        assert "OWNER frank" in out
    finally:
        if asker.poll() is None:
            asker.kill()
            asker.wait()
    parsed = idtokens.parse((home / "tokens.d" / "frank").read_text())
    assert parsed.scopes == ["READ", "WRITE"] and parsed.claims["exp"] - parsed.claims["iat"] == 600


def test_a_fetched_token_is_never_wider_than_the_session(net_pool, tmp_path):
    seen = client(tmp_path, net_pool, """
        from jobledger.daemons import ipc, idtokens
        token = ipc.call(ADDRESS, "token_fetch", authz=None, lifetime=300)
        out = {"scopes": idtokens.parse(token).scopes, "sub": idtokens.parse(token).identity}
        try:
            ipc.call(ADDRESS, "token_fetch", authz=["WRITE"])
        except htcondor.HTCondorException as exc:
            out["wider"] = [type(exc).__name__, exc.permission]
        report(out)
    """, {"r": make_token(net_pool, "gina@test.pool", authz=["READ"])})
    assert seen == {"scopes": ["READ"], "sub": "gina@test.pool", "wider": ["PermissionDenied", "WRITE"]}


def test_submit_rm_and_history_with_dash_pool(net_pool, tmp_path):
    env = _tool_env(tmp_path, {"h": make_token(net_pool, "hank@test.pool")})
    where = f"127.0.0.1:{net_pool.port}"
    bin_dir = Path(sys.executable).parent
    description = tmp_path / "job.sub"
    description.write_text("executable = /bin/sleep\narguments = 300\nqueue\n")

    def tool(*argv):
        done = subprocess.run([str(bin_dir / argv[0]), *argv[1:]], env=env, capture_output=True,
                              text=True, timeout=120, cwd=tmp_path)
        assert "Traceback" not in done.stderr, done.stderr
        return done
    submitted = tool("condor_submit", "-pool", where, "-terse", str(description))
    assert submitted.returncode == 0, submitted.stderr
    cluster = submitted.stdout.split(".")[0].strip()
    mine = tool("condor_q", "-pool", where, "-af", "Owner", "ClusterId")
    assert mine.returncode == 0, mine.stderr
    assert mine.stdout.split() == ["hank", cluster]      # "my jobs": the token's identity's
    removed = tool("condor_rm", "-pool", where, cluster)
    assert removed.returncode == 0 and "marked for removal" in removed.stdout, removed.stderr
    history = tool("condor_history", "-pool", where, cluster, "-af", "Owner", "JobStatus")
    assert history.returncode == 0, history.stderr
    assert history.stdout.split() == ["hank", "3"]     # removal and history row are one commit


SPOOLED_JOB = """
import os, time
from pathlib import Path
work = Path("work")                     # the client's own directory: the pool never sees it
work.mkdir(exist_ok=True)
(work / "job.sh").write_text("#!/bin/sh\\ncat data.txt; tr a-z A-Z < data.txt > result.txt\\n")
os.chmod(work / "job.sh", 0o755)
(work / "data.txt").write_text("spooled over the network\\n")
schedd = htcondor.Schedd(htcondor.Collector(ADDRESS).locate(htcondor.DaemonType.Schedd))
sub = htcondor.Submit({{"executable": "job.sh", "initialdir": str(work.absolute()), "output": "out.txt",
                       "transfer_input_files": "data.txt",
                       "transfer_output_remaps": '"result.txt = upper.txt"'}})
result = schedd.submit(sub, spool=True)
cluster = result.cluster()
held = schedd.query(f"ClusterId == {{cluster}}", ["JobStatus", "HoldReasonCode", "HoldReason"])[0]
"""


def test_a_remote_client_spools_its_input_and_retrieves_the_output(net_pool, tmp_path):
    """No shared file system: the inputs travel with the spool, the job runs from its
    spool, and retrieve brings the outputs back into the client's own directory."""
    alice = {"alice": make_token(net_pool, "alice@test.pool")}
    seen = client(tmp_path, net_pool, SPOOLED_JOB.format() + textwrap.dedent("""
        schedd.spool(result)
        (work / "data.txt").write_text("changed after spooling\\n")   # the job runs from the spool
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            status = [ad["JobStatus"] for ad in schedd.query(f"ClusterId == {cluster}", ["JobStatus"])]
            if status == [4] or status == [5]:
                break
            time.sleep(0.1)
        before = sorted(os.listdir(work))
        schedd.retrieve(f"ClusterId == {cluster}")
        report({"held": [held["JobStatus"], held["HoldReasonCode"], held["HoldReason"]],
                "status": status, "before": before, "cluster": cluster,
                "out": (work / "out.txt").read_text(), "upper": (work / "upper.txt").read_text()})
    """), alice)
    assert seen["held"] == [5, 16, "Spooling input data files"]     # HTCondor's code for it
    assert seen["status"] == [4], seen
    assert seen["before"] == ["data.txt", "job.sh"]     # nothing written here before retrieve
    assert seen["out"] == "spooled over the network\n"
    assert seen["upper"] == "SPOOLED OVER THE NETWORK\n"
    spool = net_pool.local_dir / "spool"
    assert (spool / str(seen["cluster"]) / "0" / "in" / "data.txt").read_text() == "spooled over the network\n"
    # another identity can neither retrieve nor spool alice's job
    bob = client(tmp_path, net_pool, f"""
        schedd = htcondor.Schedd(htcondor.Collector(ADDRESS).locate(htcondor.DaemonType.Schedd))
        out = []
        for spec in ("{seen['cluster']}.0", "ClusterId == {seen['cluster']}"):
            try:
                schedd.retrieve(spec)
            except htcondor.HTCondorException as exc:
                out.append([type(exc).__name__, exc.identity, exc.permission])
        report(out)
    """, {"bob": make_token(net_pool, "bob@test.pool")}, name="bob")
    assert bob == [["PermissionDenied", "bob@test.pool", "OWNER"]] * 2


def test_a_bad_spool_is_refused_and_leaves_nothing(net_pool, tmp_path):
    """Names leading out of the job's spool, an input over NET_MAX_SPOOL_MB, a job not
    waiting for its input: a clear error, and the job still waits with nothing spooled."""
    seen = client(tmp_path, net_pool, SPOOLED_JOB.format() + textwrap.dedent("""
        from jobledger.daemons import ipc
        out = {"cluster": cluster}
        def piece(path, data=b"x", offset=0):
            import base64
            return {"job": f"{cluster}.0", "path": path, "mode": 0o644, "offset": offset,
                    "data": base64.b64encode(data).decode()}
        for name, pieces in (("escape", [piece("../../../escaped.txt")]),
                             ("absolute", [piece("/tmp/absolute.txt")]),
                             ("other_job", [dict(piece("a"), job=f"{cluster}.7")]),
                             ("twice", [piece("data.txt"), piece("data.txt")]),
                             ("missing", [piece("data.txt")])):
            try:
                ipc.call_upload(schedd._address, "spool_upload", iter(pieces), ids=[f"{cluster}.0"])
                out[name] = "accepted"
            except htcondor.HTCondorException as exc:
                out[name] = [type(exc).__name__, str(exc)]
        (work / "data.txt").write_bytes(b"y" * (3 << 20))     # over the pool's 2 MB
        try:
            schedd.spool(result)
        except htcondor.HTCondorException as exc:
            out["oversized"] = [type(exc).__name__, str(exc)]
        still = schedd.query(f"ClusterId == {cluster}", ["JobStatus", "HoldReasonCode"])[0]
        out["still"] = [still["JobStatus"], still["HoldReasonCode"]]
        (work / "data.txt").unlink()
        try:
            schedd.spool(result)
        except htcondor.HTCondorException as exc:
            out["unreadable"] = [type(exc).__name__, str(exc)]
        done = schedd.submit(htcondor.Submit({"executable": "/bin/true"}))
        try:
            schedd.spool(type(result)(done.cluster(), 0, 1, result.clusterad(), []))
        except htcondor.HTCondorException as exc:
            out["not_waiting"] = [type(exc).__name__, str(exc)]
        schedd.act(htcondor.JobAction.Remove, f"ClusterId == {done.cluster()}")
        report(out)
    """), {"a": make_token(net_pool, "alice@test.pool")}, name="badspool")
    for name, why in (("escape", "'..' component"), ("absolute", "absolute path"),
                      ("other_job", "not one of those spooled"), ("twice", "sent twice"),
                      ("missing", "'job.sh' did not arrive"),
                      ("oversized", "over 2 MB (NET_MAX_SPOOL_MB"),
                      ("unreadable", "data.txt"), ("not_waiting", "not waiting for its input files")):
        kind, message = seen[name]
        assert kind in ("HTCondorValueError", "HTCondorIOError") and why in message, (name, seen[name])
        assert "Traceback" not in message
    assert seen["still"] == [5, 16]
    spool = net_pool.local_dir / "spool"
    assert not (spool / str(seen["cluster"])).exists()
    assert not list((spool / ".incoming").iterdir())
    assert not list(net_pool.local_dir.rglob("escaped.txt")) and not Path("/tmp/absolute.txt").exists()


def test_condor_submit_spool_and_condor_transfer_data_over_the_network(net_pool, tmp_path):
    """The tools a workflow shells out to: condor_submit -spool -pool, then
    condor_transfer_data -pool brings the output into the submit directory."""
    env = _tool_env(tmp_path, {"k": make_token(net_pool, "kim@test.pool")})
    where = f"127.0.0.1:{net_pool.port}"
    bin_dir = Path(sys.executable).parent
    work = tmp_path / "work"
    work.mkdir()
    (work / "words.txt").write_text("one two three\n")
    (work / "job.sub").write_text("executable = /usr/bin/wc\narguments = -w words.txt\n"
                                  "transfer_input_files = words.txt\noutput = count.out\nqueue\n")

    def tool(*argv):
        done = subprocess.run([str(bin_dir / argv[0]), *argv[1:]], env=env, capture_output=True,
                              text=True, timeout=120, cwd=work)
        assert "Traceback" not in done.stderr, done.stderr
        return done
    submitted = tool("condor_submit", "-spool", "-pool", where, "-terse", "job.sub")
    assert submitted.returncode == 0, submitted.stderr
    cluster = submitted.stdout.split(".")[0].strip()
    deadline = time.monotonic() + 120
    status = None
    while time.monotonic() < deadline and status not in ("4", "5"):
        status = tool("condor_q", "-pool", where, cluster, "-af", "JobStatus").stdout.strip()
        if status not in ("4", "5"):
            time.sleep(0.2)
    assert status == "4", tool("condor_q", "-pool", where, cluster, "-af", "HoldReason").stdout
    assert not (work / "count.out").exists()
    fetched = tool("condor_transfer_data", "-pool", where, cluster)
    assert fetched.returncode == 0 and fetched.stdout == "Fetching data files...\n", fetched.stderr
    assert (work / "count.out").read_text().split() == ["3", "words.txt"]
    nobody = tool("condor_transfer_data", "-pool", where)
    assert nobody.returncode == 1 and nobody.stderr.startswith("You did not specify any jobs\n")
    other = _tool_env(tmp_path / "other", {"l": make_token(net_pool, "lee@test.pool")})
    refused = subprocess.run([str(bin_dir / "condor_transfer_data"), "-pool", where, f"{cluster}.0"],
                             env=other, capture_output=True, text=True, timeout=120, cwd=work)
    assert refused.returncode == 1 and "ERROR: Failed to spool job files." in refused.stderr
    assert "lee@test.pool" in refused.stderr and "Traceback" not in refused.stderr


def test_secman_set_tag_and_set_pool_password(net_pool, tmp_path):
    """setTag: sessions negotiated under a tag are used only while it is set; setPoolPassword:
    the pool's password authenticates as condor_pool@<trust domain> (HTCondor's PASSWORD),
    a wrong one is refused, and leaving the SecMan's with-block undoes both."""
    plain = idtokens.scramble((net_pool.local_dir / "passwords.d" / "POOL").read_bytes())
    password = plain.decode("utf-8", "surrogateescape")
    seen = client(tmp_path, net_pool, f"""
        import jobledger.v1 as v1
        from jobledger.daemons import netclient
        host, port = ADDRESS.split(":")
        def resumed():
            with netclient.connect(host, int(port), "collector") as sock:
                return sock.auth_info["resumed"]
        out = {{"first": [resumed(), resumed()]}}
        location = htcondor.Collector(ADDRESS).locate(htcondor.DaemonType.Schedd)
        with v1.SecMan() as secman:
            secman.setTag("joe")
            out["joe"] = [resumed(), resumed()]
            secman.setPoolPassword({password!r})
            out["password"] = secman.ping(location, "READ")["MyRemoteUserName"]
            secman.setPoolPassword("not the pool's password")
            try:
                secman.ping(location, "READ")
            except htcondor.HTCondorException as exc:
                out["wrong"] = [type(exc).__name__, "another key" in str(exc)]
        out["after"] = htcondor.ping(location, "READ")["MyRemoteUserName"]
        report(out)
    """, {"t": make_token(net_pool, "ann@test.pool")}, name="tagged")
    assert seen == {"first": [False, True], "joe": [False, True], "password": "condor_pool@test.pool",
                    "wrong": ["AuthenticationFailed", True], "after": "ann@test.pool"}


def test_token_request_auto_approve(net_pool, tmp_path):
    """condor_token_request_auto_approve: requests from the netblock for condor@ limited to
    ADVERTISE_* are approved, the pending ones when the rule goes in; others still wait."""
    home = tmp_path / "daemon"
    (home / "tokens.d").mkdir(parents=True)
    (home / "condor_config").write_text(f"SEC_TOKEN_DIRECTORY = {home}/tokens.d\n"
                                        f"SEC_KNOWN_HOSTS = {home}/known_hosts\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CONDOR_CONFIG", "_CONDOR_"))}
    env.update(CONDOR_CONFIG=str(home / "condor_config"), HOME=str(home))
    code = textwrap.dedent(f"""
        import json, sys
        import jobledger.v1 as v1
        from jobledger.daemons import idtokens, netauth
        netauth.ALLOW_ANONYMOUS.set(True)
        where = "127.0.0.1:{net_pool.port}"
        before = v1.TokenRequest("condor@test.pool", ["ADVERTISE_STARTD"], 600)
        before.submit(where)
        user = v1.TokenRequest("mallory@test.pool", ["READ"], 600)
        user.submit(where)
        print("REQS", before.request_id, user.request_id, flush=True)
        sys.stdin.readline()
        after = v1.TokenRequest("condor@test.pool", ["ADVERTISE_SCHEDD", "ADVERTISE_MASTER"], 600)
        after.submit(where)
        wider = v1.TokenRequest("condor@test.pool", ["ADVERTISE_STARTD", "WRITE"], 600)
        wider.submit(where)
        parsed = idtokens.parse(after.result(1).contents)
        print("DONE", json.dumps([before.done, user.done, after.done, wider.done, parsed.identity,
                                  parsed.scopes]), flush=True)
    """)
    asker = subprocess.Popen([sys.executable, "-c", code], env=env, cwd=home, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    tool = str(Path(sys.executable).parent / "condor_token_request_auto_approve")
    try:
        line = asker.stdout.readline().split()
        assert line[:1] == ["REQS"], asker.stderr.read() if asker.poll() is not None else line
        installed = subprocess.run([tool, "-netblock", "127.0.0.0/8", "-lifetime", "600"],
                                   capture_output=True, text=True, timeout=60)
        assert installed.returncode == 0, installed.stderr
        out = installed.stdout
        assert out.startswith("Successfully installed auto-approval rule for netblock 127.0.0.0/8 "
                              "with lifetime of 0.17 hours\n"), out
        assert f'RequestId = "{line[2]}"' in out and f'RequestId = "{line[1]}"' not in out  # one waits
        assert "To approve these requests, please run condor_token_request_approve manually." in out
        asker.stdin.write("go\n")
        asker.stdin.flush()
        done, err = asker.communicate(timeout=120)
        assert asker.returncode == 0, err[-3000:]
        result = json.loads(done.split("DONE ", 1)[1])
        assert result == [True, False, True, False, "condor@test.pool", ["ADVERTISE_SCHEDD", "ADVERTISE_MASTER"]]
    finally:
        if asker.poll() is None:
            asker.kill()
            asker.wait()
    for argv, message in ((["-netblock", "127.0.0.0/8", "-lifetime", "0"],
                           "Failed to create new auto-approval rule: Auto-approval rule lifetimes must be "
                           "greater than zero."),
                          (["-netblock", "not-a-net"], "Auto-approval rule netblock invalid"),
                          (["-lifetime", "60"], "-netblock argument is required."),
                          (["-lifetime", "soon", "-netblock", "127.0.0.0/8"], "Invalid argument for -lifetime")):
        bad = subprocess.run([tool, *argv], capture_output=True, text=True, timeout=60)
        assert bad.returncode == 1 and message in bad.stderr and "Traceback" not in bad.stderr, (argv, bad.stderr)


def test_user_records_over_the_network(net_pool, tmp_path):
    """Reading the User records is READ; changing them ADMINISTRATOR (HTCondor registers
    QUERY_USERREC_ADS and the *_USERREC commands so); a network user's record is named by
    their identity, and once disabled they cannot submit."""
    alice = {"a": make_token(net_pool, "alice@test.pool")}
    client(tmp_path, net_pool, SUBMIT, alice, name="alice")
    seen = client(tmp_path, net_pool, """
        schedd = htcondor.Schedd(htcondor.Collector(ADDRESS).locate(htcondor.DaemonType.Schedd))
        report([ad["User"] for ad in schedd.queryUserAds('User == "alice@test.pool"')])
        report(schedd.disableUserRec("alice@test.pool", "self"))
    """, alice, name="alice")
    assert seen["error"] == "PermissionDenied" and seen["attrs"]["permission"] == "ADMINISTRATOR", seen
    local = net_pool.schedd                       # the pool's own user, on the local socket
    assert [ad["User"] for ad in local.queryUserAds('User == "alice@test.pool"')] == ["alice@test.pool"]
    assert local.disableUserRec("alice@test.pool", "account closed")["NumAds"] == 1
    try:
        refused = client(tmp_path, net_pool, SUBMIT, alice, name="alice")
        assert "User alice@test.pool is disabled : account closed" in refused["message"], refused
    finally:
        local.enableUserRec("alice@test.pool")
    from jobledger import JobAction
    local.act(JobAction.Remove, 'Owner == "alice"')
