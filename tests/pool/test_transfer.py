"""File transfer against a real pool: sandboxes, inputs, outputs, remaps, holds.

Every job here has its Iwd in a directory of its own (not the test's cwd)
and runs in its scratch directory; what it sees of Iwd comes through
transfer only (``test_nothing_is_read_from_iwd_but_through_transfer``).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import jobledger as htcondor
from tests.pool.conftest import wait_until
from jobledger.tracking.jobeventlog import JobEventLog

SCRIPT_HEAD = "#!/bin/sh\nset -e\n"


def write(path: Path, text: str, mode: int = 0o644) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)
    return path


def submit(pool, iwd: Path, script: str, mode: int = 0o644, **commands) -> int:
    """One sandboxed job running ``script`` (a file in iwd, mode 0644: the
    transfer must make it executable)."""
    write(iwd / "job.sh", SCRIPT_HEAD + script, mode)
    description = {"executable": "job.sh", "initialdir": str(iwd), "should_transfer_files": "YES",
                   "log": str(iwd / "job.log"), "output": "out.txt", "error": "err.txt"}
    description.update(commands)
    return pool.schedd.submit(htcondor.Submit(description)).cluster()


def finished(pool, cluster: int, timeout: float = 60):
    """The job's ad once it completed (history) or is held (queue)."""
    def done():
        held = pool.schedd.query(f"ClusterId == {cluster} && JobStatus == 5")
        if held:
            return held[0]
        gone = pool.schedd.history(f"ClusterId == {cluster}")
        return gone[0] if gone else None
    return wait_until(done, timeout, what=f"job {cluster}.0 to finish")


def events_of(iwd: Path) -> list:
    return list(JobEventLog(str(iwd / "job.log")).events(0))


def wait_event(iwd: Path, kind: int, transfer_type: int | None = None, timeout: float = 30):
    def found():
        return any(int(e.type) == kind and (transfer_type is None or e.get("Type") == transfer_type)
                   for e in events_of(iwd))
    wait_until(found, timeout, what=f"event {kind} in {iwd}/job.log")


def test_nothing_is_read_from_iwd_but_through_transfer(pool, tmp_path):
    """While the job runs, its Iwd is moved away: it still reads its inputs
    (from the sandbox), cannot reach Iwd by path, and its outputs come back."""
    iwd = tmp_path / "submitdir"
    write(iwd / "in.txt", "input data\n")
    write(iwd / "secret.txt", "not transferred\n")
    script = ("while [ ! -e go ]; do sleep 0.05; done\n"
              "pwd > where.txt; echo \"$_CONDOR_SCRATCH_DIR\" >> where.txt\n"
              "names=$(ls -A | sort); echo \"$names\" > listing.txt\n"
              "cat in.txt > copy.txt\n"
              "if cat \"$_CONDOR_JOB_IWD/secret.txt\" 2>/dev/null; then echo LEAK > leak.txt; fi\n"
              "[ -x job.sh ] && stat -c %a job.sh > mode.txt\n"
              "echo to stdout; echo to stderr >&2\n"
              "touch done\n"
              "while [ ! -e go2 ]; do sleep 0.05; done\n"
              "rm go go2 done\n")
    cluster = submit(pool, iwd, script, transfer_input_files="in.txt")
    wait_event(iwd, 40, 3)  # inputs are in the sandbox
    scratch = Path(pool.schedd.query(f"ClusterId == {cluster}", ["ScratchDir"])[0]["ScratchDir"])
    away = tmp_path / "moved-away"
    iwd.rename(away)
    (scratch / "go").touch()
    wait_until(lambda: (scratch / "done").exists(), 30, what="the job's work")
    away.rename(iwd)
    (scratch / "go2").touch()
    ad = finished(pool, cluster)
    assert ad["JobStatus"] == 4, ad.get("HoldReason")
    where = (iwd / "where.txt").read_text().split()
    assert where[0] == where[1] == str(scratch) and where[0] != str(iwd)
    assert (iwd / "listing.txt").read_text().split() == [
        "_condor_stderr", "_condor_stdout", "go", "in.txt", "job.sh", "where.txt"]
    assert (iwd / "copy.txt").read_text() == "input data\n"
    assert not (iwd / "leak.txt").exists()
    assert (iwd / "mode.txt").read_text().strip() == "755"
    assert (iwd / "out.txt").read_text() == "to stdout\n"
    assert (iwd / "err.txt").read_text() == "to stderr\n"
    wait_until(lambda: not scratch.exists(), 10, what="the sandbox to be removed")
    assert ad["TransferInputSizeMB"] == 1 and ad["DiskUsage"] >= 1
    wait_event(iwd, 5)
    kinds = [(int(e.type), e.get("Type")) for e in events_of(iwd)]
    assert {(40, 2), (40, 3), (40, 5), (40, 6)} <= set(kinds)   # their order: test_deviations.py
    started = [e for e in events_of(iwd) if int(e.type) == 40 and e["Type"] == 5][0]
    assert started["Host"].startswith("<") and started["QueueingDelay"] == 0


