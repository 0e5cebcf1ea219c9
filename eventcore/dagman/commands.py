"""The DAG commands that do not make nodes: one function per keyword.

Each takes the scope (its nodes, splices and directory) and one line, and
changes the DAG; an argument DAGMan would refuse is a ``DagError`` at the
line.  ``ALL_NODES`` stands for every node of the scope but the FINAL one.
"""

from __future__ import annotations

import re

from jobledger.eventcore.errors import DagError

from .lines import KEYWORDS, Line
from .model import FINAL, PROVISIONER, SCRIPT_KINDS, SERVICE, VAR_PAIR, Script

# Every pair of a VARS line, none named queue...: one match checks a whole line.
# (Possessive: nothing to try again once a part matched; twice as fast as plain quantifiers.)
_VARS_PAIRS = re.compile(r'(?:\s*+(?!(?i:queue))[+]?[A-Za-z_][A-Za-z0-9_.]*+\s*+=\s*+(?:"[^"\\]*+(?:\\.[^"\\]*+)*+"'
                         r"|'[^'\\]*+(?:\\.[^'\\]*+)*+'|[^\s\"']++))++\s*+")
_SPECIAL = (FINAL, PROVISIONER, SERVICE)     # nodes outside the parent/child graph
_INT_RE = re.compile(r"[+-]?\d+\Z")
_BLANK = re.compile(r"\s*\Z")


def apply(scope, line, keyword: str | None = None) -> None:
    """Apply one command line; ``keyword`` is its first word upper-cased, when the caller has it."""
    keyword = keyword or line.words[0].upper()
    handler = HANDLERS.get(keyword)
    if handler is None:
        _fail(line, f"unknown DAG command {line.words[0]!r}")
    handler(scope, line)


def second_pass(scope, rest: list) -> None:
    """DAGMan's second pass: the commands of ``rest`` ((text, source, line, words or None)),
    in order."""
    now = usual(scope)
    for text, source, number, words in rest:
        if words is None:
            words = text.split()
        if not now(text, source, number, words):
            keyword = KEYWORDS.get(words[0]) or words[0].upper()
            apply(scope, Line(tuple(words), text, source, number), keyword)


def usual(scope):
    """``now(text, source, line, words) -> applied?``: the lines most of a big DAG is made of
    (VARS without PREPEND/APPEND, RETRY node count, PARENT a CHILD b; 3 * 10^5 of them at 10^5
    nodes), applied without making a ``Line``, when the nodes they name are made and the
    line is good.  Any other line is left to its handler (False)."""
    names, prefix, pairs, special, keywords = scope.names, scope.prefix, _VARS_PAIRS, _SPECIAL, KEYWORDS
    top = scope.dag.source

    def now(text: str, source: str, number: int, words: list) -> bool:
        keyword = keywords.get(words[0])
        if keyword == "VARS":
            if len(words) > 2 and words[2][0] not in "PpAa":
                node = names.get(prefix + words[1])
                start = text.find(words[1], len(words[0])) + len(words[1])    # the pairs' start
                if node is not None and pairs.fullmatch(text, start) is not None:
                    _add_vars(node, text, start, False, True)
                    return True
        elif keyword == "PARENT":
            if len(words) == 4 and len(words[2]) == 5 and words[2].upper() == "CHILD":
                up, down = names.get(prefix + words[1]), names.get(prefix + words[3])
                if up is not None and down is not None and up is not down and up.kind not in special \
                        and down.kind not in special:
                    _edge(scope, up, down, number if source == top else (source, number))
                    return True
        elif keyword == "RETRY":
            if len(words) == 3 and words[2].isdigit() and words[2].isascii():
                node = names.get(prefix + words[1])
                if node is not None:
                    node.retry, node.retry_unless_exit = int(words[2]), None
                    return True
        return False
    return now


def _fail(line, message: str):
    raise DagError(message, line.source, line.line)


