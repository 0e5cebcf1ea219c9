"""Requirements analysis: why an expression rejects the ads it is matched against.

What ``condor_q -better-analyze`` prints about a job's Requirements, after
HTCondor's match analysis (expr_analyze.cpp), in our own code:

* ``clauses(node)`` cuts an expression into numbered steps: every comparison,
  every ``&&``/``||``/``!``, and each leaf of a logical operator (a bare
  attribute, a function call, a literal).  Parentheses add no step.
* ``numbered(ad, attr)`` lists the steps (``[2] : [0] && [1]``).
* ``reduce(ad, attr, targets)`` counts, per step, the target ads for which the
  step is true (in a match context, MY = ``ad``, TARGET = the target), and
  prunes what does not decide the outcome: steps that read only the ad itself
  are constants ("always"/"never"), a logical step that counts the same as
  one of its sides is that side, the other side of a deciding ``&&`` is left
  out.  Targets marked as drained count in a second column.
* ``pretty(text, indent, width)`` wraps an expression after ``&&``/``||``.
* ``my_references`` / ``target_references`` / ``attr_lines`` give the
  attribute listings printed around the table.
"""

from __future__ import annotations

import attrs

from . import evaluate as E
from . import nodes as N
from .ad import ClassAd, ExprTree
from .unparse import unparse, unparse_value
from .values import UNDEF

COMPARISONS = frozenset({"<", "<=", "!=", "==", ">=", ">", "=?=", "=!="})
LOGIC = {"||": 2, "&&": 3}
SCOPES = {"target", "other"}
OWN = {"my", "self"}
# What the constant-propagation labels append to a step: unset, false, true, not constant ("")
_TRUTHY = ["?", "F", "T", "", "u", "e", "?", "f", "t", "s"]


class AnalysisError(ValueError):
    """An expression too deep or too odd to analyze."""


@attrs.define
class Clause:
    node: N.Node
    label: str = ""
    logic: int = 0            # 1 = !, 2 = ||, 3 = &&
    left: int = -1
    right: int = -1
    grip: int = -1
    variable: bool = False    # depends on the time
    effective: int = -1       # this step reduces to that one
    constant: bool = False    # reads nothing of the target
    hard: int = -1            # the constant's truth (0/1)
    dont_care: bool = False
    unparsed: str = ""
    counts: list = attrs.field(factory=lambda: [0, 0])

    def make_label(self) -> str | None:
        if self.logic == 1:
            return None if self.left < 0 else f" ! [{self.left}]"
        if self.logic in (2, 3):
            return f"[{self.left}] {'||' if self.logic == 2 else '&&'} [{self.right}]"
        return None

    def text(self) -> str:
        if not self.label:
            made = self.make_label()
            if made is not None:
                self.label = made
            else:
                return self.unparsed or "empty"
        return self.label


def _parts(node):
    """(push, logic, must_store of children, children as (left, right, grip), label, time-dependent)."""
    t = type(node)
    if t is N.Binary:
        if node.op in COMPARISONS:
            return True, 0, False, (node.left, node.right, None), "", False
        if node.op in LOGIC:
            return True, LOGIC[node.op], True, (node.left, node.right, None), "", False
        return None, 0, False, (node.left, node.right, None), "", False
    if t is N.Unary:
        if node.op == "!":
            return True, 1, True, (node.operand, None, None), "", False
        return None, 0, False, (node.operand, None, None), "", False
    if t is N.Paren:
        return False, 0, True, (node.expr, None, None), "", False
    if t is N.Select:
        return None, 0, False, (node.expr, None, None), "", False
    if t is N.Subscript:
        return None, 0, False, (node.expr, node.index, None), "", False
    if t is N.Elvis:
        return None, 0, False, (node.left, node.right, None), "", False
    if t is N.Cond:
        return None, 0, False, (node.cond, node.then, node.other), "", False
    if t is N.Attr:
        return None, 0, False, (None, None, None), "", node.name.lower() == "currenttime"
    if t is N.Call:
        return None, 0, False, (None, None, None), node.name + "()", \
            node.name.lower() == "time" and not node.args
    if t is N.Literal:
        return None, 0, False, (None, None, None), unparse_value(node.value), False
    return None, 0, False, (None, None, None), "", False


def clauses(node: N.Node) -> list[Clause]:
    """The numbered steps of ``node``, in evaluation order (left before right)."""
    out: list[Clause] = []
    try:
        _walk(node, out, True)
    except RecursionError:
        raise AnalysisError("the expression is nested too deeply to analyze") from None
    return out


