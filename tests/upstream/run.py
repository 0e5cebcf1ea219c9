"""Run HTCondor's own test files (src/condor_tests of an htcondor/htcondor checkout kept
outside this repository) against jobledger, one pytest process per file, and write the
per-file pass list (tests/upstream/PASSLIST.md) with the checkout's commit and each
failing file's first reason.

    python -m tests.upstream.run HTCONDOR_SRC [FILE ...] [--timeout S] [--out PATH]

Only the imports change: ``htcondor2``/``classad2`` (and v1's names) resolve to
jobledger through tests/upstream/alias/sitecustomize.py; HTCondor's ``condor_*`` tools
are jobledger's, from the venv's bin directory first on PATH.
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import signal
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
ALIAS = HERE / "alias"
SCOPE = HERE / "scope.txt"


def scope() -> list[tuple[str, str]]:
    """(section, file) in scope.txt's order."""
    out, section = [], ""
    for line in SCOPE.read_text().splitlines():
        if line.startswith("# section:"):
            section = line.split(":", 1)[1].strip()
        elif line.strip() and not line.startswith("#"):
            out.append((section, line.strip()))
    return out


def checkout_commit(src: Path) -> str:
    done = subprocess.run(["git", "-C", str(src), "rev-parse", "HEAD"], capture_output=True, text=True)
    if done.returncode == 0:
        return done.stdout.strip()
    stamp = src / "COMMIT"           # a checkout exported without .git names its commit here
    return stamp.read_text().strip() if stamp.exists() else "unknown"


def first_reason(case: ET.Element) -> str:
    for tag in ("error", "failure"):
        node = case.find(tag)
        if node is not None:
            text = (node.get("message") or node.text or "").strip()
            lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
            reason = next((ln for ln in lines if ln.startswith("E ")), lines[0] if lines else tag)
            return re.sub(r"\s+", " ", reason)[:200]
    return ""


_TESTREQ_START = re.compile(r"""<<['"]?CONDOR_TESTREQ_CONFIG""")


def testreq_config(text: str, tests_dir: Path) -> str | None:
    """The configuration a test file asks of the pool it runs under (its CONDOR_TESTREQ_CONFIG
    block), read as HTCondor's own test driver (src/condor_scripts/run_test.pl) reads it:
    from the line opening the block to a line naming it again, ``#endtestreq`` or, when
    it opened with triple quotes, a line of them alone; TEST_DIR names the tests' directory.
    None when the file has no block."""
    lines, recording, triple = [], False, False
    for line in text.splitlines():
        if not recording:
            if _TESTREQ_START.search(line):
                recording, triple = True, '"""' in line
            continue
        if line.startswith("#endtestreq") or "CONDOR_TESTREQ_CONFIG" in line or (triple and line == '"""'):
            break
        lines.append(line)
    if not recording:
        return None
    return "\n".join(lines) + f"\n\nTEST_DIR = {tests_dir}\n"


def run_file(tests_dir: Path, name: str, timeout: float, workdir: Path) -> dict:
    """Counts and the first failing test's reason for one file.  A file that asks for pool
    configuration (``testreq_config``) runs with CONDOR_CONFIG naming a file of it, as
    HTCondor's driver starts its tests: the pools its fixtures start copy it
    (``condor_config_val -write:up``)."""
    xml = workdir / (name + ".xml")
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join([str(ALIAS), str(ROOT), str(tests_dir)])
    env.pop("CONDOR_CONFIG", None)
    wanted = testreq_config((tests_dir / name).read_text(errors="replace"), tests_dir)
    if wanted is not None:
        config = workdir / (name + ".testreq.config")
        config.write_text(wanted)
        env["CONDOR_CONFIG"] = str(config)
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
           f"--junitxml={xml}", f"--base-test-dir={workdir / name[:-3]}", name]
    child = subprocess.Popen(cmd, cwd=tests_dir, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
    try:
        child.wait(timeout)
    except subprocess.TimeoutExpired:
        # the whole session: pytest and the condor_master its fixtures started (pools stop on SIGTERM)
        for sig, grace in ((signal.SIGTERM, 60), (signal.SIGKILL, 30)):
            try:
                os.killpg(child.pid, sig)
            except ProcessLookupError:
                break
            try:
                child.wait(grace)
                break
            except subprocess.TimeoutExpired:
                continue
        return {"passed": 0, "failed": 0, "errors": 0, "skipped": 0, "reason": f"timed out after {timeout:.0f} s"}
    counts = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0, "reason": ""}
    if not xml.exists():
        counts["reason"] = "no report (pytest did not start)"
        return counts
    for case in ET.parse(xml).getroot().iter("testcase"):
        if case.find("skipped") is not None:
            counts["skipped"] += 1
        elif case.find("error") is not None:
            counts["errors"] += 1
        elif case.find("failure") is not None:
            counts["failed"] += 1
        else:
            counts["passed"] += 1
        if not counts["reason"]:
            counts["reason"] = first_reason(case)
    if not any(counts[k] for k in ("passed", "failed", "errors", "skipped")):
        counts["reason"] = counts["reason"] or "no tests collected"
    return counts


