"""The pure transfer plan: inputs, outputs, remaps and the names that must stay in the sandbox."""

from __future__ import annotations

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobledger.eventcore.errors import TransferError
from jobledger.eventcore.transfer import (Output, Source, changed_files, evicted_plan, input_plan, output_plan,
                                parse_remaps, sandbox_name, size_mb, wants_sandbox)

JOB = {"Iwd": "/home/u/run", "Cmd": "/home/u/run/job.sh", "ShouldTransferFiles": "YES"}


def test_who_gets_a_sandbox():
    assert wants_sandbox(JOB, "here.example")
    assert not wants_sandbox({**JOB, "ShouldTransferFiles": "NO"}, "here.example")
    if_needed = {**JOB, "ShouldTransferFiles": "IF_NEEDED"}
    assert not wants_sandbox(if_needed, "here.example")
    assert not wants_sandbox({**if_needed, "FileSystemDomain": "here.example"}, "here.example")
    assert wants_sandbox({**if_needed, "FileSystemDomain": "far.example"}, "here.example")


def test_inputs_executable_stdin_dirs_and_urls():
    plan = input_plan({**JOB, "In": "data/in.txt",
                       "TransferInput": "a.txt, d, e/, /abs/f.txt, file:///srv/u.txt, sub/b.txt"})
    assert plan.command == "./job.sh" and plan.stdin == "in.txt"
    assert plan.sources == (
        Source("/home/u/run/job.sh", "job.sh", executable=True),
        Source("/home/u/run/data/in.txt", "in.txt"),
        Source("/home/u/run/a.txt", "a.txt"), Source("/home/u/run/d", "d"),
        Source("/home/u/run/e", "", contents=True), Source("/abs/f.txt", "f.txt"),
        Source("/srv/u.txt", "u.txt"), Source("/home/u/run/sub/b.txt", "b.txt"))
    kept = input_plan({**JOB, "TransferExecutable": False, "In": "x", "TransferIn": False})
    assert kept.command == "/home/u/run/job.sh" and kept.stdin == "x" and kept.sources == ()


def test_inputs_that_cannot_be_planned():
    with pytest.raises(TransferError) as err:
        input_plan({**JOB, "TransferInput": "http://example.org/x"})
    assert err.value.code == 13 and "'http'" in err.value.message
    with pytest.raises(TransferError):
        input_plan({**JOB, "TransferInput": ".."})


def test_remaps():
    assert parse_remaps('" a = b ; c=dir/d; "') == {"a": "b", "c": "dir/d"}
    assert parse_remaps(r"x\;y = z\=w") == {"x;y": "z=w"}
    assert parse_remaps(None) == {}
    with pytest.raises(TransferError) as err:
        parse_remaps("a b")
    assert err.value.code == 12


def test_outputs_default_explicit_and_streams():
    job = {**JOB, "Out": "out.txt", "Err": "/logs/err.txt", "TransferOutputRemaps": "n.txt = r/n2.txt"}
    assert output_plan(job, ["n.txt", "outcome.json", "_condor_stdout"]) == [
        Output("_condor_stdout", "/home/u/run/out.txt"), Output("_condor_stderr", "/logs/err.txt"),
        Output("n.txt", "/home/u/run/r/n2.txt")]
    both = {**JOB, "Out": "log.txt", "Err": "log.txt"}
    assert output_plan(both, []) == [Output("_condor_stdout", "/home/u/run/log.txt")]
    explicit = {**JOB, "TransferOutput": "a/b.txt, d/, e", "TransferOutputRemaps": "b.txt=/x/y"}
    assert output_plan(explicit, ["ignored"]) == [
        Output("a/b.txt", "/x/y"), Output("d", "/home/u/run", contents=True), Output("e", "/home/u/run/e")]
    assert evicted_plan(explicit, [], "/spool/1/0/evicted") == [
        Output("a/b.txt", "/spool/1/0/evicted/a/b.txt"), Output("d", "/spool/1/0/evicted/d"),
        Output("e", "/spool/1/0/evicted/e")]


@pytest.mark.parametrize("name", ["/etc/passwd", "..", "../x", "a/../../x"])
def test_names_that_leave_the_sandbox_are_refused(name):
    with pytest.raises(TransferError) as err:
        output_plan({**JOB, "TransferOutput": name}, [])
    assert err.value.code == 12
    with pytest.raises(TransferError):
        output_plan({**JOB, "TransferOutputRemaps": f"{name} = x"}, [])


@given(st.lists(st.sampled_from(["a", "b", "..", ".", "c", "/"]), min_size=1, max_size=6))
def test_a_sandbox_name_never_escapes(parts):
    name = "/".join(parts)
    try:
        norm = sandbox_name(name, "entry")
    except TransferError:
        return
    assert not norm.startswith("/") and norm != ".." and not norm.startswith("../")


def test_changed_files_and_sizes():
    assert changed_files({"a": (1, 2), "b": (1, 1)}, {"a": (1, 2), "b": (2, 1), "c": (1, 1)}) == ["b", "c"]
    assert (size_mb(0), size_mb(1), size_mb(1 << 20), size_mb((1 << 20) + 1)) == (0, 1, 1, 2)


def test_spool_sweep_keeps_only_jobs_in_the_queue(tmp_path):
    from jobledger.daemons.spool import job_spool, sweep
    from jobledger.eventcore.ids import JobId
    for job in (JobId(1, 0), JobId(1, 1), JobId(2, 0)):
        (job_spool(tmp_path, job) / "out").mkdir(parents=True)
    (tmp_path / "history").write_text("not a job\n")
    assert sweep(tmp_path, lambda job: job == JobId(1, 1)) == 2
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.iterdir()) == ["1", "history"]
    assert [p.name for p in (tmp_path / "1").iterdir()] == ["1"]


def test_send_output_refuses_a_nested_link_out_of_the_sandbox(tmp_path):
    from jobledger.daemons.transfer import send_output
    from jobledger.eventcore.transfer import Output
    sandbox, iwd = tmp_path / "sandbox", tmp_path / "iwd"
    (sandbox / "d" / "e").mkdir(parents=True)
    iwd.mkdir()
    (sandbox / "d" / "e" / "ok.txt").write_text("ok")
    (sandbox / "d" / "inner").symlink_to("e")                  # stays inside: copied
    written = send_output({"Iwd": str(iwd)}, [Output("d", str(iwd / "d"))], str(sandbox), "1.0")
    assert sorted(os.path.relpath(p, iwd) for p in written) == ["d/e/ok.txt", "d/inner/ok.txt"]
    (sandbox / "d" / "e" / "leak").symlink_to("/etc")           # leads out: refused
    with pytest.raises(TransferError) as err:
        send_output({"Iwd": str(iwd)}, [Output("d", str(iwd / "d2"))], str(sandbox), "1.0")
    assert err.value.code == 12 and "d/e/leak" in err.value.message
