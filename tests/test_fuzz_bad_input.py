"""Fuzz every CLI command's arguments, and submit, ClassAd and user-log text:
only our errors come out, each example within a CPU-time bound, and the
process's peak memory stays bounded (issue 11, "Must show").

No pool runs: commands that talk to one get a LOCAL_DIR with none in it, so
they fail with our one-line error; ``pool start`` gets an impossible
LOCAL_DIR; modes that follow forever (``watch`` without ``--json``, ``log
--follow``) are not fuzzed (``watch``'s arguments: tests/test_cli_errors.py).  Examples are few and bounded, to keep the
suite fast.
"""

from __future__ import annotations

import os
import resource
import time

import click
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobledger.eventcore.errors import JobledgerError
from jobledger.cli import main

CPU_BOUND = 5.0          # seconds of CPU for one example (the regex bound is 0.5 s a match)
MEMORY_BOUND_MB = 300    # growth of the peak RSS during one test
FOLLOWERS = {("log", "--follow"), ("log", "-f"), ("watch", "--exit"), ("watch", "--timeout")}

NASTY = st.sampled_from([
    "", "-1", "0", "1", "1.0", "nan", "inf", "-inf", "1e300", "99999999999999999999999",
    "1.99999999999999999999", "((((", "true", "false", "x == 1", "regexp(\"(a+)+$\", \"aaaa!\")",
    "(" * 300, "a" * 5000, "é", "\udcff", "1.2.3", "/dev/zero", "/proc/1/nope", "-", "--",
    "ClusterId == 1 && ProcId == 0", "Owner", "2026-13-45", "1970-01-01T00:00:00",
])
TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=40)


def commands(group: click.Group, prefix=()):
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            yield from commands(command, prefix + (name,))
        else:
            yield prefix + (name,), command


COMMANDS = [(p, c) for p, c in commands(main) if p != ("watch",)]   # watch follows: test_cli_errors


def option_names(command: click.Command, path) -> list[str]:
    names = []
    for param in command.params:
        if isinstance(param, click.Option):
            names += [n for n in param.opts + param.secondary_opts
                      if (path[-1], n) not in FOLLOWERS and n != "--local-dir"]
    return names or ["--help"]


def cpu_bounded(fn):
    began = time.process_time()
    out = fn()
    used = time.process_time() - began
    assert used < CPU_BOUND, f"{used:.1f} s of CPU"
    return out


@pytest.fixture(autouse=True)
def memory_bound():
    """Per test, not per module: under pytest-xdist other modules' tests run in the same
    process between this module's, and their peaks are not the fuzz's."""
    start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    yield
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - start) / 1024
    assert grown < MEMORY_BOUND_MB, f"peak RSS grew {grown:.0f} MB"