def _int(line, text: str, what: str, low: int | None = None, high: int | None = None) -> int:
    if not _INT_RE.match(text):
        _fail(line, f"{what} must be an integer, not {text!r}")
    value = int(text)
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = f"{low if low is not None else '-inf'}..{high if high is not None else 'inf'}"
        _fail(line, f"{what} must be in {bounds}, not {value}")
    return value


def _arity(line, low: int, high: int, usage: str) -> None:
    if not low <= len(line.words) <= high:
        _fail(line, f"expected {usage}")


def parent_child(scope, line, weak: bool = False) -> None:
    words = line.words[1:] if weak else line.words
    split = next((i for i, w in enumerate(words) if len(w) == 5 and w.upper() == "CHILD"), None)
    if split is None:
        _fail(line, "PARENT without CHILD")
    parents, children = words[1:split], words[split + 1:]
    if not parents or not children:
        _fail(line, f"expected {'WEAK ' if weak else ''}PARENT node ... CHILD node ...")
    ups = [n for name in parents for n in _edge_ends(scope, name, line, terminal=True)]
    downs = [n for name in children for n in _edge_ends(scope, name, line, terminal=False)]
    _link(scope, line, ups, downs, weak)


def weak_parent_child(scope, line) -> None:
    """WEAK PARENT p ... CHILD c ...: each child waits for its parents to end (succeeded or
    failed), not to succeed; a parent that never ran (futile) still makes it futile, and a
    PARENT line for the same pair, before or after, makes the edge strong (HTCondor's
    DAGMan: strongest wins)."""
    if len(line.words) < 2 or line.words[1].upper() != "PARENT":
        _fail(line, "expected WEAK PARENT node ... CHILD node ...")
    parent_child(scope, line, weak=True)


def _link(scope, line, ups, downs, weak: bool = False) -> None:
    """Every node of ``ups`` a parent of every node of ``downs``."""
    where = line.line if line.source == scope.dag.source else (line.source, line.line)
    for up in ups:
        for down in downs:
            if up is down:
                _fail(line, f"node {up.name!r} cannot be its own parent")
            _edge(scope, up, down, where, weak)


def _edge(scope, up, down, where, weak: bool = False) -> None:
    """``up`` a parent of ``down`` (an edge made twice counts once, strong if either was);
    ``scope.edges`` keeps the place of each edge (a cycle is reported at its first line): its
    line number in the DAG's file, or (source, line) in another (an INCLUDE or a splice)."""
    key = (up.name, down.name)
    if key in scope.edges:
        if not weak:
            scope.dag.weak.discard(key)
        return
    if weak:
        scope.dag.weak.add(key)
    scope.edges[key] = where
    if up.order >= down.order:
        scope.backward = True
    if up.children:
        up.children.append(down.name)
    else:
        up.children = [down.name]
    if down.parents:
        down.parents.append(up.name)
    else:
        down.parents = [up.name]


def _edge_ends(scope, name: str, line, terminal: bool) -> list:
    if name in scope.splices:
        initial, last = scope.splices[name]
        return [scope.dag.nodes[n] for n in (last if terminal else initial)]
    node = scope.node(name, line)
    if node.is_special:
        _fail(line, f"{node.kind} node {name!r} cannot be in PARENT/CHILD")
    return [node]


def pin(scope, line) -> None:
    """PIN_IN|PIN_OUT node number: a splice's pin (used only when a CONNECT names the splice)."""
    _arity(line, 3, 3, f"{line.words[0].upper()} node pin-number")
    number = _int(line, line.words[2], "the pin number", low=1)
    node = scope.node(line.words[1], line)
    if node.is_special:
        _fail(line, f"{node.kind} node {line.words[1]!r} cannot be on a pin")
    scope.pins[line.words[0].upper()].setdefault(number, []).append(node.name)


