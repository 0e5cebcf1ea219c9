"""Child processes of the crash tests (run as ``python -m tests.tracking.crash_child``).

``write-logs DIR N SEED``      append the workload's events to user logs, paced
``write-journal DIR N SEED``   append the workload to a pool journal, paced
``track-logs DIR CKPT N SEED`` follow the logs with a checkpoint until every
                               job has its planned final state, then exit 0
``track-journal DIR CKPT N SEED``  the same over the journal

The trackers record each status change they deliver in their durable memo;
the parent SIGKILLs them at random moments and restarts them.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from tests.tracking.contract import matches, note
from tests.tracking.workload import journal_records, userlog_chunks, workload

PACE = 3.0          # seconds the writer takes for the whole workload


def write_logs(directory: Path, load) -> None:
    chunks = userlog_chunks(load, directory)
    pause = PACE / max(1, len(chunks) // 50)
    for i, (path, data) in enumerate(chunks):
        with open(path, "ab") as f:         # O_APPEND, one write per event, like HTCondor
            f.write(data)
        if i % 50 == 49:
            time.sleep(pause)


def write_journal(directory: Path, load) -> None:
    from jobledger.daemons.storage.store import Store
    store = Store(directory, durability="normal")
    groups = journal_records(load)
    pause = PACE / max(1, len(groups) // 50)
    for i, group in enumerate(groups):
        store.append(group)
        if i % 50 == 49:
            time.sleep(pause)
    store.close()


def track(tracker, load) -> None:
    tracker.add_callback(lambda change: tracker.memo.append(note(change)))
    print("ready", flush=True)             # the parent's kill timer starts now
    tracker.wait_until(matches(load), timeout=120)
    tracker.stop()


def main(argv: list[str]) -> int:
    command, directory = argv[0], Path(argv[1])
    if command == "write-logs":
        write_logs(directory, workload(int(argv[2]), int(argv[3])))
    elif command == "write-journal":
        write_journal(directory, workload(int(argv[2]), int(argv[3])))
    elif command == "track-logs":
        from jobledger.tracking.userlogs import UserLogTracker
        load = workload(int(argv[3]), int(argv[4]))
        paths = [directory / load.log_name(c) for c in load.clusters()]
        track(UserLogTracker(paths, checkpoint=argv[2], batch=300, interval=0.02), load)
    elif command == "track-journal":
        from jobledger.tracking.journal import JournalTracker
        load = workload(int(argv[3]), int(argv[4]))
        track(JournalTracker(directory / "journal.sqlite", checkpoint=argv[2], batch=300,
                             interval=0.02), load)
    else:
        raise SystemExit(f"unknown command {command!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
