"""``jobledger web`` over a pool whose jobs ran on real Dask workers (a ``dask scheduler``
and two ``dask worker`` processes on loopback, no local startd): each worker is a row of
its own on the timeline, marked as a Dask worker, and every run sits on the row of the
slot its EXECUTE event names."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("distributed")
pytest.importorskip("starlette")
pytest.importorskip("selenium.webdriver")

import jobledger as htcondor  # noqa: E402
from jobledger.daemons.client.personal import PersonalPool  # noqa: E402
from jobledger.web.app import Running, make_app  # noqa: E402
from jobledger.web.source import Source  # noqa: E402
from tests.pool.conftest import stop_and_check, wait_until  # noqa: E402
from tests.pool.test_dask import start_scheduler, start_worker, stop_all, worker_names  # noqa: E402
from tests.web.test_browser import WAIT, Page, browser_or_skip, shots  # noqa: E402,F401

JOBS = 6


@pytest.fixture
def dask_pool(tmp_path):
    scheduler, address = start_scheduler(tmp_path)
    processes = [scheduler]
    try:
        processes += [start_worker(address, tmp_path / f"w{i}", f"w{i}", nthreads=1) for i in range(2)]
        pool = PersonalPool(local_dir=tmp_path / "pool", config={
            "DASK_SCHEDULER_ADDRESS": address, "DAEMON_LIST": "MASTER COLLECTOR NEGOTIATOR SCHEDD"})
        pool.start()
        try:
            wait_until(lambda: len(worker_names(pool)) >= 2, 120, what="both Dask workers' slots")
            yield pool
        finally:
            stop_and_check(pool)
    finally:
        stop_all(processes)


def test_dask_workers_are_rows_of_their_own(dask_pool, tmp_path, shots):
    driver = browser_or_skip(tmp_path)
    sub = htcondor.Submit({"executable": "/bin/true", "log": str(tmp_path / "jobs.log"),
                           "initialdir": str(tmp_path)})
    cluster = dask_pool.schedd.submit(sub, count=JOBS).cluster()
    wait_until(lambda: len(dask_pool.schedd.history(f"ClusterId == {cluster}", ["ProcId"])) == JOBS, WAIT * 2,
               what="the jobs to finish on the Dask workers")
    source = Source(Path(dask_pool.local_dir) / "journal.sqlite")
    server = Running(make_app(source, str(dask_pool.local_dir)))
    try:
        wait_until(lambda: source.live.position == source.head() or None, WAIT, what="the server to catch up")
        slots = {run["slot"] for job in source.snapshot()["jobs"] for run in job["runs"]}
        assert slots and all("@dask-" in slot for slot in slots), slots
        page = Page(driver, shots)
        page.driver.get(server.url)
        page.until(lambda: page.body("ready") == "1", "the page to draw")
        page.until(lambda: page.js("return document.querySelectorAll('#timeline-svg .bar').length") >= JOBS,
                   "a bar per job")
        labels = page.js("return Array.from(document.querySelectorAll('#timeline-svg text.row-label'))"
                         ".map(t => [t.textContent, t.classList.contains('dask')])")
        assert sorted(labels) == sorted(["◆ " + slot, True] for slot in slots)
        page.shot("9-dask-rows")
    finally:
        driver.quit()
        server.stop()
        source.close()