@pytest.mark.parametrize("path, command", COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_cli_arguments_get_our_errors(tmp_path_factory, path, command):
    where = tmp_path_factory.mktemp("cli")
    (where / "file").write_text("")
    takes_dir = any(isinstance(p, click.Option) and "--local-dir" in p.opts for p in command.params)
    local = str(where / "file" / "pool") if path == ("pool", "start") else str(where / "nopool")
    suffix = ["--local-dir", local] if takes_dir else []

    @settings(max_examples=12, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
    @given(st.lists(st.one_of(st.sampled_from(option_names(command, path)), NASTY, TEXT), max_size=6))
    def run(args):
        result = cpu_bounded(lambda: CliRunner().invoke(main, [*path, *args, *suffix]))
        assert result.exception is None or isinstance(result.exception, SystemExit), \
            (args, repr(result.exception))
        assert result.exit_code in (0, 1, 2), (args, result.output)
        errors = [line for line in result.output.splitlines() if line.startswith("Error: ")]
        longest = 400 + sum(len(a) for a in args)   # an error may quote the argument it names
        assert len(errors) <= 1 and all(len(line) < longest for line in errors), (args, result.output)
    run()


SUBMIT_PIECES = st.sampled_from([
    "executable = /bin/true\n", "arguments = $(Foo\n", "x = $(x)$(x)$(x)\n", "queue\n", "queue 1e6\n",
    "queue in in in (\n", "queue x from (\na\nb\n)\n", "if true\n", "endif\n", "elif x\n", "else\n",
    "include : /dev/zero\n", "include : nothing.sub\n", "+JobStatus = 4\n", "MY.owner = \"x\"\n",
    "log = /proc/1/nope/x.log\n", "request_memory = 1e300\n", "$CHOICE(9, a)\n", "a @= END\n",
    "@END\n", "\\\n", "queue 3 x matching *\n", "arguments = \"a\x00b\"\n",
])


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(SUBMIT_PIECES, TEXT.map(lambda t: t + "\n"), st.binary(max_size=12)), max_size=10))
def test_submit_bytes_get_our_errors(pieces):
    from jobledger.eventcore.submit.env import StaticEnvironment
    from jobledger.eventcore.submit.description import Submit
    from jobledger.eventcore.submit.text import decode_bytes
    data = b"".join(p if isinstance(p, bytes) else p.encode("utf-8", "surrogatepass") for p in pieces)

    def build():
        try:
            text = decode_bytes(data, "fuzz.sub")
            Submit.using(StaticEnvironment(files={"nothing.sub": "y = 1\n"}), text).cluster(max_jobs=500)
        except JobledgerError:
            pass
    cpu_bounded(build)


PATTERNS = st.one_of(
    st.sampled_from(["(a+)+$", "^(a|a)*$", "(x+x+)+y", "(.*a){20}", "((a*)*)*b", "(a|aa)+$",
                     "[", "(", "\\", "a{1,99999}", "(?<n>a)\\1", "\\p{L}+", "[[:alpha:]]+"]),
    st.text(st.sampled_from("a()*+?|[]{}.\\^$x1,"), max_size=12),
)


@settings(max_examples=12, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(PATTERNS, st.text(st.sampled_from("ax!b"), max_size=30),
       st.sampled_from(["regexp", "regexps", "replaceAll", "stringList_regexpMember"]))
def test_classad_regex_is_bounded_and_gets_our_errors(pattern, subject, function):
    from jobledger.eventcore.classad import ExprTree, quote
    args = {"regexps": f"{quote(pattern)}, {quote(subject)}, \"x\"",
            "replaceAll": f"{quote(pattern)}, {quote(subject)}, \"x\"",
            "stringList_regexpMember": f"{quote(pattern)}, {quote(subject)}"}.get(
        function, f"{quote(pattern)}, {quote(subject)}")

    def evaluate():
        try:
            ExprTree(f"{function}({args})").eval()
        except JobledgerError:
            pass
    cpu_bounded(evaluate)


LOG_PIECES = st.sampled_from([
    b"000 (001.000.000) 2026-11-23 10:00:00 Job submitted from host: <127.0.0.1:9618>\n...\n",
    b"000 (1000000000000000000000000000000.000.000) 2026-11-23 10:00:00 Job submitted\n...\n",
    b"005 (001.000.000) 2026-11-23 10:00:00 Job terminated.\n\t(1) Normal termination (return value 0)\n...\n",
    b"\xff\xfe", b"\x00" * 64, b"...\n", b"012 (", b"<c>\n", b"{\"MyType\": \"SubmitEvent\"}\n",
])


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(LOG_PIECES, st.binary(max_size=30)), max_size=8))
def test_user_log_bytes_get_our_errors(tmp_path, pieces):
    import warnings

    import jobledger as htcondor
    from jobledger.daemons.client.importer import read_log
    path = tmp_path / "fuzz.log"
    path.write_bytes(b"".join(pieces))

    def read():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                for event in htcondor.JobEventLog(str(path)).events(0):
                    dict(event)
            except JobledgerError:
                pass
            try:
                read_log(str(path))
            except JobledgerError:
                pass
    cpu_bounded(read)


def test_every_command_was_fuzzed():
    names = {" ".join(p) for p, _ in COMMANDS}
    assert {"submit", "q", "replay", "log", "journal import", "pool start"} <= names
