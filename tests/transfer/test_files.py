"""What file transfer reads and writes, with real files: only regular files and
directories (links to them followed), each as long as it was when opened, within
HTCondor's limits, with its permission bits, and stoppable between chunks."""

from __future__ import annotations

import errno
import os
import stat

import pytest

from jobledger.daemons.transfer import COPY_CHUNK, Stopped, send_output, stage_input
from jobledger.eventcore.errors import TransferError
from jobledger.eventcore.transfer import InputPlan, Output, Source


def plan(*sources: Source, command: str = "") -> InputPlan:
    return InputPlan(tuple(sources), command, None)


@pytest.fixture
def sandbox(tmp_path):
    path = tmp_path / "sandbox"
    path.mkdir(mode=0o700)
    return path


def sandbox_bytes(sandbox) -> int:
    return sum(os.lstat(os.path.join(root, name)).st_size
               for root, _, files in os.walk(sandbox) for name in files)


@pytest.mark.parametrize("kind", ["character device", "FIFO", "link to a device"])
def test_a_device_or_fifo_input_is_refused_with_code_13_naming_it(tmp_path, sandbox, kind):
    if kind == "FIFO":
        path = tmp_path / "pipe"
        os.mkfifo(path)           # no writer: reading it would wait forever
    elif kind == "link to a device":
        path = tmp_path / "zero-link"
        os.symlink("/dev/zero", path)
    else:
        path = "/dev/zero"        # endless
    with pytest.raises(TransferError) as failed:
        stage_input(plan(Source(str(path), "input")), str(sandbox), request_disk_kb=10**9)
    assert (failed.value.code, failed.value.subcode) == (13, errno.EINVAL)
    assert str(path) in failed.value.message
    assert "only regular files, directories and symbolic links to them" in failed.value.message
    assert sandbox_bytes(sandbox) == 0


def test_a_device_or_fifo_inside_an_input_directory_is_refused_naming_it(tmp_path, sandbox):
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "a.txt").write_text("a")
    os.mkfifo(tree / "sub" / "pipe")
    with pytest.raises(TransferError) as failed:
        stage_input(plan(Source(str(tree), "tree")), str(sandbox))
    assert failed.value.code == 13 and f"{tree}/sub/pipe" in failed.value.message
    os.unlink(tree / "sub" / "pipe")
    os.symlink("/dev/zero", tree / "sub" / "zero")
    with pytest.raises(TransferError) as failed:
        stage_input(plan(Source(str(tree), "", contents=True)), str(sandbox))
    assert failed.value.code == 13 and f"{tree}/sub/zero" in failed.value.message
    assert "character device" in failed.value.message


def test_links_to_files_and_directories_are_followed_a_loop_is_refused(tmp_path, sandbox):
    tree = tmp_path / "tree"
    tree.mkdir()
    (tmp_path / "target.txt").write_text("through a link")
    os.symlink(tmp_path / "target.txt", tree / "link.txt")
    stage_input(plan(Source(str(tree), "tree")), str(sandbox))
    copied = sandbox / "tree" / "link.txt"
    assert not copied.is_symlink() and copied.read_text() == "through a link"
    os.symlink(tree, tree / "again")
    with pytest.raises(TransferError) as failed:
        stage_input(plan(Source(str(tree), "tree2")), str(sandbox))
    assert (failed.value.code, failed.value.subcode) == (13, errno.ELOOP)
    assert f"{tree}/again" in failed.value.message


def test_max_transfer_input_mb_holds_with_code_32_before_the_file_is_copied(tmp_path, sandbox):
    small, big = tmp_path / "small.dat", tmp_path / "big.dat"
    small.write_bytes(b"s" * (600 << 10))
    big.write_bytes(b"b" * (600 << 10))
    stage_input(plan(Source(str(small), "small.dat")), str(sandbox), max_mb=1)
    with pytest.raises(TransferError) as failed:
        stage_input(plan(Source(str(small), "small.dat"), Source(str(big), "big.dat")), str(sandbox),
                    max_mb=1)
    assert (failed.value.code, failed.value.subcode) == (32, 0)
    assert failed.value.message == (f"sending file {big}: max total upload bytes exceeded "
                                    "(max=1 MB, this file=0 MB)")
    assert not (sandbox / "big.dat").exists()
    # -1 (HTCondor's "no limit") and 0 (nothing may be sent) are both honoured
    stage_input(plan(Source(str(big), "big.dat")), str(sandbox), max_mb=-1)
    with pytest.raises(TransferError):
        stage_input(plan(Source(str(small), "x")), str(sandbox), max_mb=0)


def test_a_file_is_copied_as_long_as_it_was_when_opened(tmp_path, sandbox):
    """An input that grows while it is copied (as /dev/zero would, for ever) is copied
    as it was when opened: the copy is bounded by the size it had then."""
    growing = tmp_path / "growing.log"
    growing.write_bytes(b"x" * (COPY_CHUNK + 10))

    looks = []

    def grow():       # asked before the file is opened, then between its chunks
        looks.append(1)
        if len(looks) > 1:
            with open(growing, "ab") as handle:
                handle.write(b"y" * COPY_CHUNK)
        return False
    stage_input(plan(Source(str(growing), "growing.log")), str(sandbox), should_stop=grow)
    assert (sandbox / "growing.log").stat().st_size == COPY_CHUNK + 10
    assert len(looks) >= 3 and growing.stat().st_size >= 3 * COPY_CHUNK