def test_input_files_directories_urls_and_stdin(pool, tmp_path):
    iwd = tmp_path / "iwd"
    elsewhere = tmp_path / "elsewhere"
    write(iwd / "a.txt", "a\n")
    write(iwd / "d1" / "x.txt", "x\n")
    write(iwd / "d2" / "y.txt", "y\n")
    write(iwd / "sub" / "b.txt", "b\n")
    write(iwd / "stdin.txt", "from stdin\n")
    write(elsewhere / "u.txt", "u\n")
    script = ("tree=$(find . -path ./_condor_std\\* -prune -o -print | sort); echo \"$tree\" > tree.txt\n"
              "cat > stdin-copy.txt\n"
              "echo changed >> a.txt\n"
              "mkdir newdir; echo n > newdir/n.txt\n")
    cluster = submit(pool, iwd, script, input="stdin.txt",
                     transfer_input_files=f"a.txt, d1, d2/, sub/b.txt, file://{elsewhere}/u.txt")
    ad = finished(pool, cluster)
    assert ad["JobStatus"] == 4, ad.get("HoldReason")
    assert (iwd / "tree.txt").read_text().split() == [
        ".", "./a.txt", "./b.txt", "./d1", "./d1/x.txt", "./job.sh", "./stdin.txt", "./u.txt", "./y.txt"]
    assert (iwd / "stdin-copy.txt").read_text() == "from stdin\n"
    # default output: new or changed top-level files; unchanged inputs and new directories stay
    assert (iwd / "a.txt").read_text() == "a\nchanged\n"
    assert not (iwd / "newdir").exists() and not (iwd / "b.txt").exists() and not (iwd / "u.txt").exists()


def test_output_files_remaps_and_directories(pool, tmp_path):
    iwd = tmp_path / "iwd"
    target = tmp_path / "results"
    target.mkdir()
    script = ("echo r1 > r1.txt; echo ignored > ignored.txt\n"
              "mkdir -p outdir/inner flat sub; echo o > outdir/inner/o.txt; echo f > flat/f.txt\n"
              "echo deep > sub/deep.txt\n")
    script += "mkdir whole; echo w > whole/w.txt\n"
    cluster = submit(pool, iwd, script, transfer_output_files="r1.txt, outdir, flat/, sub/deep.txt, whole",
                     transfer_output_remaps=f'"r1.txt = renamed.txt; deep.txt = {target}/deep.txt; '
                                            f'whole = {target}/whole-renamed"')
    ad = finished(pool, cluster)
    assert ad["JobStatus"] == 4, ad.get("HoldReason")
    assert (iwd / "renamed.txt").read_text() == "r1\n" and not (iwd / "r1.txt").exists()
    assert (iwd / "outdir" / "inner" / "o.txt").read_text() == "o\n"
    assert (iwd / "f.txt").read_text() == "f\n" and not (iwd / "flat").exists()
    assert (target / "deep.txt").read_text() == "deep\n"
    assert (target / "whole-renamed" / "w.txt").read_text() == "w\n" and not (iwd / "whole").exists()
    assert not (iwd / "ignored.txt").exists()
    leftovers = [p.name for p in iwd.rglob("*") if ".transfer-" in p.name]
    assert leftovers == []


