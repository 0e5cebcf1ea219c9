"""Properties: any text parses or raises SubmitError; the fast path equals the slow one."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobledger.eventcore.errors import SubmitError
from jobledger.eventcore.submit import StaticEnvironment, Submit, plan_cluster

FRAGMENTS = [
    "\n", "\n", "\n", " ", "=", " = ", "a", "B", "x", "item", "executable", "arguments", "output",
    "request_memory", "+Attr", "MY.", "$(", ")", "$(x)", "$(Item)", "$(ProcId)", "$$(", "$(DOLLAR)",
    ":", "$ENV(", "$INT(", "$REAL(", "$SUBSTR(", "$CHOICE(", "$F", "$Fnx(", "$EVAL(", "$STRING(",
    "$RANDOM_INTEGER(", "$RANDOM_CHOICE(", ",", "%d", "queue", "queue ", " in ", " from ", " matching ",
    "(", "[", "]", "1", "-1", "2 * 3", "\\", "\\\n", "#", "@=END", "@END", "if ", "elif ", "else",
    "endif", "defined ", "include : ", "version >= 8", "true", '"', "'", "\t", "items.txt", "*.txt",
    "hold = true", "max_retries = 3", "universe = ", "vanilla", "\x1f", "\x00", "{", "}",
]

PIECES = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=3)), max_size=12).map("".join)
NAMES = st.sampled_from(["a", "x", "Item", "executable", "arguments", "output", "+Attr", "MY.b", "hold",
                         "request_memory", "priority", "environment", "queue", "if", "include"])
LINE = st.one_of(
    st.tuples(NAMES, st.sampled_from([" = ", "=", " @=END\n", " : "]), PIECES).map("".join),
    st.tuples(st.sampled_from(["queue ", "if ", "elif ", "else", "endif", "include : ", "@END", "#"]),
              PIECES).map("".join),
    PIECES,
)
TEXT = st.lists(LINE, max_size=12).map("\n".join)
ENV = StaticEnvironment(files={"items.txt": "a 1\nb 2\n", "one.txt": "x\n"}, variables={"V": "v"},
                        cwd="/submit")


def _exercise(sub: Submit) -> None:
    str(sub)
    for key in list(sub.keys()):
        try:
            sub.expand(key)
        except KeyError:
            pass
    try:
        rows = sub.itemdata()
        if rows is not None:
            list(rows)
    except SubmitError:
        pass
    try:
        plan = plan_cluster(sub, ENV, cluster_id=3, qdate=1700000000, owner="me")
        assert plan.num_procs >= 1
    except SubmitError:
        pass


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(TEXT, st.booleans())
def test_any_text_parses_or_raises_submit_error(text, with_executable):
    if with_executable:
        text = "executable = /bin/true\n" + text
    try:
        sub = Submit.using(ENV, text)
    except SubmitError:
        return
    _exercise(sub)


COMMANDS = st.sampled_from([
    "arguments = $(x) $(ProcId)", "arguments = \"$(x) 'a b'\"", "output = out.$(Cluster).$(Process)",
    "error = $(x:none)", "log = log.$(Step)", "+Tag = \"$(x)\"", "+Num = $(ProcId) + 1",
    "priority = $(ProcId)", "request_memory = $INT(ProcId)", "environment = A=$(x);B=2",
    "transfer_input_files = $(x), common.txt", "hold = $CHOICE(Step,false,true)", "batch_name = b$(Row)",
    "request_cpus = 1", "description = $SUBSTR(x,1)", "rank = Memory", "max_retries = $(Step)",
    "y = $(x)$(x)", "arguments = $(y)", "initialdir = /submit",
    "transfer_input_files = https://x/$(x)", "requirements = Memory > $(ProcId)", "request_gpus = $(Step)",
    "output_destination = osdf:///$(x)", "arguments = $INT(ProcId,%04d)-$REAL(Step,%.1f)",
    "output = $INT(Row,%x).$REAL(ItemIndex)", "error = $INT(x,%d)", "batch_name = $INT(Step,%s)",
])
QUEUES = st.sampled_from([
    "queue 3", "queue x in (a b c)", "queue 2 x in (p, q)", "queue x,y from items.txt",
    "queue x from (\n  a b\n  c\n)", "queue x in [1:] (a b c d)", "queue x in (a$(DOLLAR)b c)",
])


@settings(max_examples=150, deadline=None)
@given(st.lists(COMMANDS, min_size=1, max_size=8), QUEUES)
def test_fast_path_equals_full_expansion(commands, queue):
    text = "executable = /bin/true\n" + "\n".join(commands) + "\n" + queue + "\n"
    sub = Submit.using(ENV, text)
    outcomes = []
    for fast in (True, False):
        try:
            outcomes.append(plan_cluster(sub, ENV, cluster_id=7, qdate=1700000000, owner="me", fast=fast))
        except SubmitError as exc:
            outcomes.append(exc)
    fast, slow = outcomes
    # Both refuse or neither does (with several bad commands they may name different ones).
    assert isinstance(fast, SubmitError) == isinstance(slow, SubmitError), (fast, slow)
    if isinstance(fast, SubmitError):
        return
    assert fast.num_procs == slow.num_procs
    for i in range(fast.num_procs):
        assert fast.merged(i) == slow.merged(i)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="ab1 ,\t\x1f", max_size=8), max_size=5), st.integers(1, 4))
def test_split_rows_equals_split_row(texts, n):
    from jobledger.eventcore.submit.queue import split_row, split_rows
    names = ("a", "b", "c", "d")[:n]
    assert split_rows(texts, names) == [split_row(t, names) for t in texts]