def test_a_stop_ends_the_copy_between_chunks(tmp_path, sandbox):
    big = tmp_path / "big.dat"
    with open(big, "wb") as handle:
        handle.truncate(8 * COPY_CHUNK)
    looks = []

    def stop():
        looks.append(1)
        return len(looks) > 3
    with pytest.raises(Stopped):
        stage_input(plan(Source(str(big), "big.dat")), str(sandbox), should_stop=stop)
    assert sandbox_bytes(sandbox) <= 2 * COPY_CHUNK


def test_permission_bits_travel_and_the_executable_stays_executable(tmp_path, sandbox):
    """A script that is both the executable and in transfer_input_files (as the
    Snakemake plugin's job wrapper) stays 0755; other files keep their bits."""
    iwd = tmp_path / "iwd"
    iwd.mkdir()
    modes = {"wrapper.sh": 0o755, "data.txt": 0o640, "frozen.txt": 0o444, "tool": 0o750}
    for name, mode in modes.items():
        (iwd / name).write_text(name)
        os.chmod(iwd / name, mode)
    os.chmod(iwd / "wrapper.sh", 0o644)     # as submitted without x: the starter adds it
    sources = [Source(str(iwd / "wrapper.sh"), "wrapper.sh", executable=True)]
    sources += [Source(str(iwd / name), name) for name in modes]      # the wrapper again, 0644
    stage_input(plan(*sources), str(sandbox))
    got = {name: stat.S_IMODE(os.stat(sandbox / name).st_mode) for name in modes}
    assert got == {**modes, "wrapper.sh": 0o755}
    assert (sandbox / "wrapper.sh").read_text() == "wrapper.sh"


def test_outputs_keep_their_bits_and_are_bounded_by_max_transfer_output_mb(tmp_path, sandbox):
    out = tmp_path / "out"
    out.mkdir()
    (sandbox / "run.sh").write_text("#!/bin/sh\n")
    os.chmod(sandbox / "run.sh", 0o750)
    (sandbox / "secret.txt").write_text("mine")
    os.chmod(sandbox / "secret.txt", 0o600)
    (sandbox / "big.dat").write_bytes(b"z" * (3 << 20))
    items = [Output("run.sh", str(out / "run.sh")), Output("secret.txt", str(out / "secret.txt"))]
    send_output({"Iwd": str(out)}, items, str(sandbox), "1.0", max_mb=1)
    assert stat.S_IMODE(os.stat(out / "run.sh").st_mode) == 0o750
    assert stat.S_IMODE(os.stat(out / "secret.txt").st_mode) == 0o600
    with pytest.raises(TransferError) as failed:
        send_output({"Iwd": str(out)}, items + [Output("big.dat", str(out / "big.dat"))], str(sandbox),
                    "1.0", max_mb=1)
    assert (failed.value.code, failed.value.subcode) == (33, 0)
    assert failed.value.message == (f"sending file {sandbox}/big.dat: max total download bytes exceeded "
                                    "(max=1 MB, this file=3 MB)")
    assert not (out / "big.dat").exists()


def test_a_fifo_the_job_made_is_not_waited_on_as_an_output(tmp_path, sandbox):
    os.mkfifo(sandbox / "result")
    with pytest.raises(TransferError) as failed:
        send_output({"Iwd": str(tmp_path)}, [Output("result", str(tmp_path / "result"))], str(sandbox), "1.0")
    assert failed.value.code == 12 and "FIFO" in failed.value.message
    assert not (tmp_path / "result").exists()


def test_the_size_counted_before_a_copy_is_what_the_copy_reads(tmp_path, sandbox):
    """One measure of an input tree, links followed as the copy follows them: the
    request_disk check before the copy, submit's TransferInputSizeMB and the bytes
    the copy writes agree (a link counts its target's bytes, not the link's own)."""
    from jobledger.daemons.client.submit import OsSubmitEnvironment
    from jobledger.daemons.transfer import tree_size
    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    (outside / "big").write_bytes(b"b" * 50_000)
    (outside / "deep" / "c").write_bytes(b"c" * 7_000)
    data = tmp_path / "data"
    data.mkdir()
    (data / "a").write_bytes(b"a" * 1_000)
    os.symlink(outside / "big", data / "to-big")
    os.symlink(outside / "deep", data / "to-deep")
    os.symlink(data, data / "loop")          # met again through a link: counted once
    (data / "dangling").symlink_to(tmp_path / "nothing")
    assert tree_size(str(data)) == 1_000 + 50_000 + 7_000
    assert OsSubmitEnvironment(cwd=str(tmp_path)).input_size("data") == 58_000
    assert OsSubmitEnvironment(cwd=str(tmp_path)).input_size("nothing") == 0
    os.unlink(data / "loop")                 # (the copy refuses a loop: see the ELOOP test)
    os.unlink(data / "dangling")
    copied = stage_input(plan(Source(str(data), "data")), str(sandbox), request_disk_kb=10**9)
    assert copied == sandbox_bytes(sandbox) == tree_size(str(data))
    with pytest.raises(TransferError, match="do not fit in the job's request_disk"):
        stage_input(plan(Source(str(data), "data2")), str(sandbox), request_disk_kb=56)