def _walk(node, out: list[Clause], must_store: bool) -> tuple[int, bool]:
    push, logic, store_children, kids, label, variable = _parts(node)
    if push is None:
        push = must_store
    if type(node) is N.Call and must_store:
        label = unparse(node) or label
    left, right, grip = kids
    ix = [-1, -1, -1]
    for i, kid in enumerate(kids):
        if kid is not None:
            ix[i], kid_variable = _walk(kid, out, store_children)
            variable = variable or kid_variable
    if push:
        if left is not None and right is None and grip is None and ix[0] >= 0:
            me = ix[0]
            if me == len(out) - 1 and logic == 1:     # ! rewrites the step below it
                last = out[-1]
                last.node, last.logic = node, 1
                if last.label:
                    last.label = "! " + last.label
            return me, variable
        out.append(Clause(node, label, logic, ix[0], ix[1], ix[2], variable))
        return len(out) - 1, variable
    if left is not None and right is None and grip is None:
        return ix[0], variable
    return -1, variable


def step_label(index: int, width: int) -> str:
    return f"[{index}]      "[:width + 2]


def numbered(ad: ClassAd, attr: str = "Requirements") -> str:
    """Each step of ``attr`` on a line: ``    [0]    : TARGET.Arch == "X86_64"``."""
    expr = ad.lookup(attr) if attr in ad else None
    if expr is None:
        return ""
    lines = []
    for i, step in enumerate(clauses(expr.node)):
        text = step.make_label()
        if text is None:
            text = unparse(step.node) if step.left < 0 else f"[{step.left}] {unparse(step.node)}"
        lines.append(f"    {step_label(i, 4)} : {text}\n")
    return "".join(lines)


def pretty(text: str, indent: int, width: int) -> str:
    """``text`` with a line break after the ``&&``/``||`` last seen before each line
    would pass ``width``; new lines start indented by the parentheses open there."""
    if indent > width:
        indent = width * 2 // 3
    chars = list(text)
    out: list[str] = []
    line_start = 0                  # index in out where the current line starts
    last_and = 0                    # index in out of the char after the last && / ||
    indent_at_and = indent
    pos = indent
    prev = ""
    was_and = False
    for ch in chars:
        is_and = ch in "&|" and prev == ch
        if not is_and:
            if ch == "(":
                indent += 2
            elif ch == ")":
                indent -= 2
        if pos >= width and last_and != line_start:
            out[last_and] = "\n"
            line_start = last_and = last_and + 1
            pos = 0                 # (HTCondor counts from 0 here when it adds no indent)
            if indent_at_and > 0:
                out[line_start:line_start] = [" "] * indent_at_and
                pos = len(out) - line_start
            indent_at_and = indent
        if was_and:
            last_and = len(out)
            indent_at_and = indent
        out.append(ch)
        prev = ch
        pos += 1
        was_and = is_and
    return "".join(out)


def truthy(value) -> bool:
    """ClassAd EvalBool: true, or a non-zero number."""
    t = type(value)
    if t is bool:
        return value
    return (t is int or t is float) and value != 0


def _eval(node, my: ClassAd, target: ClassAd | None):
    try:
        return E.evaluate(ExprTree._from_node(node), my, target)
    except (E.EvalFailure, RecursionError):
        return UNDEF


def _references(node, ad: ClassAd) -> tuple[dict, dict]:
    """({lower: name} the expression reads of ``ad``, following what ``ad`` defines,
    {lower: name} it reads of the target: ``TARGET.x``, or a bare name ``ad`` lacks)."""
    mine: dict[str, str] = {}
    theirs: dict[str, str] = {}
    stack = [node]
    seen = 0
    while stack:
        seen += 1
        if seen > 100_000:
            raise AnalysisError("the expression refers to too many attributes to analyze")
        n = stack.pop()
        t = type(n)
        name = None
        if t is N.Attr:
            name = n.name
        elif t is N.Select and type(n.expr) is N.Attr:
            scope = n.expr.name.lower()
            if scope in SCOPES:
                theirs.setdefault(n.name.lower(), n.name)
                continue
            if scope in OWN:            # MY.x reads the ad itself, defined there or not
                low = n.name.lower()
                if low in ad._exprs and low not in mine:
                    mine[low] = ad._names.get(low, n.name)
                    stack.append(ad._exprs[low].node)
                continue
            else:
                stack.append(n.expr)
                continue
        elif t is N.AbsAttr:
            name = n.name
        if name is None:
            stack.extend(N.children(n))
            continue
        low = name.lower()
        if low in E.SPECIALS:
            continue
        if low in ad._exprs:
            if low not in mine:
                mine[low] = ad._names.get(low, name)
                stack.append(ad._exprs[low].node)
        else:
            theirs.setdefault(low, name)
    return mine, theirs