def held(pool, cluster):
    ad = finished(pool, cluster)
    assert ad["JobStatus"] == 5
    return ad


def test_missing_input_holds_with_code_13_naming_the_file(pool, tmp_path):
    iwd = tmp_path / "iwd"
    cluster = submit(pool, iwd, "true\n", transfer_input_files="there-is-no-such-file.dat")
    ad = held(pool, cluster)
    assert ad["HoldReasonCode"] == 13 and ad["HoldReasonSubCode"] == 2
    assert f"{iwd}/there-is-no-such-file.dat" in ad["HoldReason"]
    assert ad["HoldReason"].startswith("Transfer input files failure")
    wait_event(iwd, 12)


def test_unwritable_or_missing_output_holds_with_code_12(pool, tmp_path):
    iwd = tmp_path / "iwd"
    nowhere = submit(pool, iwd, "echo x > x.txt\n",
                     transfer_output_remaps=f'"x.txt = {tmp_path}/no/such/dir/x.txt"')
    missing = submit(pool, tmp_path / "iwd2", "true\n", transfer_output_files="never-made.txt")
    ad = held(pool, nowhere)
    assert ad["HoldReasonCode"] == 12 and f"{tmp_path}/no/such/dir/x.txt" in ad["HoldReason"]
    ad = held(pool, missing)
    assert ad["HoldReasonCode"] == 12 and "never-made.txt" in ad["HoldReason"]
    assert ad["HoldReason"].startswith("Transfer output files failure")


def test_paths_and_links_that_leave_the_sandbox_are_refused(pool, tmp_path):
    victim = write(tmp_path / "victim.txt", "keep me\n")
    cases = {
        "dotdot": submit(pool, tmp_path / "a", "true\n", transfer_output_files="../x.txt"),
        "absolute": submit(pool, tmp_path / "b", "true\n", transfer_output_files="/etc/hostname"),
        "remap": submit(pool, tmp_path / "c", "echo y > y\n", transfer_output_remaps='"../y = y2"'),
        "listed link": submit(pool, tmp_path / "d", "ln -s /etc/hostname leak\n",
                              transfer_output_files="leak"),
        "new link": submit(pool, tmp_path / "e", "ln -s /etc/hostname leak\n"),
    }
    reasons = {name: held(pool, cluster) for name, cluster in cases.items()}
    for name, ad in reasons.items():
        assert ad["HoldReasonCode"] == 12, (name, ad["HoldReason"])
    assert "leaves the job's scratch directory" in reasons["dotdot"]["HoldReason"]
    assert "absolute path" in reasons["absolute"]["HoldReason"]
    assert "outside the job's scratch directory" in reasons["listed link"]["HoldReason"]
    assert "outside the job's scratch directory" in reasons["new link"]["HoldReason"]
    assert not (tmp_path / "d" / "leak").exists()
    # a symlink planted at an output's destination is replaced, never written through
    iwd = tmp_path / "f"
    iwd.mkdir()
    os.symlink(victim, iwd / "out.txt")
    ad = finished(pool, submit(pool, iwd, "echo mine\n"))
    assert ad["JobStatus"] == 4
    assert victim.read_text() == "keep me\n"
    assert not (iwd / "out.txt").is_symlink() and (iwd / "out.txt").read_text() == "mine\n"


