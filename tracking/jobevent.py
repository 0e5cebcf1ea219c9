"""``JobEvent``: one event of a user log, as ``htcondor2.JobEvent`` shows it.

A read-only, case-insensitive ``Mapping`` over the event's ClassAd with the
same keys and the same Python value types as htcondor2 (nested ads are
``ClassAd``, unevaluated expressions ``ExprTree``, ``undefined``/``error``
the ``Value`` members).  ``.type``, ``.cluster``, ``.proc``, ``.timestamp``
and ``str()``/``repr()`` behave as htcondor2's.  The mapping is built on
first access (values that need the ClassAd engine are converted then).

Beyond htcondor2: ``.raw_text`` (the record exactly as read), ``.offset`` /
``.end_offset`` (its byte range in the file), ``.event`` (the
``eventcore.events`` record).
"""

from __future__ import annotations

from collections.abc import Mapping

from jobledger.eventcore.codecs.userlog import parsed_event
from jobledger.eventcore.codecs.userlog_text_write import render_parts
from jobledger.eventcore.events import EventType, Expr, Special, UNDEFINED, my_type

__all__ = ["JobEvent", "JobEventV1", "JobEventType", "to_binding_value"]

JobEventType = EventType


_ENGINE = None


def _classad():
    global _ENGINE
    if _ENGINE is None:
        from jobledger.eventcore import classad
        _ENGINE = classad
    return _ENGINE


# Nested ads repeat (the same slot's ExecuteProps in event after event; the
# parser hands out one dict per distinct body text): convert each once and
# give every event its own copy.
_AD_CACHE: dict = {}
_SIMPLE = (str, int, float, bool)
_TYPES = {t.value: t for t in EventType}     # EventType(n) is an enum call: ~10x a dict look-up
_MY_TYPES = {n: my_type(n) for n in _TYPES}


def _nested_ad(value: dict):
    hit = _AD_CACHE.get(id(value))
    if hit is None or hit[0] is not value:
        ad = _classad().ClassAd()
        for k, v in value.items():
            ad[k] = to_binding_value(v)
        if len(_AD_CACHE) > 1024:
            _AD_CACHE.clear()
        _AD_CACHE[id(value)] = hit = (value, ad)
    return hit[1].copy()


def to_binding_value(value):
    """An event attribute value as htcondor2 hands it out."""
    if type(value) in _SIMPLE:
        return value
    if isinstance(value, Expr):
        return _classad().ExprTree(value.text)
    if isinstance(value, Special):
        v = _classad().Value
        return v.Undefined if value is UNDEFINED else v.Error
    if isinstance(value, list):
        return [to_binding_value(v) for v in value]
    if isinstance(value, dict):
        return _nested_ad(value)
    return value


def _ids(ad: dict, h) -> None:
    """The id attributes of an event with an unset id or of a non-job (1xx) event."""
    if h.number >= 100:
        ad.pop("Cluster", None)
        ad.pop("Proc", None)
        ad.pop("Subproc", None)
        if h.cluster > 0:
            ad["SlotId"] = h.cluster
        if h.proc > 0:
            ad["DSlotId"] = h.proc
        return
    for name, value in (("Cluster", h.cluster), ("Proc", h.proc), ("Subproc", h.subproc)):
        if value >= 0:
            ad[name] = value
        else:
            ad.pop(name, None)


class JobEvent(Mapping):
    """One event read from a job event log (see the module docstring)."""

    __slots__ = ("_item", "_ad", "_lower", "offset", "end_offset")

    def __init__(self, item, base: int = 0):
        self._item = item
        self._ad = None
        self._lower = None
        self.offset = base + item.offset
        self.end_offset = base + item.end

    # -- htcondor2's properties ------------------------------------------
    @property
    def type(self) -> EventType:
        n = self._item.header.number
        t = _TYPES.get(n)
        return t if t is not None else EventType(n)

    @property
    def cluster(self) -> int:
        h = self._item.header
        return h.cluster if h.number < 100 and h.cluster >= 0 else -1

    @property
    def proc(self) -> int:
        h = self._item.header
        return h.proc if h.number < 100 and h.proc >= 0 else -1

    @property
    def timestamp(self) -> int:
        return self._item.header.epoch

    # -- extras ------------------------------------------------------------
    @property
    def raw_text(self) -> str:
        """The record exactly as it is in the file (terminator included)."""
        return self._item.text

    @property
    def event(self):
        """This event as an ``eventcore.events`` record."""
        return parsed_event(self._item)

    # -- the mapping -------------------------------------------------------
    def _full(self) -> dict:
        ad = self._ad
        if ad is None:
            item = self._item
            h = item.header
            attrs = item.attrs
            ad = attrs.copy()
            for k, v in attrs.items():
                if type(v) not in _SIMPLE:
                    ad[k] = to_binding_value(v)
            n = h.number
            ad["MyType"] = _MY_TYPES.get(n) or my_type(n)
            ad["EventTypeNumber"] = n
            ad["EventTime"] = h.event_time
            if n < 100 and h.cluster >= 0 and h.proc >= 0 and h.subproc >= 0:    # the common case
                ad["Cluster"] = h.cluster
                ad["Proc"] = h.proc
                ad["Subproc"] = h.subproc
            else:
                _ids(ad, h)
            self._ad = ad
        return ad

    def __getitem__(self, key):
        ad = self._full()
        try:
            return ad[key]
        except KeyError:
            if not isinstance(key, str):
                raise
        lower = self._lower
        if lower is None:
            lower = self._lower = {k.lower(): k for k in ad}
        return ad[lower[key.lower()]]

    def __contains__(self, key) -> bool:
        try:
            self[key]
        except KeyError:
            return False
        return True

    def __iter__(self):
        return iter(self._full())

    def __len__(self) -> int:
        return len(self._full())

    def keys(self):
        return self._full().keys()

    def items(self):
        return self._full().items()

    def values(self):
        return self._full().values()

    def get(self, key, default=None):
        try:
            return self[key]
        except KeyError:
            return default

    # -- text --------------------------------------------------------------
    def __str__(self) -> str:
        h = self._item.header
        when = h.event_time[:19].replace("T", " ")
        hidden = self._item.hidden
        if "toe" in hidden:     # htcondor2 reads no ToE tag, so it prints none
            hidden = {k: v for k, v in hidden.items() if k != "toe"}
        return render_parts(h.number, h.cluster, h.proc, h.subproc, h.epoch,
                            self._item.attrs, hidden, time_text=when)

    def __repr__(self) -> str:
        return (f"JobEvent(type={self._item.header.number}, cluster={self.cluster}, "
                f"proc={self.proc}, timestamp={self.timestamp})")


class JobEventV1(JobEvent):
    """The v1 bindings' event (HTCondor 24): a termination carries its ToE tag as the
    ``ToE`` sub-ad (who ended the job, how, when, the exit code or signal), which
    htcondor2 25 leaves out."""

    __slots__ = ()

    def _full(self) -> dict:
        ad = self._ad
        if ad is None:
            ad = super()._full()
            toe = self._item.hidden.get("toe") if self._item.hidden else None
            if toe:
                ad["ToE"] = to_binding_value(toe)
        return ad
