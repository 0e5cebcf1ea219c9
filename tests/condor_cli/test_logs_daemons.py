"""condor_wait, condor_userlog, condor_tail, condor_watch_q and condor_off/on/restart on a pool."""

from __future__ import annotations

import os
import re

import pytest

from jobledger.condor_cli import daemon, logs, queue, submit, watch_q
from tests.condor_cli.conftest import run
from tests.pool.conftest import fresh_pool, wait_until  # noqa: F401  (fixture)


@pytest.fixture
def submitted(pool, tmp_path):
    os.environ["CONDOR_CONFIG"] = str(pool.config_file)

    def make(body: str, count: int = 2, *extra: str) -> tuple[int, str]:
        log = tmp_path / f"jobs{len(list(tmp_path.glob('*.sub')))}.log"
        sub = tmp_path / f"{log.stem}.sub"
        sub.write_text(f"{body}\nlog = {log}\nqueue {count}\n")
        ran = run(submit.main, "-terse", *extra, str(sub))
        assert ran.status == 0, ran
        return int(ran.out.split(".")[0]), str(log)
    return make


def test_wait_returns_when_the_jobs_are_done_and_userlog_sums_them(submitted):
    cluster, log = submitted("executable = /bin/true")
    ran = run(logs.wait_main, "-status", log)
    assert ran.status == 0 and ran.out.endswith("All jobs done.\n")
    assert f"{cluster}.1.0 completed\n" in ran.out and f"{cluster}.0.0 submitted\n" in ran.out
    assert run(logs.wait_main, log, f"{cluster}.1").out == "All jobs done.\n"
    assert run(logs.wait_main, "-num", "1", log).out == "Specifed number of jobs (1) done.\n"
    ran = run(logs.wait_main, log, "999")
    assert ran.status == 1 and ran.err == "This log does not mention that job!\n"
    assert run(logs.wait_main, "/no/such.log").status == 1
    summary = run(logs.userlog_main, log).out.splitlines()
    assert summary[1] == "Job      Host            Start Time  Evict Time  Wall Time Good Time CPU Usage"
    assert sorted(line[:25] for line in summary[2:4]) == [f"{cluster}.{p:<{7 - len(str(cluster))}} 127.0.0.1       "
                                                          for p in (0, 1)]
    assert "Host/Job        Wall Time Good Time CPU Usage Avg Alloc  Avg Lost Goodput  Util." in summary
    assert summary[-1].startswith("Total             0+00:")


def test_wait_times_out_on_jobs_that_do_not_end(submitted):
    cluster, log = submitted("executable = /bin/sleep\narguments = 600\nhold = true", 1)
    ran = run(logs.wait_main, "-wait", "1", log)
    assert ran.status == 1 and ran.out == "Time expired.\n"
    assert run(logs.wait_main).status == 1


def test_tail_prints_the_end_of_a_running_jobs_output(submitted, tmp_path):
    script = tmp_path / "talk.sh"
    script.write_text("echo first; echo second; exec sleep 600\n")
    cluster, _ = submitted(f"executable = /bin/sh\narguments = {script}\noutput = {tmp_path}/talk.out", 1)
    wait_until(lambda: run(queue.main, str(cluster), "-af", "JobStatus").out == "2\n", what="the job running")
    wait_until(lambda: os.path.exists(tmp_path / "talk.out") and
               (tmp_path / "talk.out").read_text() == "first\nsecond\n", what="the job's output")
    assert run(logs.tail_main, f"{cluster}.0").out == "first\nsecond\n"
    assert run(logs.tail_main, "-maxbytes", "7", f"{cluster}.0").out == "second\n"
    assert run(logs.tail_main, f"{cluster}.7").err == f"Job {cluster}.7 not found\n"


def test_watch_q_table_progress_and_exit(submitted):
    cluster, log = submitted("executable = /bin/sleep\narguments = 600\nhold = true", 3, "-batch-name", "night")
    # jobs submitted on hold have only their submit events in the log: idle to condor_watch_q
    ran = run(watch_q.main, "-batches", "night", "-exit", "all,idle,7", "-no-updated-at")
    assert ran.status == 7
    lines = ran.out.splitlines()
    assert re.fullmatch(r"BATCH +IDLE +RUN +DONE +TOTAL +JOB_IDS", lines[0])
    assert re.match(rf"night +3  +- +- +3  +{cluster}\.0 \.\.\. {cluster}\.2 +\[-+\]$", lines[1])
    assert lines[3].startswith("Total Progress: [---")
    assert lines[5] == "Total: 3 jobs; 3 idle"
    assert lines[-1].startswith('Exiting with code 7 because of condition "all idle" at ')
    files = run(watch_q.main, "-files", log, "-exit", "any,active", "-no-table", "-no-progress",
                "-summary-type", "percentages")
    assert files.out.startswith("Total: 3 jobs; 0% completed, 0% removed, 100% idle, 0% running, 0% held")
    assert run(watch_q.main, "-exit", "most,done").status == 1
    assert run(watch_q.main, "-users", "nobody-here").err == "WARNING: No jobs found, exiting...\n"


def test_off_on_restart_a_daemon(pool):
    os.environ["CONDOR_CONFIG"] = str(pool.config_file)
    from jobledger.daemons import ipc

    def schedd_running(pid=None):
        info = ipc.call(ipc.sinful(str(pool.local_dir / "run" / "master.sock")), "status", timeout=5)["schedd"]
        return info["running"] and info["pid"] != pid and info["pid"]
    before = schedd_running()
    assert run(daemon.restart_main, "-schedd").out == 'Sent "Restart" command for "schedd" to local master\n'
    wait_until(lambda: schedd_running(before), what="a new schedd")
    assert run(daemon.off_main, "-schedd").out == 'Sent "Kill-Daemon" command for "schedd" to local master\n'
    wait_until(lambda: not schedd_running(), what="the schedd stopped")
    assert run(daemon.on_main).out == 'Sent "Spawn-All-Daemons" command to local master\n'
    wait_until(schedd_running, what="the schedd again")
    wait_until(lambda: run(queue.main, "-totals").status == 0, what="the schedd answering")
    assert run(daemon.off_main, "-bogus").status == 1


def test_off_stops_the_whole_pool(fresh_pool):
    os.environ["CONDOR_CONFIG"] = str(fresh_pool.config_file)
    assert run(daemon.off_main).out == 'Sent "Kill-All-Daemons" command to local master\n'
    from tests.pool.conftest import pool_processes
    wait_until(lambda: not pool_processes(fresh_pool.local_dir), what="the pool to stop")
    assert run(queue.main).status == 1
