"""``jobledger web`` on a 10,000-job journal: first paint and live-update latency.

A journal of 10,000 finished jobs (10 clusters of 1,000 submitted as blocks; each job
waits, runs on one of 16 slots, exits; ~60,000 entries), served by the web app on
127.0.0.1 (uvicorn on a thread of this process, as ``jobledger web`` runs it).

Rows:

- ``server fold``: ``Source(...)`` folding the whole journal (the server's start).
- ``GET /api/picture``: the full picture the page loads first (time, size).
- ``replay cut, cold``: ``/api/picture?at=<half>`` with no kept cut (a fold from 0).
- ``first paint``: chromium (headless, Debian's) opening the page until every panel is
  drawn (``performance.now()`` when the page marks itself ready: navigation, the
  picture's download and parse, the SVG of 10,000 bars).
- ``live update, SSE``: one journal commit (a new job's submit) to its server-sent event
  reaching an HTTP client: p50 / p95 / max over 30 commits.
- ``live update, page``: the same commit to the page showing its position (a
  MutationObserver stamps ``Date.now()``): p50 / p95 / max over 30 commits.

Without chromium the browser rows say so and the others still run.
"""

from __future__ import annotations

import http.client
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from jobledger.daemons.storage.store import Store  # noqa: E402
from jobledger.eventcore.events import event_to_dict, make_event  # noqa: E402
from jobledger.eventcore.ids import JobId  # noqa: E402
from jobledger.eventcore.records import ClusterAd, EventRecord, LeaveQueue, ProcBlock  # noqa: E402

JOBS, PER_CLUSTER, SLOTS, ROUNDS = 10_000, 1_000, 16, 30
T0 = 1_790_000_000
CHROMIUM, DRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"


def ev(job, number, t, **attrs):
    return EventRecord(job, event_to_dict(make_event(number, cluster=job.cluster, proc=job.proc,
                                                     timestamp=t, attrs=attrs)))


