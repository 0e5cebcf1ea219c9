"""Hourly and daily usage of each User and Project record, folded from the journal.  Pure.

HTCondor's schedd keeps, per User and per Project record, six counters
(``schedd_daily_usage_stats``): ``SlotTime`` (seconds jobs spent running or
transferring output), ``WeightedIdle`` (idle time times the job's RequestCpus, in
units of one hour bucket), ``Launched`` (runs started), ``FailedToStart``,
``Requeued`` (runs evicted back to idle) and ``Held`` (runs ended by a hold).  Each
is a ring of six 4-hour buckets (today) and one of ten days, and a query publishes
``HourlyJobs<Counter> = {newest, ...}`` and ``DailyJobs<Counter> = {yesterday, ...}``
for the counters whose total is not zero.

Buckets are on the schedd's clock as HTCondor's are (``StatsClock``): local standard
time (``TickBias`` is C's ``timezone``, seconds west of UTC, daylight saving ignored)
shifted by ``DAILY_STATS_TICK_MIDNIGHT``; a bucket ``b`` holds local seconds
``[b*14400, (b+1)*14400)``, a day ``d`` ``[d*86400, (d+1)*86400)``, so six buckets
make a day.

The journal holds every event of every job with its time, so the counters are a
projection of it, exact where HTCondor samples: a count goes to the bucket of its
event's time, and a run's or an idle spell's seconds are split at bucket edges (HTCondor
adds the seconds since its last count of the jobs to the bucket current at each count,
up to SCHEDD_INTERVAL late).  What counts (HTCondor's schedd, where its shadow's exit
code decides):

* Launched: an EXECUTE (a shadow started; reconnects write none here);
* Held: a JOB_HELD of a job that was running, transferring or suspended (its run ended
  by a hold); holding an idle job is not counted, as HTCondor counts JOB_SHOULD_HOLD
  shadow exits only;
* Requeued: a JOB_EVICTED (the run evicted, or its job exited and requeued);
* FailedToStart: a SHADOW_EXCEPTION, which here is a run whose starter ended without an
  outcome (HTCondor's JOB_NOT_STARTED and JOB_EXEC_FAILED);
* SlotTime: seconds in status 2 (running) or 6 (transferring output), not suspended;
* WeightedIdle: seconds idle times RequestCpus, divided by the bucket's 14400 seconds.

The rings as published follow HTCondor's ``stats_entry_daily``: a record's hour ring
starts when its record does (its first job, or the stats' start if later) and grows by
one at each bucket edge crossed (and by one for a first count in its first bucket), up
to six; its day ring grows by one at each local midnight, up to ten.
"""

from __future__ import annotations

from typing import Iterable, Mapping

import attrs

from jobledger.eventcore.errors import InvalidTransition
from jobledger.eventcore.projections.jobad import int_attr
from jobledger.eventcore.status import (ACTIVE, EXECUTE, JOB_EVICTED, JOB_HELD, SHADOW_EXCEPTION, JobStatus,
                                        implied_status, next_status)

__all__ = ["StatsClock", "UsageFold", "COUNTERS", "HOUR_BUCKET", "HOUR_BUCKETS", "DAYS", "ring_items"]

HOUR_BUCKET = 4 * 3600            # schedd_daily_usage_stats::hour_bucket_sec
DAY = 24 * 3600
HOUR_BUCKETS = DAY // HOUR_BUCKET
DAYS = 10
# HTCondor's publish order and names (``publish(ad, "Jobs")``)
COUNTERS = ("SlotTime", "WeightedIdle", "Launched", "FailedToStart", "Requeued", "Held")
_SLOT = frozenset({int(JobStatus.RUNNING), int(JobStatus.TRANSFERRING_OUTPUT)})
_IDLE = int(JobStatus.IDLE)
_ACTIVE = frozenset(int(s) for s in ACTIVE)
_KEEP = ("owner", "projectname", "requestcpus")
# a closed spell adds to buckets no further back than this from its end: older ones are
# never shown again (ten days back from the day of its end, and today's buckets)
_REACH = (DAYS + 1) * DAY + HOUR_BUCKET