_LINE = re.compile(r"^(?:pass|FAIL) (\S+): (\d+) passed, (\d+) failed, (\d+) errors ?(.*)$")


def from_log(text: str, wanted: list[tuple[str, str]]) -> list[tuple[str, str, dict]]:
    """The results a run printed, in scope order; a file it did not reach is not run."""
    seen = {}
    for line in text.splitlines():
        found = _LINE.match(line)
        if found:
            name, passed, failed, errors, reason = found.groups()
            seen[name] = {"passed": int(passed), "failed": int(failed), "errors": int(errors), "skipped": 0,
                          "reason": reason.strip()}
    empty = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0, "reason": "not run (the run ended before it)"}
    return [(section, name, seen.get(name, empty)) for section, name in wanted]


def whole(c: dict) -> bool:
    return c["passed"] > 0 and not (c["failed"] or c["errors"] or c["reason"])


def render(commit: str, results: list[tuple[str, str, dict]]) -> str:
    head = jobledger_head()
    files_ok = sum(whole(c) for _, _, c in results)
    passed = sum(c["passed"] for _, _, c in results)
    total = sum(c["passed"] + c["failed"] + c["errors"] for _, _, c in results)
    out = [
        "# HTCondor's own test suite against jobledger",
        "",
        f"HTCondor commit: {commit} (src/condor_tests)  ",
        f"jobledger commit: {head}  ",
        f"Run: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, "
        f"`make upstream-tests HTCONDOR_SRC=...` (tests/upstream/run.py)",
        "",
        f"**{files_ok} of {len(results)} in-scope files pass wholly; {passed} of {total} tests pass.**",
        "",
    ]
    for section in dict.fromkeys(s for s, _, _ in results):
        rows = [(f, c) for s, f, c in results if s == section]
        ok = sum(whole(c) for _, c in rows)
        out += [f"## {section}: {ok} of {len(rows)} files", "",
                "| file | result | passed | failed | errors | first reason |", "|---|---|---|---|---|---|"]
        for f, c in rows:
            reason = c["reason"].replace("|", "\\|")
            out.append(f"| {f} | {'pass' if whole(c) else 'FAIL'} | {c['passed']} | {c['failed']} | "
                       f"{c['errors']} | {reason} |")
        out.append("")
    return "\n".join(out)


def jobledger_head() -> str:
    done = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return done.stdout.strip() or "unknown"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src", type=Path, help="an htcondor/htcondor checkout (holding src/condor_tests)")
    ap.add_argument("files", nargs="*", help="run only these files (default: all of scope.txt)")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per file")
    ap.add_argument("--out", type=Path, default=HERE / "PASSLIST.md")
    ap.add_argument("--jobs", type=int, default=1, help="files run at once (each starts its own pools)")
    ap.add_argument("--from-log", type=Path, help="write the pass list from the lines an earlier run printed "
                    "(files it did not reach are listed as not run)")
    args = ap.parse_args(argv)
    tests_dir = args.src / "src" / "condor_tests"
    if not (tests_dir / "ornithology").is_dir():
        print(f"upstream-tests: {tests_dir} holds no ornithology package", file=sys.stderr)
        return 2
    wanted = scope()
    if args.from_log is not None:
        args.out.write_text(render(checkout_commit(args.src), from_log(args.from_log.read_text(), wanted)) + "\n")
        print(f"wrote {args.out}")
        return 0
    if args.files:
        names = {Path(f).name for f in args.files}
        wanted = [(s, f) for s, f in wanted if f in names]
    with tempfile.TemporaryDirectory(prefix="upstream-tests-", ignore_cleanup_errors=True) as tmp:
        def one(item):
            section, name = item
            c = run_file(tests_dir, name, args.timeout, Path(tmp))
            print(f"{'pass' if whole(c) else 'FAIL'} {name}: {c['passed']} passed, {c['failed']} failed, "
                  f"{c['errors']} errors {c['reason']}", flush=True)
            return section, name, c
        with ThreadPoolExecutor(max(1, args.jobs)) as pool:
            results = list(pool.map(one, wanted))
    if not args.files:
        args.out.write_text(render(checkout_commit(args.src), results) + "\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
