"""Hypothesis strategies: events every user-log format carries losslessly.

``events()`` draws an event of any type (every ``EventType`` member plus
unknown numbers) within the domain where HTCondor's text layout is
lossless: values without newlines or edge blanks, tokens where the layout
splits at blanks, HTCondor's own combinations of optional lines (e.g. a
hold code only with a reason).  Lossy-by-design attributes are not drawn:
000 ``Warnings`` (the reader keeps the writer's prefix) and 033 without an
old value (the 'Setting' form reads back as empty strings).
"""

from __future__ import annotations

import string

from hypothesis import strategies as st

from jobledger.eventcore.codecs.userlog_text_write import usage_text
from jobledger.eventcore.codecs.userlog_values import unparse
from jobledger.eventcore.events import EVENT_CLASSES, EventType, Expr, make_event

_SAFE = string.ascii_letters + string.digits + " .,:;!?'()[]{}<>/@#%&*+=_-|~^$" + "éü→"
TOKEN = st.text(string.ascii_letters + string.digits + "._-@:/<>?&=", min_size=1, max_size=30)
WORD = st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,15}", fullmatch=True)
TEXT = st.text(_SAFE, min_size=1, max_size=60).map(str.strip).filter(bool)
NAT = st.integers(0, 2**31 - 1)
SMALL = st.integers(0, 10**6)
BYTES = st.integers(0, 2**40).map(float)
USAGE = st.tuples(st.integers(0, 10**7), st.integers(0, 10**7)).map(lambda t: usage_text(*t))
REAL = st.integers(-10**6, 10**6).map(lambda i: i / 64)
STR_VALUE = st.text(string.ascii_letters + string.digits + " ._-:/\"é→", max_size=20)
# strings that read like the JSON form of an expression stay strings in every format
STR_VALUE = st.one_of(STR_VALUE, st.sampled_from(["/Expr(RequestMemory * 2)/", "/expr(1)/", "/Expr()/"]))
SCALAR = st.one_of(st.integers(-2**40, 2**40), REAL, st.booleans(), STR_VALUE)
VALUE = st.one_of(SCALAR, st.lists(SCALAR, max_size=3),
                  st.sampled_from([Expr("RequestMemory * 2"), Expr("MY.Cpus + 1")]))
RESERVED = {"mytype", "eventtypenumber", "eventtime", "cluster", "proc", "subproc",
            "eventhead", "slotid", "dslotid"}
NAMES = WORD.filter(lambda n: n.lower() not in RESERVED)
ADS = st.dictionaries(NAMES, VALUE, min_size=1, max_size=4).filter(
    lambda d: len({k.lower() for k in d}) == len(d))
FLAT_ADS = st.dictionaries(NAMES, SCALAR, min_size=1, max_size=3).filter(
    lambda d: len({k.lower() for k in d}) == len(d))


def _opt(strategy):
    return st.one_of(st.none(), strategy)


def _termination(draw, core=True):
    if draw(st.booleans()):
        return {"TerminatedNormally": True, "ReturnValue": draw(st.integers(0, 255))}
    out = {"TerminatedNormally": False, "TerminatedBySignal": draw(st.integers(1, 64))}
    if core and draw(st.booleans()):
        out["CoreFile"] = draw(TOKEN)
    return out


@st.composite
def _submit(draw, cluster_level=False):
    a = {"SubmitHost": draw(TOKEN.filter(lambda t: not t.startswith("...")))}
    if draw(st.booleans()):
        ad = draw(FLAT_ADS)
        a["StructuredNotes"] = ad
        if not cluster_level:
            a["LogNotes"] = unparse(ad, new_syntax=True)
    elif not cluster_level and draw(st.booleans()):
        a["LogNotes"] = draw(TEXT.filter(lambda t: not t.startswith(("[", "DAG Node: ", "WARNING: "))))
        if draw(st.booleans()):
            a["UserNotes"] = draw(TEXT.filter(lambda t: not t.startswith(("[", "DAG Node: ", "WARNING: "))))
    return a


@st.composite
def _execute(draw, node=False):
    a = {"ExecuteHost": draw(TOKEN)}
    if node:
        a["Node"] = draw(SMALL)
    if draw(st.booleans()):
        a["SlotName"] = draw(TOKEN.filter(lambda t: not (t.startswith('"') and t.endswith('"'))))
    if draw(st.booleans()):
        a["ExecuteProps"] = draw(ADS)
    return a


