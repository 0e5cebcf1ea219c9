"""classad_eval: assignments build the context ad, expressions print its value (and
the context, when it changed, unless -quiet), -my-file/-target-file give MY and TARGET."""

from __future__ import annotations

import pytest

from jobledger.condor_cli.classad_eval import main
from tests.condor_cli.conftest import run


def _ran(main, *argv):
    ran = run(main, *argv)
    return ran.status, ran.out, ran.err


@pytest.fixture
def files(tmp_path):
    my, target = tmp_path / "my.ad", tmp_path / "target.ad"
    my.write_text("[ x = 7; z = 10; ]\n")
    target.write_text("x = 8; y = 9\n")               # assignments alone make an ad too
    return {"my": str(my), "target": str(target)}


@pytest.mark.parametrize("argv, out", [
    (["1 + 1"], "[  ]\n2\n"),
    (["x = y", "x", "y = 7", "x"], "[ x = y ]\nundefined\n[ x = y; y = 7 ]\n7\n"),
    (["[ x = y; y = 7; ]", "x", "x * 2"], "[ x = y; y = 7 ]\n7\n14\n"),
    (["x = y", "x", "-quiet", "y = 7", "x"], "[ x = y ]\nundefined\n7\n"),
    (["x = 1; y = x + 1", "y"], "[ x = 1; y = x + 1 ]\n2\n"),
])
def test_context_and_values(argv, out):
    assert _ran(main, *argv) == (0, out, "")


@pytest.mark.parametrize("argv, out", [
    (["-quiet", "-my-file", "{my}", "MY.x"], "7\n"),
    (["-quiet", "-my-file", "{my}", "TARGET.x"], "undefined\n"),
    (["-quiet", "-target-file", "{target}", "x"], "8\n"),
    (["-quiet", "-target-file", "{target}", "MY.x"], "undefined\n"),
    (["-quiet", "-file", "{my}", "-target-file", "{target}", "x"], "7\n"),
    (["-quiet", "-file", "{my}", "-target-file", "{target}", "TARGET.x + y + z"], "27\n"),
])
def test_my_and_target_files(files, argv, out):
    assert _ran(main, *[a.format(**files) for a in argv]) == (0, out, "")


def test_condor_q_long_new_output_reads_as_an_ad(tmp_path):
    (tmp_path / "q.ad").write_text('{\n[\n  Owner = "me";\n  ClusterId = 4\n]\n}\n')
    assert _ran(main, "-quiet", "-file", str(tmp_path / "q.ad"), "ClusterId + 1") == (0, "5\n", "")


def test_bad_input_is_named_without_a_traceback(tmp_path):
    ran = run(main, "1 +")
    assert ran.status == 1 and "Unable to turn '1 +' into a ClassAd or an expression." in ran.err
    ran = run(main, "-file", str(tmp_path / "missing.ad"), "x")
    assert ran.status == 1 and "missing.ad" in ran.err and "Traceback" not in ran.err
    (tmp_path / "bad.ad").write_bytes(b"[ x = \xff\xfe ]")
    ran = run(main, "-file", str(tmp_path / "bad.ad"), "x")
    assert ran.status == 1 and "bad.ad" in ran.err
    ran = run(main, "-file")
    assert ran.status != 0 and "requires" in ran.err
    ran = run(main, "-help")
    assert ran.status == 255 and ran.out.startswith("Usage: classad_eval")