def my_references(ad: ClassAd, attr: str) -> list[str]:
    """The attributes of ``ad`` that ``attr`` reads (itself and what those read), sorted."""
    if attr not in ad:
        return []
    mine, _ = _references(ad.lookup(attr).node, ad)
    return [mine[k] for k in sorted(mine) if k != attr.lower()]


def target_references(ad: ClassAd, attr: str) -> list[str]:
    if attr not in ad:
        return []
    _, theirs = _references(ad.lookup(attr).node, ad)
    return [theirs[k] for k in sorted(theirs)]


_UNITS_MY = {"requestdisk": " (kb)", "requestmemory": " (mb)"}
_UNITS_TARGET = {"disk": " (kb)", "memory": " (mb)"}


def attr_lines(ad: ClassAd, names: list[str], indent: str = "    ") -> str:
    """``    Name = <expression as written>`` for each name (HTCondor notes RequestDisk in KiB
    and RequestMemory in MiB)."""
    return "".join(f"{indent}{name} = {unparse(ad.lookup(name).node)}{_UNITS_MY.get(name.lower(), '')}\n"
                   for name in names if name in ad)


def target_lines(names: list[str], job: ClassAd, target: ClassAd, indent: str = "    ") -> str:
    """``    TARGET.Name = <value>`` for each name the target defines, evaluated there."""
    out = []
    for name in names:
        if name not in target:
            continue
        value = _eval(target.lookup(name).node, target, job)
        out.append(f"{indent}TARGET.{name} = {unparse_value(value)}{_UNITS_TARGET.get(name.lower(), '')}\n")
    return "".join(out)


@attrs.frozen
class Target:
    ad: ClassAd
    drained: bool = False      # a partitionable slot as it would be if drained


def reduce(ad: ClassAd, attr: str, targets: list[Target]) -> str:
    """The steps of ``attr`` that decide its outcome, each with the number of targets it
    is true for: the "reduces to these conditions" table of condor_q -better-analyze."""
    if attr not in ad:
        return ""
    steps = clauses(ad.lookup(attr).node)
    for step in steps:
        step.unparsed = unparse(step.node)
        _, theirs = _references(step.node, ad)
        step.constant = not theirs
        if step.constant:
            step.hard = 1 if truthy(_eval(step.node, ad, None)) else 0
    _propagate_constants(steps)
    for step in steps:            # point each step at what its sides reduced to
        changed = False
        for side in ("left", "right", "grip"):
            j = getattr(step, side)
            if j >= 0 and steps[j].effective >= 0:
                setattr(step, side, steps[j].effective)
                changed = True
        if changed:
            step.label = ""
    two_columns = any(t.drained for t in targets)
    for i, step in enumerate(steps):
        if step.effective >= 0 or step.dont_care or step.constant:
            continue
        sides = step.left, step.right          # as they were before this step's pruning
        _prune_before(steps, i, len(targets))
        for target in targets:
            if truthy(_eval(step.node, ad, target.ad)):
                step.counts[1 if target.drained else 0] += 1
        _prune_after(steps, i, *sides)
    return _render(steps, two_columns)


def _count(step: Clause) -> int:
    return step.counts[0] + step.counts[1]


def _mark_irrelevant(steps: list[Clause], index: int) -> None:
    stack = [index]
    while stack:
        j = stack.pop()
        if j < 0:
            continue
        steps[j].dont_care = True
        stack.extend((steps[j].left, steps[j].right, steps[j].grip))


def _follow(steps: list[Clause], j: int) -> int:
    while steps[j].effective >= 0:
        j = steps[j].effective
    return j


