"""``jobledger web`` in a real browser (Debian's chromium, headless, driven by selenium)
over a real pool: a 20-node DAG with one retry and one hold fills the timeline and the DAG
live; the replay slider dragged to position 0 shows an empty picture and dragged to the
end agrees with condor_history; the job drawer and the hover text show the user log; the
static report opens from disk with the server gone and no request made.  Screenshots go
to ``$JOBLEDGER_WEB_SHOTS`` (default: the test's tmp directory) for a person to look at.

Without chromium and its driver the test is skipped naming what is missing, except under
CI (``CI`` set), where it fails: ``.ci/run`` installs them.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
webdriver = pytest.importorskip("selenium.webdriver")

import jobledger as htcondor  # noqa: E402
from jobledger.web.app import Running, make_app  # noqa: E402
from jobledger.web.source import Source  # noqa: E402
from tests.pool.conftest import pool, wait_until  # noqa: E402,F401

CHROMIUM, DRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--disable-dev-shm-usage",
         "--window-size=1500,1400", "--force-device-scale-factor=1"]
WAIT = 120   # seconds any one condition may take on a loaded machine


def browser_or_skip(tmp_path):
    missing = [p for p in (CHROMIUM, DRIVER) if not os.access(p, os.X_OK)]
    if missing:
        reason = f"no headless browser: {', '.join(missing)} missing (apt-get install chromium chromium-driver)"
        if os.environ.get("CI"):
            pytest.fail(reason + "; .ci/run installs them")
        pytest.skip(reason)
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS + [f"--user-data-dir={tmp_path / 'chromium-profile'}"]:
        options.add_argument(flag)
    return webdriver.Chrome(options=options, service=Service(DRIVER))


def write(path: Path, text: str, executable: bool = False) -> Path:
    path.write_text(text)
    if executable:
        path.chmod(stat.S_IRWXU)
    return path


def twenty_node_dag(directory: Path) -> str:
    """prep (PRE script) -> flaky (fails once, RETRY 1) and sim01..06 -> merge ->
    ana01..09 and gate (waits for a file: the test holds it meanwhile) -> report (POST)."""
    write(directory / "sleep.sub", "executable = /bin/sleep\narguments = $(secs)\nqueue\n")
    write(directory / "flaky.sh", f"#!/bin/sh\nsleep 1\nn=$(cat {directory}/count 2>/dev/null || echo 0)\n"
                                  f"echo $((n+1)) > {directory}/count\n[ \"$n\" -ge 1 ]\n", True)
    write(directory / "flaky.sub", "executable = flaky.sh\nqueue\n")
    write(directory / "gate.sh", f"#!/bin/sh\ni=0\nwhile [ ! -e {directory}/go ] && [ $i -lt 1200 ]; do "
                                 f"sleep 0.1; i=$((i+1)); done\n[ -e {directory}/go ]\n", True)
    write(directory / "gate.sub", "executable = gate.sh\nqueue\n")
    write(directory / "pre.sh", "#!/bin/sh\nexit 0\n", True)
    write(directory / "post.sh", "#!/bin/sh\nexit 0\n", True)
    sims = [f"sim{i:02d}" for i in range(1, 7)]
    anas = [f"ana{i:02d}" for i in range(1, 10)]
    lines = ["JOB prep sleep.sub", "JOB flaky flaky.sub", "JOB merge sleep.sub", "JOB gate gate.sub",
             "JOB report sleep.sub"]
    lines += [f"JOB {n} sleep.sub" for n in sims + anas]
    lines += ['VARS ALL_NODES secs="1"', "RETRY flaky 1", "SCRIPT PRE prep pre.sh", "SCRIPT POST report post.sh",
              f"PARENT prep CHILD flaky {' '.join(sims)}", f"PARENT flaky {' '.join(sims)} CHILD merge",
              f"PARENT merge CHILD gate {' '.join(anas)}", f"PARENT gate {' '.join(anas)} CHILD report"]
    write(directory / "run.dag", "\n".join(lines) + "\n")
    return "run.dag"


class Page:
    """The browser on the page, with waits on what it shows."""

    def __init__(self, driver, shots: Path):
        self.driver, self.shots = driver, shots

    def js(self, script, *args):
        return self.driver.execute_script(script, *args)

    def body(self, name):
        return self.js(f"return document.body.dataset.{name}")

    def until(self, condition, what):
        return wait_until(lambda: condition(), WAIT, 0.1, what)

    def jobs(self):
        return self.js("return window.jobledgerView ? window.jobledgerView.jobs() : []")

    def node_state(self, name):
        return self.js("const n = document.querySelector(`.node[data-node='${arguments[0]}']`);"
                       "return n ? n.dataset.state : null", name)

    def shot(self, name):
        path = self.shots / f"{name}.png"
        self.driver.save_screenshot(str(path))
        return path

    def drag_slider_to(self, end: str):
        """Drag the slider's thumb to the far left or right, as a mouse does."""
        from selenium.webdriver.common.action_chains import ActionChains
        slider = self.driver.find_element("id", "slider")
        quarter = slider.size["width"] // 4 * (-1 if end == "left" else 1)
        beyond = 6 * (-1 if end == "left" else 1)       # past the thumb's half width
        ActionChains(self.driver).click_and_hold(slider).move_by_offset(quarter, 0) \
            .move_by_offset(quarter + beyond, 0).release().perform()