def connect(scope, line) -> None:
    """CONNECT out in: PIN_OUT n of splice ``out`` is the parent of PIN_IN n of splice ``in``."""
    _arity(line, 3, 3, "CONNECT output-splice input-splice")
    ends = []
    for name in line.words[1:]:
        if name not in scope.inner:
            _fail(line, f"unknown splice {name!r} (CONNECT joins two splices)")
        ends.append(scope.inner[name])
    out, into = ends
    outs, ins = out.pins["PIN_OUT"], into.pins["PIN_IN"]
    for splice, pins, kind in ((line.words[1], outs, "PIN_OUT"), (line.words[2], ins, "PIN_IN")):
        if not pins:
            _fail(line, f"splice {splice!r} has no {kind}")
        missing = sorted(set(range(1, max(pins) + 1)) - set(pins))
        if missing:
            _fail(line, f"splice {splice!r} has no node for {kind} {missing[0]} "
                        f"(pins are numbered 1..{max(pins)} without gaps)")
    if max(outs) != max(ins):
        _fail(line, f"pin counts differ: splice {line.words[1]!r} has {max(outs)} PIN_OUT, "
                    f"splice {line.words[2]!r} has {max(ins)} PIN_IN")
    for number in range(1, max(outs) + 1):
        _link(scope, line, [scope.dag.nodes[n] for n in outs[number]],
              [scope.dag.nodes[n] for n in ins[number]])
    orphans = [n for n in into.members() if not scope.dag.nodes[n].parents]
    if orphans:
        _fail(line, f"node {orphans[0]!r} of splice {line.words[2]!r} has no parent after CONNECT "
                    f"(give it a PIN_IN or a parent)")


def retry(scope, line) -> None:
    usage = "RETRY node count [UNLESS-EXIT value]"
    if len(line.words) not in (3, 5):
        _fail(line, f"expected {usage}")
    count = _int(line, line.words[2], "the retry count", low=0)
    unless = None
    if len(line.words) == 5:
        if line.words[3].upper() != "UNLESS-EXIT":
            _fail(line, f"expected {usage}")
        unless = _int(line, line.words[4], "the UNLESS-EXIT value")
    for node in scope.targets(line.words[1], line):
        node.retry, node.retry_unless_exit = count, unless


def script(scope, line) -> None:
    words, index = line.words, 1
    defer_status, defer_time, debug_file, debug_type = None, 0, None, None
    while index < len(words) and words[index].upper() in ("DEFER", "DEBUG"):
        if index + 2 >= len(words):
            _fail(line, f"{words[index]} needs two values")
        if words[index].upper() == "DEFER":
            defer_status = _int(line, words[index + 1], "the DEFER status")
            defer_time = _int(line, words[index + 2], "the DEFER time", low=0)
        else:
            debug_file, debug_type = words[index + 1], words[index + 2].upper()
            if debug_type not in ("STDOUT", "STDERR", "ALL"):
                _fail(line, f"DEBUG type must be STDOUT, STDERR or ALL, not {words[index + 2]!r}")
        index += 3
    if len(words) < index + 3 or words[index].upper() not in SCRIPT_KINDS:
        _fail(line, "expected SCRIPT [DEFER status time] [DEBUG file type] PRE|POST|HOLD node "
                    "executable [arguments]")
    kind = words[index].upper()
    made = Script(kind, words[index + 2], tuple(words[index + 3:]), defer_status, defer_time,
                  debug_file, debug_type)
    for node in scope.targets(words[index + 1], line):
        node.scripts = {**node.scripts, kind: made}


def pre_skip(scope, line) -> None:
    _arity(line, 3, 3, "PRE_SKIP node exit-code")
    code = _int(line, line.words[2], "the PRE_SKIP exit code", low=1, high=255)
    for node in scope.targets(line.words[1], line):
        node.pre_skip = code


