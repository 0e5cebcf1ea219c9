"""``jobledger submit FILE --dry-run``."""

from __future__ import annotations

import json

from click.testing import CliRunner

from jobledger.eventcore.classad import parse_old_ads
from jobledger.cli import main

TEXT = "executable = /bin/echo\narguments = $(x)\n+Tag = \"t-$(ProcId)\"\nqueue x in (a b)\n"


def run(args, tmp_path, monkeypatch, text=TEXT, stdin=None):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "job.sub").write_text(text)
    return CliRunner().invoke(main, ["submit", *args], input=stdin)


def test_dry_run_prints_old_ads(tmp_path, monkeypatch):
    result = run(["job.sub", "--dry-run", "--cluster", "12"], tmp_path, monkeypatch)
    assert result.exit_code == 0, result.output
    ads = [ad for ad, _ in parse_old_ads(result.output)]
    assert [ad["Args"] for ad in ads] == ["a", "b"]
    assert [ad["Tag"] for ad in ads] == ["t-0", "t-1"]
    assert {ad["ClusterId"] for ad in ads} == {12} and ads[1]["ProcId"] == 1
    assert ads[0]["Iwd"] == str(tmp_path)


def test_dry_run_json_append_and_queue(tmp_path, monkeypatch):
    result = run(["job.sub", "--dry-run", "--json", "-a", "request_cpus = 2", "--queue", "3"],
                 tmp_path, monkeypatch)
    assert result.exit_code == 0, result.output
    ads = json.loads(result.output)
    assert len(ads) == 3 and all(ad["RequestCpus"] == 2 for ad in ads)
    assert "(TARGET.Cpus >= RequestCpus)" in json.dumps(ads[0]["Requirements"])


def test_stdin(tmp_path, monkeypatch):
    result = run(["-", "--dry-run"], tmp_path, monkeypatch, stdin="executable = /bin/true\nqueue 2\n")
    assert result.exit_code == 0 and result.output.count("ProcId = ") == 2


def test_errors_name_file_and_line(tmp_path, monkeypatch):
    result = run(["job.sub", "--dry-run"], tmp_path, monkeypatch, text="executable = /bin/true\nno equals\n")
    assert result.exit_code == 1
    assert "job.sub:2: not a submit command" in result.output and "'no equals'" in result.output
    result = run(["job.sub", "--dry-run"], tmp_path, monkeypatch,
                 text="executable = /bin/true\nqueue x from missing.txt\n")
    assert result.exit_code == 1 and "can't open file missing.txt" in result.output
    result = run(["nothere.sub", "--dry-run"], tmp_path, monkeypatch)
    assert result.exit_code == 1 and "cannot read nothere.sub" in result.output


def test_without_dry_run_a_pool_is_needed(tmp_path, monkeypatch):
    result = run(["job.sub", "--local-dir", str(tmp_path / "nopool")], tmp_path, monkeypatch)
    assert result.exit_code == 1 and "no pool at" in result.output
