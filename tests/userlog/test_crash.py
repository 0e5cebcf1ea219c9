"""A writer SIGKILLed at random points: the follower never yields a partial or
corrupt event, and yields every complete event exactly once, in file order."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from jobledger.eventcore.codecs.userlog import render
from tests.userlog.crash_writer import expected_event
from jobledger.tracking.jobeventlog import JobEventLog
from jobledger.tracking.localzone import LOCAL_TZINFO

WRITER = Path(__file__).with_name("crash_writer.py")
COUNT = 400


def drain(jel, out):
    for event in jel.events(stop_after=0):
        out.append(event)


@pytest.mark.slow
@pytest.mark.parametrize("fmt,seed", [("text", 1), ("text", 2), ("text", 3), ("json", 4), ("xml", 5)])
def test_follower_survives_writers_killed_mid_event(tmp_path, fmt, seed):
    rng = random.Random(seed)
    log = tmp_path / "job.log"
    log.touch()
    got = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        jel = JobEventLog(str(log), errors="ignore")
        for gen in range(1, 7):
            child = subprocess.Popen([sys.executable, str(WRITER), str(log), str(gen),
                                      str(COUNT), str(rng.randrange(10**6)), fmt],
                                     stdout=subprocess.PIPE, text=True)
            assert child.stdout.readline() == "ready\n"
            deadline = time.monotonic() + rng.uniform(0.05, 0.4)
            while time.monotonic() < deadline:
                drain(jel, got)
                time.sleep(0.005)
            os.kill(child.pid, signal.SIGKILL)
            child.wait()
            child.stdout.close()
            drain(jel, got)
        drain(jel, got)
        jel.close()

    data = log.read_text()
    complete = []
    for gen in range(1, 7):
        for k in range(COUNT):
            text = render(expected_event(gen, k), fmt, tz=LOCAL_TZINFO)
            at = data.find(text)
            if at >= 0:
                complete.append((at, gen, k, text))
    complete.sort()
    assert complete, "the writers wrote nothing complete"
    assert [(e.cluster, e.proc) for e in got] == [(g, k) for _, g, k, _ in complete]
    for event, (at, gen, k, text) in zip(got, complete):
        assert event.raw_text == (text if fmt == "text" else text[:-1])   # JSON/XML: no newline
        assert event.offset == len(data[:at].encode())
        assert event.event == expected_event(gen, k)