def variables(scope, line) -> None:
    """VARS node [PREPEND|APPEND] name="value" ...: checked here, kept as the line's text
    (``Node.vars`` reads the pairs when asked; a DAG of 10^5 nodes sets 10^5 VARS lines)."""
    parts = line.text.split(None, 2)
    if len(parts) < 3:
        _fail(line, 'expected VARS node [PREPEND|APPEND] name="value" ...')
    text, rest = line.text, parts[2]
    prepend = False
    if rest[0] in "PpAa":
        head = rest.split(None, 1)
        if head[0].upper() in ("PREPEND", "APPEND"):
            prepend = head[0].upper() == "PREPEND"
            rest = head[1] if len(head) > 1 else ""
    start = len(text) - len(rest)
    if not rest or _VARS_PAIRS.fullmatch(text, start) is None:
        _vars_error(line, rest)
    plain = rest is parts[2]                  # no PREPEND/APPEND word
    for node in scope.targets(parts[1], line):
        _add_vars(node, text, start, prepend, plain)


def _add_vars(node, text: str, start: int, prepend: bool, plain: bool) -> None:
    """A VARS line's text to the node's: the bare text while it is the only one and
    ``plain`` (its pairs follow the node's name), else (text, pairs start, prepend)s."""
    chunks = node.vars_text
    if chunks is None and plain:
        node.vars_text = text
        return
    if chunks is None:
        node.vars_text = [(text, start, prepend)]
        return
    if isinstance(chunks, str):
        chunks = node.vars_text = [(chunks, len(chunks) - len(chunks.split(None, 2)[2]), False)]
    chunks.append((text, start, prepend))


def _vars_error(line, rest: str) -> None:
    """Why the pairs of a VARS line (``rest``) are not name="value" ...: the first bad place."""
    pos = 0
    while not _BLANK.match(rest, pos):      # a match at pos: no copy of the rest per pair
        match = VAR_PAIR.match(rest, pos)
        if match is None:
            _fail(line, f'expected name="value" at {rest[pos:pos + 80].strip()[:40]!r}')
        if match.group(1).lower().startswith("queue"):
            _fail(line, f"VARS name {match.group(1)!r} may not begin with 'queue'")
        pos = match.end()
    _fail(line, 'expected at least one name="value"')


def priority(scope, line) -> None:
    _arity(line, 3, 3, "PRIORITY node value")
    value = _int(line, line.words[2], "the priority")
    for node in scope.targets(line.words[1], line):
        node.priority = value


def _category(scope, name: str) -> str:
    """A category's full name: a splice's own (prefixed) unless it begins with + (global)."""
    return name if name.startswith("+") else scope.prefix + name


def category(scope, line) -> None:
    _arity(line, 3, 3, "CATEGORY node category")
    full = _category(scope, line.words[2])
    for node in scope.targets(line.words[1], line):
        node.category = full


def max_jobs(scope, line) -> None:
    _arity(line, 3, 3, "MAXJOBS category limit")
    full = _category(scope, line.words[1])
    scope.dag.max_jobs[full] = _int(line, line.words[2], "the MAXJOBS limit", low=0)


def abort_dag_on(scope, line) -> None:
    usage = "ABORT-DAG-ON node exit-value [RETURN dag-return-value]"
    if len(line.words) not in (3, 5):
        _fail(line, f"expected {usage}")
    value = _int(line, line.words[2], "the abort exit value")
    returned = None
    if len(line.words) == 5:
        if line.words[3].upper() != "RETURN":
            _fail(line, f"expected {usage}")
        returned = _int(line, line.words[4], "the RETURN value", low=0, high=255)
    for node in scope.targets(line.words[1], line):
        node.abort_on = (value, returned)


def done(scope, line) -> None:
    _arity(line, 2, 2, "DONE node")
    scope.node(line.words[1], line).done = True


def _one_file(scope, line, attribute: str) -> None:
    """CONFIG / JOBSTATE_LOG: one file per DAG (the same one named again is fine)."""
    _arity(line, 2, 2, f"{line.words[0].upper()} file")
    path, first = scope.path(line.words[1]), getattr(scope.dag, attribute)
    if first not in (None, path):
        _fail(line, f"a second {line.words[0].upper()} file {path!r} (the first is {first!r})")
    setattr(scope.dag, attribute, path)