def test_request_disk_smaller_than_the_input_holds(pool, tmp_path):
    iwd = tmp_path / "iwd"
    write(iwd / "big.dat", "x" * 300_000)
    ad = held(pool, submit(pool, iwd, "true\n", transfer_input_files="big.dat", request_disk="100K"))
    assert (ad["HoldReasonCode"], ad["HoldReasonSubCode"]) == (34, 104)
    assert "request_disk (100 KB)" in ad["HoldReason"]


def test_if_needed_sandboxes_only_outside_the_file_system_domain(pool, tmp_path):
    no = tmp_path / "no"
    ad = finished(pool, submit(pool, no, "pwd\n", 0o755, should_transfer_files="NO"))
    assert ad["JobStatus"] == 4 and (no / "out.txt").read_text().strip() == str(no)
    shared = tmp_path / "shared"
    ad = finished(pool, submit(pool, shared, "pwd\n", 0o755, should_transfer_files="IF_NEEDED"))
    assert ad["JobStatus"] == 4 and (shared / "out.txt").read_text().strip() == str(shared)
    other = tmp_path / "other"
    ad = finished(pool, submit(pool, other, "pwd; echo oops >&2\n", should_transfer_files="IF_NEEDED",
                               error="out.txt", **{"My.FileSystemDomain": '"far.away.example"'}))
    assert ad["JobStatus"] == 4, ad.get("HoldReason")
    lines = (other / "out.txt").read_text().splitlines()
    assert "/dir_" in lines[0] and lines[1] == "oops"   # stdout and stderr in one file


def test_on_exit_or_evict_brings_files_back_to_the_next_run(pool, tmp_path):
    iwd = tmp_path / "iwd"
    script = ("if [ -e ckpt ]; then cat ckpt > resumed.txt; exit 0; fi\n"
              "echo step1 > ckpt\n"
              "while true; do sleep 0.05; done\n")
    cluster = submit(pool, iwd, script, when_to_transfer_output="ON_EXIT_OR_EVICT")
    def scratch_has_ckpt():
        ads = pool.schedd.query(f"ClusterId == {cluster} && JobStatus == 2", ["ScratchDir"])
        return ads and Path(ads[0]["ScratchDir"], "ckpt").exists()
    wait_until(scratch_has_ckpt, 30, what="the first run's checkpoint")
    pool.schedd.act(htcondor.JobAction.Vacate, f"{cluster}.0")
    ad = finished(pool, cluster)
    assert ad["JobStatus"] == 4 and (iwd / "resumed.txt").read_text() == "step1\n"
    # The schedd removes the kept files once the exit is committed: the history may show
    # the job a moment before (failed once at load 35).
    evicted = Path(pool.get_config_val("SPOOL")) / str(cluster) / "0" / "evicted"
    wait_until(lambda: not evicted.exists(), 10, what="the evicted run's files to be removed")


