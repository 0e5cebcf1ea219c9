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
  outcome (HTCondor's JOB_NOT_STARTED and JOB_EXEC_FAILED).  A starter killed after it
  started the job ends the same way here and is counted too; HTCondor's shadow would
  try to reconnect, and a failed reconnect is not counted there;
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
from jobledger.eventcore.status import (ACTIVE, EXECUTE, JOB_EVICTED, JOB_HELD, SHADOW_EXCEPTION, STATUS_EVENTS,
                                        SUBMIT, JobStatus, implied_status, next_status)

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
    __slots__ = ("own", "status", "since", "keys", "rate")

    def __init__(self, own: dict | None, status: int, since: float):
        self.own, self.status, self.since = own, status, since     # own: None when empty
        self.keys: tuple[tuple[str, str], ...] = ()
        self.rate = 0.0       # what a second of its open spell adds (0: no spell open)


def _subset(ad: Mapping[str, str]) -> dict[str, str]:
    return {name.lower(): text for name, text in ad.items() if name.lower() in _KEEP}


def _string(text: str | None) -> str | None:
    if text is None or len(text) < 2 or text[0] != '"' or text[-1] != '"':
        return None
    return text[1:-1].replace('\\"', '"').replace("\\\\", "\\") or None


def _counter(status: int) -> str | None:
    return "SlotTime" if status in _SLOT else "WeightedIdle" if status == _IDLE else None


class UsageFold:
    """The counters of every User (by Owner) and Project (by ProjectName), folded from
    journal entries in order (``apply``); ``publish(now)`` gives their ad attributes.

    The spells still open (jobs idle or running now) are kept summed by record, counter
    and the bucket they began in -- count, sum of rates, sum of rate x start -- so a
    publish costs the records and buckets, not the jobs."""

    def __init__(self, clock: StatsClock | None = None):
        self.clock = clock or StatsClock()
        self.position = 0
        self.first_time: float | None = None
        self.clusters: dict[int, dict[str, str]] = {}
        self.jobs: dict[tuple[int, int], _Job] = {}
        self.counts: dict[int, int] = {}      # cluster -> its jobs folded here
        self.tallies: dict[tuple[str, str], _Tally] = {}
        # (record, counter) -> bucket a spell began in -> [spells, sum of rates, sum of rate x start]
        self.open: dict[tuple[tuple[str, str], str], dict[int, list[float]]] = {}
        self._key_cache: dict[tuple[str | None, str | None], tuple[tuple[str, str], ...]] = {}

    # -- folding ------------------------------------------------------------------------
    def apply_all(self, entries: Iterable) -> None:
        for e in entries:
            self.apply(e)

    def apply(self, e) -> None:
        """Fold one journal entry (``eventcore.journal.Entry``)."""
        self.position = max(self.position, e.position)
        if self.first_time is None:
            self.first_time = e.time
        kind, cluster, proc = e.type, e.job.cluster, e.job.proc
        if kind == "event":
            if cluster >= 0 and proc >= 0:
                self._event((cluster, proc), e.payload, e.time)
        elif kind == "procs":
            common = e.payload["common"]
            shared = _subset(common)
            status = int_attr(common, "JobStatus", _IDLE)
            for number, own in zip(e.payload["procs"], e.payload["ads"]):
                found = _subset(own)
                mine = dict(shared, **found) if found else (dict(shared) if shared else None)
                self._add_job((cluster, number), mine, int_attr(own, "JobStatus", status), e.time)
        elif kind == "cluster":
            self.clusters.setdefault(cluster, {}).update(_subset(e.payload["ad"]))
        elif kind == "proc" and proc >= 0:
            ad = e.payload["ad"]
            self._add_job((cluster, proc), _subset(ad) or None, int_attr(ad, "JobStatus", _IDLE), e.time)
        elif kind == "set":
            self._set(cluster, proc, e.payload, e.time)
        elif kind == "leave":
            job = self.jobs.pop((cluster, proc), None)
            if job is not None:
                self._close(job, e.time)
                left = self.counts.get(cluster, 1) - 1
                self.counts[cluster] = left
                if left <= 0:
                    self.counts.pop(cluster, None)
                    self.clusters.pop(cluster, None)

    def _add_job(self, key: tuple[int, int], own: dict[str, str] | None, status: int, when: float) -> None:
        old = self.jobs.get(key)
        if old is None:
            self.counts[key[0]] = self.counts.get(key[0], 0) + 1
        else:
            self._close(old, when)
        job = self.jobs[key] = _Job(own, status, when)
        self._open(key, job, when)

    def _set(self, cluster: int, proc: int, payload: Mapping, when: float) -> None:
        sets = _subset(payload["set"])
        deletes = [name.lower() for name in payload["delete"] if name.lower() in _KEEP]
        if not sets and not deletes:
            return
        if proc < 0:
            target = self.clusters.setdefault(cluster, {})
            touched = [(key, job) for key, job in self.jobs.items() if key[0] == cluster]
        else:
            job = self.jobs.get((cluster, proc))
            if job is None:
                return
            if job.own is None:
                job.own = {}
            target, touched = job.own, [((cluster, proc), job)]
        for key, job in touched:       # a spell open goes on under the owner, project, weight now set
            self._close(job, when)
        target.update(sets)
        for name in deletes:
            target.pop(name, None)
        for key, job in touched:
            job.since = when
            self._open(key, job, when)

    def _event(self, key: tuple[int, int], payload: Mapping, when: float) -> None:
        event = payload["event"]
        number = int(event["type"])
        if number >= 100 or number not in STATUS_EVENTS:
            return        # informational, or an execution point's: moves no job
        job = self.jobs.get(key)
        if job is None:       # an imported job's first event
            status = implied_status(number)
            if status is None:
                return
            self.counts[key[0]] = self.counts.get(key[0], 0) + 1
            job = self.jobs[key] = _Job(None, int(status), when)
            self._open(key, job, when)
            return
        before = job.status
        if number == SUBMIT:
            return
        try:
            after = int(next_status(JobStatus(before), number, key))
        except (InvalidTransition, ValueError):
            implied = implied_status(number)
            after = int(implied) if implied is not None else before
        if after != before:
            self._close(job, when)
            job.status, job.since = after, when
            self._open(key, job, when, rekey=False)
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
            for tally_key in job.keys:
                self._tally(tally_key, when).add(counter, bucket, 1, when)

    # -- spells: a job's time in one status ---------------------------------------------------
    def _open(self, key: tuple[int, int], job: _Job, when: float, rekey: bool = True) -> None:
        """The job's records (``rekey``: found again from its ad), and its spell from
        ``when`` on, if its status counts time."""
        if rekey:
            job.keys = self._keys(key)
            for tally_key in job.keys:
                self._tally(tally_key, when)
        counter = _counter(job.status)
        job.rate = 0.0
        if counter is None or not job.keys:
            return
        job.rate = 1.0 if counter == "SlotTime" else _cpus(self._attr(key, "requestcpus")) / HOUR_BUCKET
        if not job.rate:
            return
        bucket = self.clock.bucket(when)
        for tally_key in job.keys:
            row = self.open.setdefault((tally_key, counter), {}).setdefault(bucket, [0, 0.0, 0.0])
            row[0] += 1
            row[1] += job.rate
            row[2] += job.rate * when

    def _close(self, job: _Job, until: float) -> None:
        """End the job's open spell at ``until``: its time goes to its records' buckets."""
        counter = _counter(job.status)
        if counter is None or not job.rate:
            return
        bucket = self.clock.bucket(job.since)
        for tally_key in job.keys:
            rows = self.open.get((tally_key, counter), {})
            row = rows.get(bucket)
            if row is not None:
                row[0] -= 1
                row[1] -= job.rate
                row[2] -= job.rate * job.since
                if row[0] <= 0:
                    del rows[bucket]
            self._add_spell(self._tally(tally_key, job.since), counter, job.since, until, job.rate)
        job.rate = 0.0

    def _add_spell(self, tally: _Tally, counter: str, start: float, until: float, rate: float) -> None:
        if until <= start or not rate:
            return
        tally.first_add.setdefault(counter, start)
        tally.totals[counter] += (until - start) * rate
        start = max(start, until - _REACH)
        row = tally.buckets[counter]
        while start < until:
            bucket = self.clock.bucket(start)
            end = min(self._edge(bucket + 1), until)
            if end <= start:      # float rounding at an edge: step past it
                end = min(start + 1e-6, until)
            row[bucket] = row.get(bucket, 0.0) + (end - start) * rate
            start = end

    def _edge(self, bucket: int) -> float:
        """The time bucket ``bucket`` begins."""
        return bucket * HOUR_BUCKET + self.clock.bias - self.clock.midnight

    # -- what a job counts against --------------------------------------------------------
    def _attr(self, key: tuple[int, int], name: str) -> str | None:
        job = self.jobs.get(key)
        if job is not None and job.own and name in job.own:
            return job.own[name]
        return self.clusters.get(key[0], {}).get(name)

    def _keys(self, key: tuple[int, int]) -> tuple[tuple[str, str], ...]:
        texts = (self._attr(key, "owner"), self._attr(key, "projectname"))
        found = self._key_cache.get(texts)
        if found is None:
            owner, project = _string(texts[0]), _string(texts[1])
            found = tuple([("user", owner)] if owner else []) + tuple([("project", project)] if project else [])
            if len(self._key_cache) < 10_000:
                self._key_cache[texts] = found
        return found

    def _tally(self, key: tuple[str, str], when: float) -> _Tally:
        tally = self.tallies.get(key)
        if tally is None:
            tally = self.tallies[key] = _Tally(when)
        return tally

    # -- publishing -----------------------------------------------------------------------
    def publish(self, now: float, start: float) -> dict[tuple[str, str], dict[str, str]]:
        """(kind, name) -> the ``HourlyJobs*`` and ``DailyJobs*`` attributes (ClassAd
        expression text) of each record with a counter not zero, as at ``now``; ``start``:
        when the stats began (HTCondor's rings begin at its schedd's start)."""
        now_bucket, today = self.clock.bucket(now), self.clock.day(now)
        oldest = (today - 1 - DAYS) * HOUR_BUCKETS
        out: dict[tuple[str, str], dict[str, str]] = {}
        for key, tally in self.tallies.items():
            ad: dict[str, str] = {}
            ring_start = max(start, tally.first_seen)
            for counter in COUNTERS:
                row, total, first = self._with_open(key, counter, tally, now, now_bucket, oldest)
                if total == 0:
                    continue
                hours, days = ring_items(self.clock, now, ring_start, first)
                hourly = [row.get(now_bucket - k, 0.0) for k in range(hours)]
                daily = [sum(row.get((today - 1 - k) * HOUR_BUCKETS + i, 0.0) for i in range(HOUR_BUCKETS))
                         for k in range(days)]
                ad[f"HourlyJobs{counter}"] = _array(hourly, counter)
                ad[f"DailyJobs{counter}"] = _array(daily, counter)
            if ad:
                out[key] = ad
        return out

    def _with_open(self, key: tuple[str, str], counter: str, tally: _Tally, now: float, now_bucket: int,
                   oldest: int) -> tuple[dict[int, float], float, float | None]:
        """A counter's buckets, total and first add with the open spells counted up to ``now``."""
        row, total, first = tally.buckets[counter], tally.totals[counter], tally.first_add.get(counter)
        spells = self.open.get((key, counter))
        if not spells:
            return row, total, first
        row = dict(row)
        for began, (_, rates, weighted_starts) in spells.items():
            total += rates * now - weighted_starts
            began_at = self._edge(began)
            first = began_at if first is None else min(first, began_at)
            if began == now_bucket:
                row[began] = row.get(began, 0.0) + rates * now - weighted_starts
                continue
            row[began] = row.get(began, 0.0) + rates * self._edge(began + 1) - weighted_starts
            for bucket in range(max(began + 1, oldest), now_bucket):
                row[bucket] = row.get(bucket, 0.0) + rates * HOUR_BUCKET
            row[now_bucket] = row.get(now_bucket, 0.0) + rates * (now - self._edge(now_bucket))
        return row, total, first

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