@st.composite
def _evicted(draw):
    a = {"RunRemoteUsage": draw(USAGE), "RunLocalUsage": draw(USAGE),
         "SentBytes": draw(BYTES), "ReceivedBytes": draw(BYTES)}
    mode = draw(st.sampled_from(["cpu", "ckpt", "requeue"]))
    a["Checkpointed"] = mode == "ckpt"
    a["TerminatedAndRequeued"] = mode == "requeue"
    a["TerminatedNormally"] = False
    if mode == "requeue":
        a.update(_termination(draw))
    if draw(st.booleans()):
        a["Reason"] = draw(TEXT)
    if draw(st.booleans()):
        a["ReasonCode"] = draw(st.integers(1, 5000))
        sub = draw(st.integers(0, 100))
        if sub:
            a["ReasonSubCode"] = sub
    return a


TABLE_TAGS = ["Cpus", "Disk", "Memory", "Gpus", "Foo"]


@st.composite
def _terminated(draw, node=False):
    a = _termination(draw)
    if node:
        a.setdefault("ReturnValue", -1)
        a.setdefault("TerminatedBySignal", -1)
        a["Node"] = draw(SMALL)
    for name in ("RunRemoteUsage", "RunLocalUsage", "TotalRemoteUsage", "TotalLocalUsage"):
        a[name] = draw(USAGE)
    for name in ("SentBytes", "ReceivedBytes", "TotalSentBytes", "TotalReceivedBytes"):
        a[name] = draw(BYTES)
    tags = draw(st.lists(st.sampled_from(TABLE_TAGS), unique=True, max_size=3))
    for tag in tags:
        a[tag + "Usage"] = draw(st.one_of(st.integers(0, 10**6),
                                          st.integers(1, 99999).filter(lambda i: i % 100).map(
                                              lambda i: i / 100)))
        a["Request" + tag] = draw(st.integers(0, 10**6))
        a[tag] = draw(st.integers(0, 10**6))
    return a


def _fixed(**fields):
    return st.fixed_dictionaries(fields)


def _optional(**fields):
    return st.fixed_dictionaries({}, optional=fields)


@st.composite
def _remote_error(draw):
    a = {"Daemon": draw(WORD), "ExecuteHost": draw(TOKEN.filter(lambda t: not t.endswith(":")))}
    if draw(st.booleans()):
        a["CriticalError"] = 0
    if draw(st.booleans()):
        a["ErrorMsg"] = "\n".join(draw(st.lists(TEXT.filter(lambda t: not t.startswith("Code ")),
                                                min_size=1, max_size=3)))
    if draw(st.booleans()):
        a["HoldReasonCode"] = draw(st.integers(1, 50))
        a["HoldReasonSubCode"] = draw(st.integers(0, 50))
    return a


@st.composite
def _factory_paused(draw):
    a = {"PauseCode": draw(st.integers(0, 5)), "HoldCode": 0}
    if draw(st.booleans()):
        a["Reason"] = draw(TEXT)
    if a.get("Reason") or a["PauseCode"]:
        a["HoldCode"] = draw(st.integers(0, 50))
    return a


@st.composite
def _post_script(draw):
    a = _termination(draw, core=False)
    if draw(st.booleans()):
        a["DAGNodeName"] = draw(TEXT)
    return a


@st.composite
def _future(draw):
    # A head of "..." is the event's end to HTCondor's FutureEvent::readEvent (it reads the
    # head as empty and stops reading the log at the next "..." line): HTCondor's own writer
    # makes the same bytes, so such a head cannot round-trip anywhere.
    a = {"EventHead": draw(st.one_of(st.just(""), TEXT.filter(lambda t: t.strip() != "...")))}
    a.update(draw(st.dictionaries(NAMES, SCALAR, max_size=3).filter(
        lambda d: len({k.lower() for k in d}) == len(d))))
    return a