def test_spool_runs_the_job_from_the_spool_and_retrieve_brings_the_output(pool, tmp_path):
    iwd = tmp_path / "iwd"
    write(iwd / "job.sh", SCRIPT_HEAD + "cat data.txt; cat data.txt > result.txt; pwd > where.txt\n")
    write(iwd / "data.txt", "spooled input\n")
    sub = htcondor.Submit({"executable": "job.sh", "initialdir": str(iwd), "output": "out.txt",
                           "transfer_input_files": "data.txt", "log": str(iwd / "job.log"),
                           "transfer_output_remaps": '"result.txt = renamed.txt"'})
    not_spooled = pool.schedd.submit(htcondor.Submit({"executable": "/bin/true", "hold": "true"}))
    try:
        pool.schedd.spool(not_spooled)
    except ValueError as exc:
        assert "spool" in str(exc)
    else:
        raise AssertionError("spool() of a result submitted without spool must raise ValueError")
    pool.schedd.act(htcondor.JobAction.Remove, not_spooled.cluster())
    result = pool.schedd.submit(sub, spool=True)
    cluster = result.cluster()
    ad = pool.schedd.query(f"ClusterId == {cluster}", ["JobStatus", "HoldReasonCode", "LeaveJobInQueue"])[0]
    assert (ad["JobStatus"], ad["HoldReasonCode"]) == (5, 16)
    pool.schedd.spool(result)
    (iwd / "data.txt").write_text("changed after spooling\n")   # the job runs from the spool
    wait_until(lambda: [a["JobStatus"] for a in pool.schedd.query(f"ClusterId == {cluster}", ["JobStatus"])]
               == [4], 30, what="the spooled job to complete and stay")
    assert not (iwd / "out.txt").exists() and not (iwd / "renamed.txt").exists()
    pool.schedd.retrieve(f"ClusterId == {cluster}")
    assert (iwd / "out.txt").read_text() == "spooled input\n"
    assert (iwd / "renamed.txt").read_text() == "spooled input\n"
    assert "/dir_" in (iwd / "where.txt").read_text()
    pool.schedd.retrieve(f"ClusterId == {cluster}")   # again: the spool is kept while the job is
    assert [a["JobStatus"] for a in pool.schedd.query(f"ClusterId == {cluster}", ["JobStatus"])] == [4]
    assert pool.schedd.act(htcondor.JobAction.Remove, cluster)["TotalSuccess"] == 1
    wait_until(lambda: not pool.schedd.query(f"ClusterId == {cluster}"), 10, what="the job to leave")


def test_starter_killed_mid_transfer_requeues_and_outputs_arrive_once_and_whole(fresh_pool, tmp_path):
    """SIGKILL the starter while it copies the outputs: the job runs again, and
    every output is there once, whole, with no temporary file left."""
    iwd = tmp_path / "iwd"
    files, size = 40, 1 << 20
    script = (f"for i in $(seq 1 {files}); do\n"
              f"  head -c {size} /dev/zero > part$i.dat; echo \"end of part $i\" >> part$i.dat\n"
              "done\n")
    cluster = submit(fresh_pool, iwd, script)

    def copying():
        return iwd.is_dir() and any(".transfer-" in name for name in os.listdir(iwd))
    wait_until(copying, 60, 0.002, what="the output transfer to begin")
    starter = fresh_pool.schedd.query(f"ClusterId == {cluster}", ["StarterPid"])[0]["StarterPid"]
    os.kill(starter, signal.SIGKILL)
    ad = finished(fresh_pool, cluster, timeout=120)
    assert ad["JobStatus"] == 4
    names = sorted(os.listdir(iwd))
    assert names == sorted(["job.sh", "job.log", "out.txt", "err.txt", *(f"part{i}.dat" for i in range(1, files + 1))])
    for i in range(1, files + 1):
        data = (iwd / f"part{i}.dat").read_bytes()
        assert len(data) == size + len(f"end of part {i}\n") and data.endswith(f"end of part {i}\n".encode())
    kinds = [int(e.type) for e in events_of(iwd)]
    assert kinds.count(5) == 1 and kinds.count(1) == 2 and 7 in kinds   # ran twice, terminated once
    execute = Path(fresh_pool.get_config_val("EXECUTE"))
    wait_until(lambda: not [p for p in execute.iterdir() if p.name.startswith("dir_")], 10,
               what="both sandboxes to be removed")


def test_a_symlink_another_user_planted_at_the_temporary_name_is_not_written_through(pool, tmp_path):
    victim = write(tmp_path / "victim.txt", "keep me\n")
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)                       # a directory anyone may write, like /tmp
    cluster = submit(pool, shared, "echo mine\n", hold="true")
    planted = shared / f".out.txt.transfer-{cluster}.0"
    os.symlink(victim, planted)
    os.lchown(planted, 65534, 65534)           # nobody's
    pool.schedd.act(htcondor.JobAction.Release, cluster)
    ad = held(pool, cluster)
    assert ad["HoldReasonCode"] == 12 and "not followed" in ad["HoldReason"]
    assert victim.read_text() == "keep me\n"
