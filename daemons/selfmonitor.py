"""What DaemonCore publishes about a daemon itself: duty cycle and ``MonitorSelf*``.

Every HTCondor daemon ad carries these; monitoring tools (the ``htcondor``
CLI's ``ap status``/``cm status``) compute a daemon's health from
``RecentDaemonCoreDutyCycle``.  Here they are measured, not invented:

- ``DaemonCoreDutyCycle``: the share of the daemon's life it spent working
  (its CPU time over its wall time, at most 1); ``RecentDaemonCoreDutyCycle``
  the same over the last ``DCSTATISTICS_WINDOW_SECONDS`` (the samples are
  taken each time the ad is built);
- ``MonitorSelfCPUUsage`` (percent since the previous sample),
  ``MonitorSelfImageSize`` / ``MonitorSelfResidentSetSize`` (KB, from
  /proc/self/status), ``MonitorSelfAge`` (seconds alive),
  ``MonitorSelfRegisteredSocketCount`` (open sockets), ``MonitorSelfTime``,
  ``MyCurrentTime``, the ``StatsLifetime`` family.
"""

from __future__ import annotations

import collections
import os
import threading
import time

from jobledger.daemons.machine_facts import proc_kb

DEFAULT_WINDOW = 1200.0  # DCSTATISTICS_WINDOW_SECONDS


def _cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system


def _memory_kb() -> tuple[int, int]:
    kb = proc_kb("/proc/self/status", ("VmSize", "VmRSS"))
    return kb["VmSize"], kb["VmRSS"]


def _socket_count() -> int:
    count = 0
    try:
        for fd in os.listdir("/proc/self/fd"):
            try:
                if os.readlink(f"/proc/self/fd/{fd}").startswith("socket:"):
                    count += 1
            except OSError:
                continue
    except OSError:
        pass
    return count


class RecentCount:
    """A count and its recent part, as DaemonCore's ``stats_entry_recent`` keeps them:
    the recent window (20 minutes) is a ring of quanta (4 minutes), so an event leaves
    the recent count with the quantum it fell in, a quantum after the window."""

    def __init__(self, window: float = 1200.0, quantum: float = 240.0):
        self.total = 0
        self._quantum = quantum
        self._slots = max(1, round(window / quantum))
        self._buckets: dict[int, int] = {}
        self._lock = threading.Lock()

    def add(self, now: float, amount: int = 1) -> None:
        key = int(now // self._quantum)
        with self._lock:
            self.total += amount
            self._buckets[key] = self._buckets.get(key, 0) + amount
            self._forget(key)

    def recent(self, now: float) -> int:
        key = int(now // self._quantum)
        with self._lock:
            self._forget(key)
            return sum(self._buckets.values())

    def _forget(self, key: int) -> None:
        for old in [k for k in self._buckets if k <= key - self._slots]:
            del self._buckets[old]


class SelfMonitor:
    """Samples of (wall time, CPU time) and the DaemonCore attributes built from them."""

    def __init__(self, started: float, window: float = DEFAULT_WINDOW):
        self.started = started
        self.window = window
        self._start_cpu = _cpu_seconds()
        self._samples: collections.deque = collections.deque([(started, self._start_cpu)])
        self._lock = threading.Lock()

    def attrs(self) -> dict:
        now, cpu = time.time(), _cpu_seconds()
        with self._lock:
            last_wall, last_cpu = self._samples[-1]
            while len(self._samples) > 1 and now - self._samples[0][0] > self.window:
                self._samples.popleft()
            first_wall, first_cpu = self._samples[0]
            if now - last_wall >= 1.0:  # at most one sample a second: the deque stays small
                self._samples.append((now, cpu))
        life = now - self.started
        recent_span = now - first_wall
        size, rss = _memory_kb()
        return {
            "MyCurrentTime": int(now),
            "DaemonCoreDutyCycle": _ratio(cpu - self._start_cpu, life),
            "RecentDaemonCoreDutyCycle": _ratio(cpu - first_cpu, recent_span),
            "StatsLifetime": int(life),
            "StatsLastUpdateTime": int(now),
            "RecentStatsLifetime": int(min(recent_span, self.window)),
            "RecentWindowMax": int(self.window),
            "MonitorSelfTime": int(now),
            "MonitorSelfAge": int(life),
            "MonitorSelfCPUUsage": 100.0 * _ratio(cpu - last_cpu, now - last_wall, cap=None),
            "MonitorSelfImageSize": size,
            "MonitorSelfResidentSetSize": rss,
            "MonitorSelfRegisteredSocketCount": _socket_count(),
            "MonitorSelfSecuritySessions": 0,
        }


def _ratio(part: float, whole: float, cap: float | None = 1.0) -> float:
    if whole <= 0:
        return 0.0
    value = max(0.0, part / whole)
    return min(value, cap) if cap is not None else value
