"""Remote query and submit latency: the Unix socket beside the network, first and cached session.

One pool with COLLECTOR_HOST = 127.0.0.1:PORT; one client process (this one) holding a
token for alice.  Each operation is timed (median of a few runs) three ways:

- ``unix``: through the daemon's Unix socket, as a client on the pool's machine;
- ``net, new session``: through the shared port, every run a new TLS handshake and a
  new token exchange (the session caches emptied first, ``SecMan.invalidateAllSessions``);
- ``net, cached``: through the shared port with the session cached (TLS resumed, the
  token exchange skipped), as the second command of a program is.

``submit with spool`` is ``submit(spool=True)`` then ``spool(result)`` of one job whose
executable (a small script) and one 64 KiB input travel with it: on the Unix socket the
schedd copies them from the submit directory; over the network they go up in the upload.
The job's requirements are false, so nothing runs meanwhile.

There is no HTCondor peer to run beside it: the htcondor wheel has no daemons.
"""

from __future__ import annotations

import socket
import statistics
import tempfile
import time
from pathlib import Path

import jobledger as htcondor
from jobledger.daemons import idtokens, netclient
from jobledger.daemons.config_files import param
from jobledger.personal import PersonalPool

RUNS = 15


def _median_ms(fn, runs: int = RUNS, before=None) -> float:
    times = []
    for _ in range(runs):
        if before is not None:
            before()
        began = time.perf_counter()
        fn()
        times.append(time.perf_counter() - began)
    return statistics.median(times) * 1000


def main() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with tempfile.TemporaryDirectory(prefix="bench-network-") as where:
        config = {"COLLECTOR_HOST": f"127.0.0.1:{port}", "TRUST_DOMAIN": "bench.pool"}
        with PersonalPool(local_dir=Path(where) / "pool", config=config) as pool:
            key = idtokens.read_signing_key("POOL", lambda n: str(pool.local_dir / "passwords.d" / "POOL")
                                            if n == "SEC_TOKEN_POOL_SIGNING_KEY_FILE" else None)
            netclient.set_process_token(idtokens.create_token("alice@bench.pool", "bench.pool", key))
            param["SEC_KNOWN_HOSTS"] = str(Path(where) / "known_hosts")
            local = pool.schedd
            cluster = local.submit(htcondor.Submit({"executable": "/bin/true", "hold": "true"})).cluster()
            job = htcondor.Submit({"executable": "/bin/true", "hold": "true"})
            iwd = Path(where) / "submit"
            iwd.mkdir()
            (iwd / "job.sh").write_text("#!/bin/sh\ncat data.bin > /dev/null\n")
            (iwd / "job.sh").chmod(0o755)
            (iwd / "data.bin").write_bytes(bytes(range(256)) * 256)
            spooled = htcondor.Submit({"executable": str(iwd / "job.sh"), "initialdir": str(iwd),
                                       "transfer_input_files": "data.bin", "requirements": "false"})

            def spool_op(schedd):
                def op():
                    schedd.spool(schedd.submit(spooled, spool=True))
                return op
            run_dir = param["RUN"]

            def unix_ops():
                collector = htcondor.Collector()
                return {"collector query (schedd ads)": lambda: collector.query(htcondor.AdType.Schedd),
                        "schedd query (one job)": lambda: local.query(f"ClusterId == {cluster}"),
                        "submit (one job)": lambda: local.submit(job),
                        "submit with spool (64 KiB in)": spool_op(local)}

            def net_ops():
                collector = htcondor.Collector(f"127.0.0.1:{port}")
                schedd = htcondor.Schedd(collector.locate(htcondor.DaemonType.Schedd))
                return {"collector query (schedd ads)": lambda: collector.query(htcondor.AdType.Schedd),
                        "schedd query (one job)": lambda: schedd.query(f"ClusterId == {cluster}"),
                        "submit (one job)": lambda: schedd.submit(job),
                        "submit with spool (64 KiB in)": spool_op(schedd)}

            rows = {name: [_median_ms(op)] for name, op in unix_ops().items()}
            param["RUN"] = str(Path(where) / "elsewhere")     # this client is now "another machine"
            try:
                for name, op in net_ops().items():
                    rows[name].append(_median_ms(op, before=netclient.forget_sessions))
                    op()
                    rows[name].append(_median_ms(op))
            finally:
                param["RUN"] = run_dir
                netclient.set_process_token(None)
    print(f"| {'operation (median of ' + str(RUNS) + ')':<32} | {'unix':>9} | {'net, new session':>16} | "
          f"{'net, cached':>11} |")
    print(f"|{'-' * 34}|{'-' * 11}|{'-' * 18}|{'-' * 13}|")
    for name, (unix, fresh, cached) in rows.items():
        print(f"| {name:<32} | {unix:>6.1f} ms | {fresh:>13.1f} ms | {cached:>8.1f} ms |", flush=True)


if __name__ == "__main__":
    main()