BODIES = {
    0: _submit(),
    1: _execute(),
    2: _fixed(ExecuteErrorType=st.sampled_from([0, 1])),   # HTCondor's two error kinds
    3: _fixed(RunRemoteUsage=USAGE, RunLocalUsage=USAGE, SentBytes=BYTES),
    4: _evicted(),
    5: _terminated(),
    6: st.fixed_dictionaries({"Size": SMALL, "ResidentSetSize": SMALL},
                             optional={"MemoryUsage": SMALL, "ProportionalSetSize": SMALL}),
    7: _fixed(Message=TEXT, SentBytes=BYTES, ReceivedBytes=BYTES),
    8: _optional(Info=TEXT),
    9: _optional(Reason=TEXT),
    10: _fixed(NumberOfPIDs=SMALL),
    11: st.just({}),
    12: st.fixed_dictionaries({"HoldReasonCode": st.integers(0, 50),
                               "HoldReasonSubCode": st.integers(0, 50)},
                              optional={"HoldReason": TEXT.filter(lambda t: t != "Reason unspecified")}),
    13: _optional(Reason=TEXT),
    14: _execute(node=True),
    15: _terminated(node=True),
    16: _post_script(),
    21: _remote_error(),
    22: st.builds(lambda r, n, a: {"DisconnectReason": r, "StartdName": n, "StartdAddr": a,
                                   "EventDescription": "Job disconnected, attempting to reconnect"},
                  TEXT, TOKEN, TOKEN),
    23: st.builds(lambda n, a, s: {"StartdName": n, "StartdAddr": a, "StarterAddr": s,
                                   "EventDescription": "Job reconnected"},
                  TOKEN, TOKEN, TOKEN),
    24: st.builds(lambda r, n: {"Reason": r, "StartdName": n,
                                "EventDescription": "Job reconnect impossible: rescheduling job"},
                  TEXT, TOKEN.filter(lambda t: "," not in t)),
    25: _optional(GridResource=TEXT),
    26: _optional(GridResource=TEXT),
    27: _optional(GridResource=TEXT, GridJobId=TEXT),
    28: ADS,
    29: st.just({}),
    30: st.just({}),
    33: _fixed(Attribute=WORD, Value=TOKEN),
    34: _fixed(SkipEventLogNotes=TEXT),
    35: _submit(cluster_level=True),
    36: st.fixed_dictionaries({"NextProcId": SMALL, "NextRow": SMALL,
                               "Completion": st.sampled_from([0, 1, 2, -1, -7])},
                              optional={"Notes": TEXT}),
    37: _factory_paused(),
    38: _optional(Reason=TEXT),
    40: st.fixed_dictionaries({"Type": st.integers(1, 6)},
                              optional={"QueueingDelay": SMALL, "Host": TOKEN}),
    41: _fixed(ReservedSpace=SMALL, ExpirationTime=NAT, UUID=TOKEN, Tag=TOKEN),
    42: _fixed(UUID=TOKEN),
    43: _fixed(Size=SMALL, Checksum=TOKEN, ChecksumType=TOKEN, UUID=TOKEN),
    44: _fixed(Checksum=TOKEN, ChecksumType=TOKEN, Tag=TOKEN),
    45: _fixed(Size=SMALL, Checksum=TOKEN, ChecksumType=TOKEN, Tag=TOKEN),
    46: _optional(Reason=TEXT),
    47: _fixed(Type=TOKEN),
}
FUTURE_NUMBERS = [17, 18, 19, 20, 31, 32, 39] + list(range(100, 112)) + [48, 99, 112, 150]
NUMBERS = sorted(set(BODIES) | set(FUTURE_NUMBERS))
CLUSTER_LEVEL = {35, 36, 37, 38}


def body(number):
    return BODIES.get(number, _future())


@st.composite
def event_of(draw, number, sub_second=False):
    attrs = draw(body(number))
    hidden = {}
    if number == 33:
        hidden["old_value"] = draw(TOKEN)
    if number >= 100:
        cluster, proc = draw(st.integers(1, 64)), draw(st.integers(1, 64))
    elif number in CLUSTER_LEVEL:
        cluster, proc = draw(st.integers(0, 10**6)), -1
    else:
        cluster, proc = draw(st.integers(0, 10**6)), draw(st.integers(0, 10**5))
    subproc = -1 if number in CLUSTER_LEVEL else 0
    ts = draw(st.integers(0, 2**31 - 1))
    if sub_second:
        ts = ts + draw(st.integers(1, 999)) / 1000
    return make_event(number, cluster=cluster, proc=proc, subproc=subproc, timestamp=ts,
                      attrs=attrs, hidden=hidden)


def events(sub_second=False):
    return st.sampled_from(NUMBERS).flatmap(lambda n: event_of(n, sub_second))


assert all(m.value in NUMBERS for m in EventType) and set(BODIES) | set(FUTURE_NUMBERS) >= set(EVENT_CLASSES)