def build(local: str) -> Store:
    store = Store(local, durability="normal")
    for c in range(1, JOBS // PER_CLUSTER + 1):
        t = T0 + c * 60
        submit = event_to_dict(make_event(0, cluster=c, proc=0, timestamp=t,
                                          attrs={"SubmitHost": "<127.0.0.1:9618>"}))
        store.append([ClusterAd(c, {"Owner": '"bench"', "Cmd": '"/bin/sleep"', "JobUniverse": "5"}),
                      ProcBlock.factored(c, list(range(PER_CLUSTER)),
                                         [{"JobStatus": "1"} for _ in range(PER_CLUSTER)], submit)])
        for start in range(0, PER_CLUSTER, 250):
            records = []
            for p in range(start, start + 250):
                job, slot = JobId(c, p), (c * PER_CLUSTER + p) % SLOTS + 1
                run = t + 1 + (p // SLOTS) * 0.5
                records += [ev(job, 1, run, ExecuteHost="<127.0.0.1:9619>", SlotName=f"slot1_{slot}@bench"),
                            ev(job, 5, run + 0.4, TerminatedNormally=True, ReturnValue=0), LeaveQueue(job)]
            store.append(records)
    return store


def timed(fn):
    t0 = time.perf_counter()
    value = fn()
    return time.perf_counter() - t0, value


def stats(values):
    values = sorted(values)
    return (f"{statistics.median(values) * 1000:.0f} / {values[int(len(values) * 0.95) - 1] * 1000:.0f} / "
            f"{values[-1] * 1000:.0f} ms")


def sse_latency(server, store) -> list[float]:
    host, port = server.url.split("//")[1].rstrip("/").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    conn.request("GET", f"/api/events?since={store.head()}")
    reply = conn.getresponse()
    got: dict[int, float] = {}
    done = threading.Event()

    def read():
        while not done.is_set():
            line = reply.fp.readline()
            if not line:
                return
            if line.startswith(b"id: "):
                got[int(line[4:])] = time.time()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    out = []
    for i in range(ROUNDS):
        head = commit(store, 5000 + i)
        sent = time.time()
        deadline = time.monotonic() + 30
        while not any(p >= head for p in got) and time.monotonic() < deadline:
            time.sleep(0.001)
        out.append(min(t for p, t in got.items() if p >= head) - sent)
    done.set()
    conn.close()
    return out


def commit(store, cluster) -> int:
    job = JobId(cluster, 0)
    return store.append([ClusterAd(cluster, {"Owner": '"bench"', "Cmd": '"/bin/true"'}),
                         ProcBlock.factored(cluster, [0], [{"JobStatus": "1"}],
                                            event_to_dict(make_event(0, cluster=cluster, proc=0,
                                                                     timestamp=time.time(), attrs={})))])


def browser(tmp):
    if not (os.access(CHROMIUM, os.X_OK) and os.access(DRIVER, os.X_OK)):
        return None
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-dev-shm-usage",
                 "--window-size=1500,1200", f"--user-data-dir={tmp}/profile"]:
        options.add_argument(flag)
    return webdriver.Chrome(options=options, service=Service(DRIVER))


def page_rows(driver, server, store):
    driver.get(server.url)
    deadline = time.monotonic() + 300
    while driver.execute_script("return document.body.dataset.ready") != "1":
        assert time.monotonic() < deadline, "the page did not draw in 300 s"
        time.sleep(0.05)
    paint = int(driver.execute_script("return document.body.dataset.readyMs")) / 1000
    driver.execute_script("""
        window.__seen = {};
        new MutationObserver(() => { const p = Number(document.body.dataset.position);
          if (!(p in window.__seen)) window.__seen[p] = Date.now(); })
        .observe(document.body, {attributes: true, attributeFilter: ['data-position']});""")
    out = []
    for i in range(ROUNDS):
        head = commit(store, 6000 + i)
        sent = time.time()
        deadline = time.monotonic() + 60
        while True:
            seen = driver.execute_script("return window.__seen")
            hits = [t for p, t in seen.items() if int(p) >= head]
            if hits or time.monotonic() > deadline:
                break
            time.sleep(0.01)
        out.append(min(hits) / 1000 - sent if hits else float("inf"))
    return paint, out


def main() -> None:
    from jobledger.web.app import Running, make_app
    from jobledger.web.source import Source
    with tempfile.TemporaryDirectory() as tmp:
        built, store = timed(lambda: build(tmp))
        head = store.head()
        print(f"journal: {JOBS:,} jobs, {head:,} entries, built in {built:.1f} s; "
              f"load average {os.getloadavg()[0]:.1f}")
        print("| row | value |\n|---|---:|")
        fold, source = timed(lambda: Source(Path(tmp) / "journal.sqlite"))
        print(f"| server fold ({head:,} entries) | {fold:.2f} s ({head / fold:,.0f} entries/s) |")
        server = Running(make_app(source, None))
        try:
            took, body = timed(lambda: urllib.request.urlopen(server.url + "api/picture", timeout=120).read())
            print(f"| GET /api/picture (10,000 jobs) | {took * 1000:.0f} ms, {len(body) / 1e6:.1f} MB |")
            json.loads(body)
            took, _ = timed(lambda: urllib.request.urlopen(server.url + f"api/picture?at={head // 2}",
                                                           timeout=120).read())
            print(f"| replay cut, cold (?at={head // 2:,}) | {took * 1000:.0f} ms |")
            print(f"| live update, SSE (commit -> event), p50 / p95 / max | {stats(sse_latency(server, store))} |")
            driver = browser(tmp)
            if driver is None:
                print("| first paint / live update, page | not measured: no chromium and chromedriver |")
                return
            try:
                paint, live = page_rows(driver, server, store)
            finally:
                driver.quit()
            print(f"| first paint (navigation -> every panel drawn) | {paint * 1000:.0f} ms |")
            print(f"| live update, page (commit -> page shows it), p50 / p95 / max | {stats(live)} |")
        finally:
            server.stop()
            source.close()
            store.close()


if __name__ == "__main__":
    main()