def config(scope, line) -> None:
    _one_file(scope, line, "config")


def set_job_attr(scope, line) -> None:
    text = line.text.split(None, 1)[1] if len(line.words) > 1 else ""
    name, equals, value = text.partition("=")
    name = name.strip()
    if not equals or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", name) or not value.strip():
        _fail(line, "expected SET_JOB_ATTR name = value")
    scope.dag.set_job_attrs[name] = value.strip()


def env(scope, line) -> None:
    if len(line.words) < 3 or line.words[1].upper() not in ("GET", "SET"):
        _fail(line, "expected ENV GET name ... or ENV SET name=value;...")
    if line.words[1].upper() == "GET":
        scope.dag.env_get += [w for word in line.words[2:] for w in word.split(",") if w]
        return
    rest = line.text.split(None, 2)[2]
    for item in re.split(r"[;\s]+", rest):
        if not item:
            continue
        key, equals, value = item.partition("=")
        if not equals or not key:
            _fail(line, f"ENV SET expects name=value, not {item!r}")
        scope.dag.env_set.append((key, value))


def dot(scope, line) -> None:
    if len(line.words) < 2:
        _fail(line, "expected DOT file [UPDATE|DONT-UPDATE] [OVERWRITE|DONT-OVERWRITE] [INCLUDE file]")
    spec = {"file": scope.path(line.words[1]), "update": False, "overwrite": True, "include": None}
    words, index = line.words, 2
    while index < len(words):
        word = words[index].upper()
        if word in ("UPDATE", "DONT-UPDATE"):
            spec["update"] = word == "UPDATE"
        elif word in ("OVERWRITE", "DONT-OVERWRITE"):
            spec["overwrite"] = word == "OVERWRITE"
        elif word == "INCLUDE" and index + 1 < len(words):
            spec["include"] = scope.path(words[index + 1])
            index += 1
        else:
            _fail(line, f"unexpected {words[index]!r} in DOT")
        index += 1
    scope.dag.dot = spec


def node_status_file(scope, line) -> None:
    _arity(line, 2, 4, "NODE_STATUS_FILE file [min-update-seconds] [ALWAYS-UPDATE]")
    spec = {"file": scope.path(line.words[1]), "min_update": 60, "always_update": False}
    for word in line.words[2:]:
        if word.upper() == "ALWAYS-UPDATE":
            spec["always_update"] = True
        else:
            spec["min_update"] = _int(line, word, "the minimum update time", low=0)
    scope.dag.node_status_file = spec


def jobstate_log(scope, line) -> None:
    _one_file(scope, line, "jobstate_log")


def save_point_file(scope, line) -> None:
    _arity(line, 2, 3, "SAVE_POINT_FILE node [file]")
    node = scope.node(line.words[1], line)
    if node.is_special:
        _fail(line, f"a save point cannot be on the {node.kind} node")
    default = f"{line.words[1]}-{scope.dag.source.rsplit('/', 1)[-1]}.save"
    node.save_point = line.words[2] if len(line.words) == 3 else default


def reject(scope, line) -> None:
    _arity(line, 1, 1, "REJECT")
    scope.dag.reject = line.where


HANDLERS = {
    "PARENT": parent_child, "RETRY": retry, "SCRIPT": script, "PRE_SKIP": pre_skip,
    "VARS": variables, "PRIORITY": priority, "CATEGORY": category, "MAXJOBS": max_jobs,
    "ABORT-DAG-ON": abort_dag_on, "DONE": done, "CONFIG": config, "SET_JOB_ATTR": set_job_attr,
    "ENV": env, "DOT": dot, "NODE_STATUS_FILE": node_status_file, "JOBSTATE_LOG": jobstate_log,
    "SAVE_POINT_FILE": save_point_file, "REJECT": reject, "CONNECT": connect, "PIN_IN": pin,
    "PIN_OUT": pin, "WEAK": weak_parent_child,
}