def history_rows(cluster_constraint: str) -> dict:
    """condor_history's answer (the installed command, run as a user would)."""
    command = [os.path.join(os.path.dirname(sys.executable), "condor_history"), "-constraint",
               cluster_constraint, "-af", "ClusterId", "ProcId", "JobStatus", "ExitCode", "DAGNodeName"]
    out = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True).stdout
    rows = {}
    for line in out.splitlines():
        cluster, proc, status, code, node = line.split()
        rows[f"{cluster}.{proc}"] = (int(status), None if code == "undefined" else int(code),
                                     None if node == "undefined" else node)
    return rows


@pytest.fixture
def shots(tmp_path):
    where = Path(os.environ.get("JOBLEDGER_WEB_SHOTS") or tmp_path / "shots")
    where.mkdir(parents=True, exist_ok=True)
    return where


def test_a_dag_run_live_replayed_and_reported(pool, tmp_path, shots):  # noqa: F811
    driver = browser_or_skip(tmp_path)
    source = Source(Path(pool.local_dir) / "journal.sqlite")
    server = Running(make_app(source, str(pool.local_dir)))
    try:
        run(Page(driver, shots), server, source, pool, tmp_path)
    finally:
        driver.quit()
        server.stop()
        source.close()


def run(page, server, source, pool, tmp_path):  # noqa: F811
    start = source.live.position
    page.driver.get(server.url)
    page.until(lambda: page.body("ready") == "1" and page.body("mode") == "live", "the page to draw live")
    page.js("window.__sameDocument = true")
    directory = tmp_path / "dag"
    directory.mkdir()
    dag = twenty_node_dag(directory)
    old = os.getcwd()
    os.chdir(directory)
    try:
        dagman = pool.schedd.submit(htcondor.Submit.from_dag(dag, {})).cluster()
    finally:
        os.chdir(old)

    # live: the DAG and the timeline fill without a reload
    page.until(lambda: page.js("return document.querySelectorAll('.dag-svg .node').length") == 20,
               "the DAG's 20 nodes drawn from its file")
    page.until(lambda: page.node_state("prep") == "Completed", "prep to complete on the page")
    bars_early = page.js("return document.querySelectorAll('#timeline-svg .bar').length")
    gate = wait_until(lambda: pool.schedd.query(f"DAGManJobId == {dagman} && DAGNodeName == \"gate\" "
                                                "&& JobStatus == 2", ["ClusterId"]), WAIT, 0.1, "gate to run")
    gate_cluster = gate[0]["ClusterId"]
    page.until(lambda: page.node_state("gate") == "Running", "the page to show gate running")
    pool.schedd.act(htcondor.JobAction.Hold, f"ClusterId == {gate_cluster}", reason="held by the web test")
    page.until(lambda: page.node_state("gate") == "Held", "the page to show gate held")
    page.until(lambda: page.js("return document.querySelector('.stat[data-state=Held] .num').textContent") == "1",
               "the Held card to count 1")
    page.until(lambda: page.node_state("flaky") == "Completed", "flaky to complete after its retry")
    page.shot("1-live-held")
    (directory / "go").touch()
    pool.schedd.act(htcondor.JobAction.Release, f"ClusterId == {gate_cluster}")
    wait_until(lambda: not pool.schedd.query(f"ClusterId == {dagman}", ["JobStatus"]), WAIT * 2, 0.2,
               "the DAGMan job to finish")
    head = wait_until(lambda: source.head() if source.live.position == source.head() else None, WAIT, 0.1,
                      "the server to fold the journal's head")
    page.until(lambda: page.body("position") == str(head), "the page to reach the journal's head live")
    assert page.js("return window.__sameDocument") is True        # filled live, never reloaded
    bars_end = page.js("return document.querySelectorAll('#timeline-svg .bar').length")
    assert bars_end > bars_early and bars_end >= 22        # 21 node runs + a hold (+ DAGMan's own)
    flaky_tags = page.js("return document.querySelector(`.node[data-node='flaky'] .tag`).textContent")
    report_tags = page.js("return document.querySelector(`.node[data-node='report'] .tag`).textContent")
    assert flaky_tags == "↻1" and report_tags.startswith("POST") and "PRE" in page.js(
        "return document.querySelector(`.node[data-node='prep'] .tag`).textContent")
    page.shot("2-live-finished")

    # the end agrees with condor_history
    history = history_rows(f"DAGManJobId == {dagman} || ClusterId == {dagman}")
    shown = {j["id"]: j for j in page.jobs() if int(j["id"].split(".")[0]) >= dagman}
    assert len(history) == 22 and set(shown) == set(history)
    assert {i: (j["st"], j.get("exit"), j.get("node")) for i, j in shown.items()} == history
    assert sorted(h[2] for h in history.values() if h[2]).count("flaky") == 2
    assert [h[1] for h in history.values()].count(1) == 1            # flaky's first try

    # hovering a bar shows its events as the user log has them
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.common.exceptions import MoveTargetOutOfBoundsException, StaleElementReferenceException

    def hovered():
        # found afresh each time: a redraw of the timeline replaces its bars (and hides the tip)
        bars = page.driver.find_elements(
            "css selector", f"#timeline-svg .bar[data-job='{gate_cluster}.0'] rect.p-exec")
        try:
            ActionChains(page.driver).move_to_element(bars[-1]).perform()
        except (IndexError, StaleElementReferenceException, MoveTargetOutOfBoundsException):
            return False
        return "Job executing on host" in page.js("return document.getElementById('tip').textContent")
    page.until(hovered, "the hover text to show the EXECUTE event's text")
    page.shot("3-hover")

    # the job drawer: the held job's ad changes, hold reason and user-log excerpt
    page.js(f"document.querySelector(`.node[data-node='gate']`).dispatchEvent(new MouseEvent('click'))")
    page.until(lambda: "012 (" in (page.js("const u = document.querySelector('#drawer .userlog');"
                                           "return u ? u.textContent : ''") or ""), "the drawer's user log")
    drawer = page.js("return document.getElementById('drawer-body').textContent")
    assert "JOB_HELD" in drawer and "JOB_RELEASED" in drawer and "held by the web test" in drawer
    page.shot("4-drawer")
    page.js("document.getElementById('close').click()")

    # replay: dragged to 0 the picture is empty; a permalink shows the hold; dragged to the end, live again
    page.drag_slider_to("left")
    page.until(lambda: page.body("position") == "0" and page.body("mode") == "replay", "replay at position 0")
    assert page.body("jobs") == "0" and page.jobs() == []
    assert "?at=0" in page.driver.current_url
    counts = page.js("return Array.from(document.querySelectorAll('.stat[data-state] .num')).map(n => n.textContent)")
    assert counts == ["0"] * 7
    assert "no jobs at this position" in page.js("return document.getElementById('timeline').textContent")
    page.shot("5-replay-0")
    held_at = next(s["position"] for s in source.story(gate_cluster, 0)["steps"] if s["what"] == "JOB_HELD")
    page.driver.get(server.url + f"?at={held_at}")
    page.until(lambda: page.body("ready") == "1" and page.body("position") == str(held_at), "the permalink's cut")
    assert page.body("mode") == "replay" and page.node_state("gate") == "Held"
    assert start < held_at < head
    page.shot("6-replay-at-hold")
    # a moment typed in: the queue as it stood at the end of that second (the server's as_of cut)
    held_time = next(s["time"] for s in source.story(gate_cluster, 0)["steps"] if s["what"] == "JOB_HELD")
    page.js("const m = document.getElementById('moment'); const d = new Date(arguments[0] * 1000);"
            "const p = (n) => String(n).padStart(2, '0');"
            "m.value = d.getFullYear() + '-' + p(d.getMonth() + 1) + '-' + p(d.getDate()) + 'T' + p(d.getHours())"
            " + ':' + p(d.getMinutes()) + ':' + p(d.getSeconds());"
            "m.dispatchEvent(new Event('change'))", held_time)
    as_of = int(held_time) + 0.999
    expected = source.at(None, as_of)["header"]["position"]
    page.until(lambda: page.body("position") == str(expected) and "as_of=" in page.driver.current_url,
               "the moment's cut")
    assert page.body("mode") == "replay" and held_at <= expected
    page.driver.get(page.driver.current_url)           # the moment's permalink
    page.until(lambda: page.body("ready") == "1" and page.body("position") == str(expected), "the moment's permalink")
    page.drag_slider_to("right")
    page.until(lambda: int(page.body("position")) >= head and page.body("mode") == "live", "back to the head")
    shown = {j["id"]: j for j in page.jobs() if int(j["id"].split(".")[0]) >= dagman}
    assert {i: (j["st"], j.get("exit"), j.get("node")) for i, j in shown.items()} == history

    # the static report, opened from disk with the server stopped: no request at all
    with urllib.request.urlopen(server.url + "report.html", timeout=60) as reply:
        report = tmp_path / "report.html"
        report.write_bytes(reply.read())
    with urllib.request.urlopen(server.url + "trace.json", timeout=60) as reply:
        trace = json.loads(reply.read())
    assert sum(1 for e in trace["traceEvents"] if e["ph"] == "X" and e["cat"] == "held") == 1
    server.stop()
    page.driver.get(report.as_uri())
    page.until(lambda: page.body("ready") == "1" and page.body("mode") == "static", "the report to draw")
    assert page.js("return performance.getEntriesByType('resource').map(e => e.name)") == []
    offline = {j["id"]: j for j in page.jobs() if int(j["id"].split(".")[0]) >= dagman}
    assert {i: (j["st"], j.get("exit"), j.get("node")) for i, j in offline.items()} == history
    assert page.js("return document.querySelectorAll('.dag-svg .node').length") == 20
    assert page.js("return document.getElementById('audit').textContent").startswith("audit OK: 0 findings @")
    page.shot("7-static-report")
    page.drag_slider_to("left")
    page.until(lambda: page.body("position") == "0", "the report's replay at 0")
    assert page.jobs() == []
    report_head = page.js("return window.jobledgerView.head()")
    page.js("const m = document.getElementById('moment'); m.value = '2999-01-01T00:00:00';"
            "m.dispatchEvent(new Event('change'))")              # a moment after the run: its end
    page.until(lambda: page.body("position") == str(report_head), "the report's moment after the run")
    shutil.copy(report, page.shots / "report.html")


