"""``jobledger web``'s server over a real journal and a real uvicorn on 127.0.0.1: the
picture and replay cuts, the job drawer, the DAG graph, server-sent events whose id is
the journal position (a reconnect with Last-Event-ID resumes exactly), the exports, the
CLI.  The page itself is driven in a real browser in test_browser.py."""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest
from click.testing import CliRunner

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from jobledger.daemons.storage.store import Store  # noqa: E402
from jobledger.eventcore.journal import MemoryJournal  # noqa: E402
from jobledger.eventcore.projections.picture import picture  # noqa: E402
from jobledger.cli import main as cli  # noqa: E402
from jobledger.web.app import Running, make_app  # noqa: E402
from jobledger.web.source import Source  # noqa: E402
from tests.web.test_picture import batches  # noqa: E402


@pytest.fixture
def served(tmp_path):
    store = Store(str(tmp_path / "pool"))
    parts = batches()
    for records, _ in parts[:3]:
        store.append(records)
    source = Source(tmp_path / "pool" / "journal.sqlite")
    server = Running(make_app(source, str(tmp_path / "pool")))
    try:
        yield server, store, source, parts
    finally:
        server.stop()
        source.close()
        store.close()


def get(server, path, headers=None):
    request = urllib.request.Request(urllib.parse.urljoin(server.url, path), headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, reply.headers, reply.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers, exc.read()


def get_json(server, path):
    status, _, body = get(server, path)
    return status, json.loads(body)


def memory_journal(parts) -> MemoryJournal:
    journal = MemoryJournal()
    for records, when in parts:
        journal.append(records, time=when)
    return journal


def test_picture_at_the_head_and_at_cuts(served):
    server, store, source, parts = served
    status, pic = get_json(server, "/api/picture")
    head = store.head()
    assert status == 200 and pic["header"]["position"] == head == pic["head"]
    expected = picture(memory_journal(parts[:3]).entries()).snapshot()
    assert pic["jobs"] == expected["jobs"]      # (the series' first point is the proc ad's append time)
    assert [p[:1] + p[2:] for p in pic["series"]] == [p[:1] + p[2:] for p in expected["series"]]
    status, empty = get_json(server, "/api/picture?at=0")
    assert empty["jobs"] == [] and empty["header"]["total"] == 0 and empty["head"] == head
    for cut in (3, 6, 2, head):   # forward from a kept cut, then back
        _, at = get_json(server, f"/api/picture?at={cut}")
        assert at["jobs"] == picture(memory_journal(parts[:3]).entries(), position=cut).snapshot()["jobs"]
    status, bad = get_json(server, "/api/picture?at=-1")
    assert status == 400 and "at=" in bad["error"]
    status, bad = get_json(server, "/api/picture?at=1&as_of=5")
    assert status == 400
    _, moment = get_json(server, f"/api/picture?as_of={parts[0][1] + 7}")
    assert {j["id"]: j["st"] for j in moment["jobs"]} == {"1.0": 2, "1.1": 2}


def test_job_drawer_and_bad_ids(served):
    server, *_ = served
    status, story = get_json(server, "/api/job/1.1")
    assert status == 200 and story["hold_code"] == 21 and story["hold_reason"] == "admin says wait"
    assert "012 (001.001.000)" in story["userlog"]
    status, early = get_json(server, "/api/job/1.1?at=4")
    assert "hold_code" not in early and early["steps"][-1]["position"] <= 4
    assert get_json(server, "/api/job/1.9")[0] == 404
    assert get_json(server, "/api/job/x.y")[0] == 400
    assert get_json(server, "/api/dag/1")[0] == 404


def test_only_loopback_names_are_answered(served):
    server, *_ = served
    status, _, _ = get(server, "/api/picture", {"Host": "attacker.example"})
    assert status == 400


def read_events(response, count: int, deadline: float) -> list[dict]:
    """``count`` SSE events (id, event, data) from a streaming response, before ``deadline``."""
    events, current = [], {}
    while len(events) < count:
        assert time.monotonic() < deadline, f"only {len(events)} of {count} events came"
        line = response.fp.readline().decode()
        if line in ("\n", "\r\n", ""):
            if "data" in current and current.get("event") == "delta":
                events.append(dict(current, data=json.loads(current["data"])))
            current = {}
            assert line, "the stream ended"
            continue
        name, _, value = line.rstrip("\r\n").partition(": ")
        current[name] = value
    return events


def open_stream(server, path, headers=None):
    host, port = urllib.parse.urlsplit(server.url).netloc.split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    conn.request("GET", path, headers=headers or {})
    response = conn.getresponse()
    assert response.status == 200 and response.headers["content-type"].startswith("text/event-stream")
    return conn, response


def test_events_carry_the_position_and_a_reconnect_resumes_exactly(served):
    server, store, source, parts = served
    head = store.head()
    conn, response = open_stream(server, f"/api/events?since={head}")
    store.append(parts[3][0])
    [first] = read_events(response, 1, time.monotonic() + 60)
    conn.close()
    seen = int(first["id"])
    assert seen == store.head() and first["data"]["head"] == seen
    assert [j["id"] for j in first["data"]["jobs"]] == ["1.0"] and first["data"]["jobs"][0]["st"] == 4
    # while the browser is away, the run goes on; it comes back with the last id it saw
    store.append(parts[4][0])
    store.append(parts[5][0])
    conn, response = open_stream(server, "/api/events", {"Last-Event-ID": str(seen)})
    deadline = time.monotonic() + 60
    resumed = read_events(response, 1, deadline)
    while int(resumed[-1]["id"]) < store.head():      # the server may see the two appends apart
        resumed += read_events(response, 1, deadline)
    conn.close()
    final = memory_journal(parts)
    fold = picture(final.entries())
    assert int(resumed[-1]["id"]) == final.head() == store.head()
    ids = [int(e["id"]) for e in resumed]
    assert ids == sorted(set(ids)) and ids[0] > seen
    jobs, points = {}, []
    for event in resumed:
        jobs.update({j["id"]: j for j in event["data"]["jobs"]})
        points += [p[0] for p in event["data"]["series"]]
    expected = fold.delta(seen)
    assert jobs == {j["id"]: j for j in expected["jobs"]} and list(jobs) == ["1.1"]
    assert points == [p[0] for p in expected["series"]]


def test_exports_served_and_offline(served):
    server, store, *_ = served
    status, headers, body = get(server, "/report.html")
    page = body.decode()
    assert status == 200 and "window.JL_STATIC" in page and "/static/" not in page
    embedded = json.loads(page.split("window.JL_STATIC = ", 1)[1].split(";</script>", 1)[0])
    assert 'src="http' not in page and 'href="http' not in page and "@import" not in page
    status, trace = get_json(server, "/trace.json?at=6")
    assert status == 200 and any(e["ph"] == "X" for e in trace["traceEvents"])
    assert trace["otherData"]["journal_position"] == 6
    status, headers, script = get(server, "/static/app.js")
    assert status == 200 and b"EventSource" in script
    status, headers, index = get(server, "/")
    assert status == 200 and b'id="timeline"' in index
    status, audit = get_json(server, "/api/audit")
    assert audit["position"] == store.head() and "ok" in audit
    assert embedded["audit"] == audit                       # the report shows the page's verdict


def test_cli_writes_the_report_and_the_trace(tmp_path):
    store = Store(str(tmp_path / "pool"))
    for records, _ in batches():
        store.append(records)
    head = store.head()
    store.close()
    report, trace = tmp_path / "r.html", tmp_path / "t.json"
    result = CliRunner().invoke(cli, ["web", "--local-dir", str(tmp_path / "pool"), "--report", str(report),
                                      "--trace", str(trace), "--at", "8"])
    assert result.exit_code == 0, result.output
    data = json.loads(report.read_text().split("window.JL_STATIC = ", 1)[1].split(";</script>", 1)[0])
    assert data["picture"]["header"]["position"] == 8 and set(data["stories"]) == {"1.0", "1.1"}
    assert [f["header"]["position"] for f in data["frames"]][0] == 0 and data["frames"][-1]["header"]["position"] == 8
    assert json.loads(trace.read_text())["otherData"]["journal_position"] == 8
    assert data["audit"]["position"] == head and data["audit"]["ok"] is True, data["audit"]
    assert data["audit"]["text"] == "OK: 0 findings"
    missing = CliRunner().invoke(cli, ["web", "--local-dir", str(tmp_path / "none"), "--report", str(report)])
    assert missing.exit_code == 1 and "no journal" in missing.output


def test_cli_pictures_a_user_log_htcondor_wrote(tmp_path, oracle_dir):
    """A run HTCondor made (its own user log): queue wait, input transfer, execution,
    output transfer on the slot it names."""
    trace, report = tmp_path / "t.json", tmp_path / "r.html"
    log = oracle_dir / "userlog" / "lifecycle_basic.log"
    result = CliRunner().invoke(cli, ["web", "--log", str(log), "--trace", str(trace), "--report", str(report)])
    assert result.exit_code == 0, result.output
    data = json.loads(report.read_text().split("window.JL_STATIC = ", 1)[1].split(";</script>", 1)[0])
    assert data["audit"]["ok"] is None and data["audit"]["text"] == "no pool to audit"
    events = json.loads(trace.read_text())["traceEvents"]
    slices = sorted((e["ts"], e["cat"], e["dur"]) for e in events if e["ph"] == "X")
    assert slices == [(0, "wait", 8_000_000), (8_000_000, "in", 2_000_000),
                      (11_000_000, "exec", 601_000_000), (612_000_000, "out", 1_000_000)]
    assert {"slot1_1@ep01.example.org", "ep01.example.org"} <= {e["args"]["name"] for e in events if e["ph"] == "M"}
