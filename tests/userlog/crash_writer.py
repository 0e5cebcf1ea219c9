"""A user-log writer for the crash tests: ``python crash_writer.py LOG GEN COUNT SEED [FORMAT]``.

Appends events ``(GEN, 0..COUNT-1)`` to LOG, each in one to three ``write()``
calls with short pauses between them, so a SIGKILL can land inside an
event (HTCondor writes an event in one call; a crash between the calls is
the worst case a reader must survive).  ``expected_event(gen, k)`` is the
event it writes, so the test knows every complete one.
"""

from __future__ import annotations

import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from jobledger.eventcore.codecs.userlog import render  # noqa: E402
from jobledger.eventcore.events import make_event  # noqa: E402
from jobledger.tracking.localzone import LOCAL_TZINFO  # noqa: E402

KINDS = [
    (0, {"SubmitHost": "<10.0.4.2:9618?sock=schedd>"}),
    (1, {"ExecuteHost": "<10.0.5.21:9618>", "SlotName": "slot1_1@ep01",
         "ExecuteProps": {"Cpus": 1, "Memory": 2048}}),
    (6, {"Size": 75000, "MemoryUsage": 62, "ResidentSetSize": 63488}),
    (12, {"HoldReason": "via condor_hold (by user alice)", "HoldReasonCode": 1,
          "HoldReasonSubCode": 0}),
    (13, {"Reason": "via condor_release"}),
    (5, {"TerminatedNormally": True, "ReturnValue": 0, "SentBytes": 30125.0,
         "ReceivedBytes": 2203.0, "CpusUsage": 0.98, "RequestCpus": 1, "Cpus": 1}),
]


def expected_event(gen: int, k: int):
    number, attrs = KINDS[k % len(KINDS)]
    return make_event(number, cluster=gen, proc=k, timestamp=1709633472 + k, attrs=attrs)


def main(path: str, gen: int, count: int, seed: int, fmt: str = "text") -> None:
    rng = random.Random(seed)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    print("ready", flush=True)
    for k in range(count):
        data = render(expected_event(gen, k), fmt, tz=LOCAL_TZINFO).encode()
        cuts = sorted(rng.sample(range(1, len(data)), rng.randint(0, 2)))
        start = 0
        for cut in cuts + [len(data)]:
            os.write(fd, data[start:cut])
            start = cut
            time.sleep(rng.random() * 0.002)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), *sys.argv[5:6])