def test_a_sub_dag_nests_in_its_parent_and_collapses(pool, tmp_path, shots):  # noqa: F811
    """SUBDAG EXTERNAL: the inner DAG's block sits inside the outer one's, under the
    SUBDAG node, drawn from its own file; it opens and closes like the outer."""
    driver = browser_or_skip(tmp_path)
    source = Source(Path(pool.local_dir) / "journal.sqlite")
    server = Running(make_app(source, str(pool.local_dir)))
    try:
        page = Page(driver, shots)
        directory = tmp_path / "nested"
        directory.mkdir()
        write(directory / "true.sub", "executable = /bin/true\nlog = nodes.log\nqueue\n")
        write(directory / "inner.dag", "JOB x true.sub\nJOB y true.sub\nJOB z true.sub\nPARENT x CHILD y z\n")
        outer = write(directory / "outer.dag", "JOB a true.sub\nSUBDAG EXTERNAL inner inner.dag\n"
                                               "JOB b true.sub\nPARENT a CHILD inner\nPARENT inner CHILD b\n")
        old = os.getcwd()
        os.chdir(directory)
        try:
            dagman = pool.schedd.submit(htcondor.Submit.from_dag(str(outer), {})).cluster()
        finally:
            os.chdir(old)
        wait_until(lambda: not pool.schedd.query(f"ClusterId == {dagman}", ["JobStatus"]), WAIT * 2, 0.2,
                   "the outer DAGMan job to finish")
        wait_until(lambda: source.live.position == source.head() or None, WAIT, 0.1, "the server to catch up")
        page.driver.get(server.url)
        page.until(lambda: page.body("ready") == "1", "the page to draw")
        outer_block = f"details.dag-block[data-cluster='{dagman}']"
        inner_block = f"{outer_block} details.dag-block"
        page.until(lambda: page.js(f"return document.querySelectorAll(`{inner_block} .dag-svg .node`).length") == 3,
                   "the inner DAG's three nodes, nested in the outer block")
        outer_nodes = page.js(f"return Array.from(document.querySelectorAll(`{outer_block} > svg.dag-svg .node`))"
                              ".map(n => [n.dataset.node, n.dataset.state])")
        assert sorted(outer_nodes) == [["a", "Completed"], ["b", "Completed"], ["inner", "Completed"]]
        inner_nodes = page.js(f"return Array.from(document.querySelectorAll(`{inner_block} .dag-svg .node`))"
                              ".map(n => [n.dataset.node, n.dataset.state])")
        assert sorted(inner_nodes) == [["x", "Completed"], ["y", "Completed"], ["z", "Completed"]]
        inner_cluster = int(page.js(f"return document.querySelector(`{inner_block}`).dataset.cluster"))
        assert pool.schedd.history(f"ClusterId == {inner_cluster}", ["DAGManJobId"])[0]["DAGManJobId"] == dagman
        page.js(f"document.querySelector(`{inner_block} > summary`).click()")       # it collapses and opens
        opened = page.js(f"return document.querySelector(`{inner_block}`).open")
        page.js(f"document.querySelector(`{inner_block} > summary`).click()")
        assert page.js(f"return document.querySelector(`{inner_block}`).open") is (not opened)
        page.shot("8-sub-dag")
    finally:
        driver.quit()
        server.stop()
        source.close()