def _propagate_constants(steps: list[Clause]) -> None:
    """Fold steps whose sides are constants: ``x && false`` is never, ``x || true`` always,
    ``x && true`` is ``x``; the side that cannot change the outcome is left out."""
    for i, step in enumerate(steps):
        if not step.logic:
            continue
        hard, soft = [], []
        for j in (step.left, step.right, step.grip):
            constant = j >= 0 and steps[j].constant
            hard.append(steps[j].hard if constant else 2)
            soft.append(steps[j].variable if constant else False)
        effective = irrelevant = -1
        soft_irrelevant = False
        (hl, hr, _), (sl, sr, _) = hard, soft
        if step.logic == 1:
            if not step.label and step.left >= 0:
                step.label = f" ! [{step.left}]{_TRUTHY[hl + 1 + sl * 6]}"
        elif step.logic == 2:
            if hl == 1 or hr == 1:
                step.constant, step.hard, step.variable = True, 1, sl and sr
                if hl == 1:
                    effective, irrelevant, soft_irrelevant = step.left, step.right, sl and bool(hr or sr)
                else:
                    effective, irrelevant, soft_irrelevant = step.right, step.left, sr and bool(hl or sl)
            elif hl == 0 and hr == 0:
                step.constant, step.hard, step.variable = True, 0, sl or sr
            elif hl == 0:
                effective, irrelevant, soft_irrelevant = step.right, step.left, sl
            elif hr == 0:
                effective, irrelevant, soft_irrelevant = step.left, step.right, sr
            step.label = f"[{step.left}]{_TRUTHY[hl + 1 + sl * 6]} || [{step.right}]{_TRUTHY[hr + 1 + sr * 6]}"
        else:
            if hl == 0 or hr == 0:
                step.constant, step.hard, step.variable = True, 0, sl or sr
                if hl == 0:
                    effective, irrelevant, soft_irrelevant = step.left, step.right, sl
                else:
                    effective, irrelevant, soft_irrelevant = step.right, step.left, sr
            elif hl == 1 and hr == 1:
                step.constant, step.hard, step.variable = True, 1, sl or sr
            elif hl == 1:
                effective = step.right
            elif hr == 1:
                effective = step.left
            step.label = f"[{step.left}]{_TRUTHY[hl + 1 + sl * 6]} && [{step.right}]{_TRUTHY[hr + 1 + sr * 6]}"
        if effective >= 0:
            step.effective = effective
            if irrelevant < 0:
                irrelevant = step.right if effective == step.left else step.left
                soft_irrelevant = soft_irrelevant or step.variable
            step.effective = _follow(steps, effective)
        if irrelevant >= 0 and not soft_irrelevant:
            _mark_irrelevant(steps, irrelevant)


def _prune_before(steps: list[Clause], i: int, every: int) -> None:
    """Before counting a logical step: an ``&&`` with a side that matched nothing is that
    side; an ``||`` with a side that matched everything, or one side that matched nothing
    and one that did, is the side that decides."""
    step = steps[i]
    left, right = step.left, step.right
    if not (left >= 0 and right >= 0 and step.logic):
        return
    effective = prune = -1
    cl, cr = _count(steps[left]), _count(steps[right])
    if step.logic == 3:
        if cl == 0:
            effective = left
        elif cr == 0:
            effective = right
    elif step.logic == 2:
        if cl == every:
            effective, prune = left, right
        elif cr == every:
            effective, prune = right, left
        elif cl == 0 and cr != 0:
            effective, prune = right, left
        elif cl != 0 and cr == 0:
            effective, prune = left, right
    if prune >= 0:
        _mark_irrelevant(steps, prune)
    _settle(steps, i, effective)


def _prune_after(steps: list[Clause], i: int, left: int, right: int) -> None:
    """After counting an ``&&``: when one side counts what the whole does, the whole is that
    side, and the other side (which matched more) does not decide."""
    step = steps[i]
    if not (left >= 0 and right >= 0 and step.logic):
        return
    effective = -1
    whole = _count(step)
    if step.logic == 3:
        if _count(steps[left]) == whole:
            effective = left
            if _count(steps[right]) > whole:
                steps[right].dont_care = True
        elif _count(steps[right]) == whole:
            effective = right
            if _count(steps[left]) > whole:
                steps[left].dont_care = True
    if effective >= 0:
        step.label = ""
    _settle(steps, i, effective)


def _settle(steps: list[Clause], i: int, effective: int) -> None:
    step = steps[i]
    if effective >= 0:
        step.effective = _follow(steps, effective)
        return
    for side in ("left", "right"):
        j = getattr(step, side)
        if steps[j].effective >= 0:
            setattr(step, side, steps[j].effective)
            step.label = ""


def _render(steps: list[Clause], two_columns: bool) -> str:
    if two_columns:
        head1, head2, bar = "  Slots      If    ", " Matched   Drained ", "--------- ---------"
    else:
        head1, head2, bar = " Slots", " Matched ", "---------"
    lines = [" " * 7 + head1 + "\n", "Step  " + head2 + " Condition\n", "----- " + bar + " ---------\n"]
    for i, step in enumerate(steps):
        if step.effective >= 0 or step.dont_care:
            continue
        if step.constant:
            word = ("now" if step.hard else "not now") if step.variable else ("always" if step.hard else "never")
            lines.append(f"{step_label(i, 3)} {word:>9}  {step.text()}\n")
            continue
        counts = f"{step.counts[0]:9d} {step.counts[1]:9d}" if two_columns else f"{step.counts[0]:9d}"
        lines.append(f"{step_label(i, 3)} {counts}  {step.text()}\n")
    return "".join(lines)