@attrs.frozen
class StatsClock:
    """HTCondor's ``TickBias`` (seconds west of UTC, standard time) and ``TickMidnight``."""

    bias: int = 0
    midnight: int = 0

    def local(self, when: float) -> float:
        return when - self.bias + self.midnight

    def bucket(self, when: float) -> int:
        return int(self.local(when) // HOUR_BUCKET)

    def day(self, when: float) -> int:
        return int(self.local(when) // DAY)

    def phase(self, when: float) -> int:
        """How far ``when`` is into its bucket (HTCondor's ``CountJobsHourPhase``)."""
        return int(self.local(when) % HOUR_BUCKET)


class _Tally:
    """One record's counters: counter -> bucket -> amount, totals and first counts."""

    __slots__ = ("buckets", "totals", "first_add", "first_seen")

    def __init__(self, first_seen: float):
        self.buckets: dict[str, dict[int, float]] = {name: {} for name in COUNTERS}
        self.totals: dict[str, float] = dict.fromkeys(COUNTERS, 0.0)
        self.first_add: dict[str, float] = {}
        self.first_seen = first_seen

    def add(self, counter: str, bucket: int, amount: float, when: float) -> None:
        row = self.buckets[counter]
        row[bucket] = row.get(bucket, 0.0) + amount
        self.totals[counter] += amount
        self.first_add.setdefault(counter, when)


class _Job:
    __slots__ = ("own", "status", "since")

    def __init__(self, own: dict, status: int, since: float):
        self.own, self.status, self.since = own, status, since


def _subset(ad: Mapping[str, str]) -> dict[str, str]:
    return {name.lower(): text for name, text in ad.items() if name.lower() in _KEEP}


def _string(text: str | None) -> str | None:
    if text is None or len(text) < 2 or text[0] != '"' or text[-1] != '"':
        return None
    return text[1:-1].replace('\\"', '"').replace("\\\\", "\\") or None


class UsageFold:
    """The counters of every User (by Owner) and Project (by ProjectName), folded from
    journal entries in order (``apply``); ``publish(now)`` gives their ad attributes."""

    def __init__(self, clock: StatsClock | None = None):
        self.clock = clock or StatsClock()
        self.position = 0
        self.first_time: float | None = None
        self.clusters: dict[int, dict[str, str]] = {}
        self.jobs: dict[tuple[int, int], _Job] = {}
        self.counts: dict[int, int] = {}      # cluster -> its jobs folded here
        self.tallies: dict[tuple[str, str], _Tally] = {}

    # -- folding ------------------------------------------------------------------------
    def apply_all(self, entries: Iterable) -> None:
        for e in entries:
            self.apply(e)

    def apply(self, e) -> None:
        """Fold one journal entry (``eventcore.journal.Entry``)."""
        self.position = max(self.position, e.position)
        if self.first_time is None:
            self.first_time = e.time
        cluster, proc = e.job.cluster, e.job.proc
        if e.type == "cluster":
            self.clusters.setdefault(cluster, {}).update(_subset(e.payload["ad"]))
        elif e.type == "proc" and proc >= 0:
            self._new_job((cluster, proc), e.payload["ad"], e.time)
        elif e.type == "procs":
            common = e.payload["common"]
            for number, own in zip(e.payload["procs"], e.payload["ads"]):
                ad = dict(common)
                ad.update(own)
                self._new_job((cluster, number), ad, e.time)
        elif e.type == "set":
            self._set(cluster, proc, e.payload)
        elif e.type == "event" and cluster >= 0 and proc >= 0:
            self._event((cluster, proc), e.payload, e.time)
        elif e.type == "leave":
            if self.jobs.pop((cluster, proc), None) is not None:
                left = self.counts.get(cluster, 1) - 1
                self.counts[cluster] = left
                if left <= 0:
                    self.counts.pop(cluster, None)
                    self.clusters.pop(cluster, None)

    def _new_job(self, key: tuple[int, int], ad: Mapping[str, str], when: float) -> None:
        own = _subset(ad)
        status = int_attr(ad, "JobStatus", _IDLE)
        if key not in self.jobs:
            self.counts[key[0]] = self.counts.get(key[0], 0) + 1
        self.jobs[key] = _Job(own, status, when)
        for tally_key in self._keys(key):
            self._tally(tally_key, when)

    def _set(self, cluster: int, proc: int, payload: Mapping) -> None:
        sets = _subset(payload["set"])
        deletes = [name.lower() for name in payload["delete"] if name.lower() in _KEEP]
        if not sets and not deletes:
            return
        if proc < 0:
            target = self.clusters.setdefault(cluster, {})
        else:
            job = self.jobs.get((cluster, proc))
            if job is None:
                return
            target = job.own
        target.update(sets)
        for name in deletes:
            target.pop(name, None)

    def _event(self, key: tuple[int, int], payload: Mapping, when: float) -> None:
        event = payload["event"]
        number = int(event["type"])
        if number >= 100:
            return
        job = self.jobs.get(key)
        if job is None:       # an imported job's first event
            status = implied_status(number)
            if status is None:
                return
            self.counts[key[0]] = self.counts.get(key[0], 0) + 1
            self.jobs[key] = _Job({}, int(status), when)
            return
        before = job.status
        try:
            after = int(next_status(JobStatus(before), number, key))
        except (InvalidTransition, ValueError):
            implied = implied_status(number)
            after = int(implied) if implied is not None else before
        if after != before:
            self._close(key, job, when)
            job.status, job.since = after, when
        counter = None
        if number == EXECUTE and before != after:
            counter = "Launched"
        elif number == JOB_EVICTED and before in _ACTIVE:
            counter = "Requeued"
        elif number == SHADOW_EXCEPTION and before in _ACTIVE:
            counter = "FailedToStart"
        elif number == JOB_HELD and before in _ACTIVE:
            counter = "Held"
        if counter is not None:
            bucket = self.clock.bucket(when)
            for tally_key in self._keys(key):
                self._tally(tally_key, when).add(counter, bucket, 1, when)

    def _close(self, key: tuple[int, int], job: _Job, until: float) -> None:
        for tally_key in self._keys(key):
            self._spell(self._tally(tally_key, job.since), key, job, until)

    def _spell(self, tally: _Tally, key: tuple[int, int], job: _Job, until: float) -> None:
        """Add the job's time in its status from ``job.since`` to ``until``."""
        if job.status in _SLOT:
            counter, scale = "SlotTime", 1.0
        elif job.status == _IDLE:
            counter, scale = "WeightedIdle", _cpus(self._attr(key, "requestcpus")) / HOUR_BUCKET
        else:
            return
        start = job.since
        if until <= start or scale == 0:
            return
        tally.first_add.setdefault(counter, start)
        tally.totals[counter] += (until - start) * scale
        start = max(start, until - _REACH)
        row = tally.buckets[counter]
        while start < until:
            bucket = self.clock.bucket(start)
            edge = (bucket + 1) * HOUR_BUCKET + self.clock.bias - self.clock.midnight
            end = min(edge, until)
            if end <= start:      # float rounding at an edge: step past it
                end = min(start + 1e-6, until)
            row[bucket] = row.get(bucket, 0.0) + (end - start) * scale
            start = end

    # -- what a job counts against --------------------------------------------------------
    def _attr(self, key: tuple[int, int], name: str) -> str | None:
        job = self.jobs.get(key)
        if job is not None and name in job.own:
            return job.own[name]
        return self.clusters.get(key[0], {}).get(name)

    def _keys(self, key: tuple[int, int]) -> list[tuple[str, str]]:
        out = []
        owner = _string(self._attr(key, "owner"))
        if owner:
            out.append(("user", owner))
        project = _string(self._attr(key, "projectname"))
        if project:
            out.append(("project", project))
        return out

    def _tally(self, key: tuple[str, str], when: float) -> _Tally:
        tally = self.tallies.get(key)
        if tally is None:
            tally = self.tallies[key] = _Tally(when)
        return tally

    # -- publishing -----------------------------------------------------------------------
    def publish(self, now: float, start: float) -> dict[tuple[str, str], dict[str, str]]:
        """(kind, name) -> the ``HourlyJobs*`` and ``DailyJobs*`` attributes (ClassAd
        expression text) of each record with a counter not zero, as at ``now``; ``start``:
        when the stats began (the schedd's start; the journal's first record if earlier)."""
        open_spells = self._open_spells(now)
        out: dict[tuple[str, str], dict[str, str]] = {}
        for key, tally in self.tallies.items():
            extra = open_spells.get(key)
            ad: dict[str, str] = {}
            ring_start = max(start, tally.first_seen)
            for counter in COUNTERS:
                total = tally.totals[counter] + (extra.totals[counter] if extra else 0.0)
                if total == 0:
                    continue
                first = tally.first_add.get(counter)
                if extra is not None and counter in extra.first_add:
                    first = min(first, extra.first_add[counter]) if first is not None else extra.first_add[counter]
                hours, days = ring_items(self.clock, now, ring_start, first)
                row = dict(tally.buckets[counter])
                if extra is not None:
                    for bucket, amount in extra.buckets[counter].items():
                        row[bucket] = row.get(bucket, 0.0) + amount
                now_bucket, today = self.clock.bucket(now), self.clock.day(now)
                hourly = [row.get(now_bucket - k, 0.0) for k in range(hours)]
                daily = []
                for k in range(days):
                    first_bucket = (today - 1 - k) * HOUR_BUCKETS
                    daily.append(sum(row.get(first_bucket + i, 0.0) for i in range(HOUR_BUCKETS)))
                ad[f"HourlyJobs{counter}"] = _array(hourly, counter)
                ad[f"DailyJobs{counter}"] = _array(daily, counter)
            if ad:
                out[key] = ad
        return out

    def _open_spells(self, now: float) -> dict[tuple[str, str], _Tally]:
        """The time of jobs idle or running now, up to ``now``, as tallies to add."""
        extra: dict[tuple[str, str], _Tally] = {}
        for key, job in self.jobs.items():
            if job.status not in _SLOT and job.status != _IDLE:
                continue
            for tally_key in self._keys(key):
                tally = extra.get(tally_key)
                if tally is None:
                    tally = extra[tally_key] = _Tally(job.since)
                self._spell(tally, key, job, now)
        return extra

    def prune(self, now: float) -> None:
        """Drop buckets no query at ``now`` or later shows (memory stays bounded)."""
        oldest = (self.clock.day(now) - 1 - DAYS) * HOUR_BUCKETS
        for tally in self.tallies.values():
            for counter, row in tally.buckets.items():
                for bucket in [b for b in row if b < oldest]:
                    del row[bucket]


def ring_items(clock: StatsClock, now: float, ring_start: float, first_add: float | None) -> tuple[int, int]:
    """How many items HTCondor's hour and day rings hold at ``now``: the ring began at
    ``ring_start`` (its record's creation) and was first added to at ``first_add``.  A
    bucket edge crossed pushes an hour item, a first add into an empty ring another; a
    local midnight crossed pushes a day item."""
    crossed = max(clock.bucket(now) - clock.bucket(ring_start), 0)
    first_in_start = first_add is not None and clock.bucket(first_add) <= clock.bucket(ring_start)
    hours = min(HOUR_BUCKETS, crossed + (1 if first_in_start or crossed == 0 else 0))
    days = min(DAYS, max(clock.day(now) - clock.day(ring_start), 0))
    return hours, days


def _cpus(text: str | None) -> int:
    if text is None:
        return 1
    try:
        return int(float(text))
    except ValueError:
        return 1


def _array(values: list[float], counter: str) -> str:
    """HTCondor's ``PublishArray``: ``{v0,v1,...}``, a double as C++'s ``std::to_string``."""
    if counter == "WeightedIdle":
        return "{" + ",".join(f"{v:f}" for v in values) + "}"
    return "{" + ",".join(str(int(round(v))) for v in values) + "}"
