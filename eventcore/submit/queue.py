"""The queue statement: ``queue [count] [vars {in|from|matching} [slice] items]``.

``parse_queue`` turns the (macro-expanded) arguments into a ``QueueSpec``;
``load_rows`` reads its items (inline text, a block, a file or a glob, all
through the environment) into a list of row dicts.  Rules: submit.md
section 3.  Errors are ``SubmitError``s naming the queue line.
"""

from __future__ import annotations

import re

import attrs

from eventcore.errors import SubmitError

from .text import too_many_jobs

_KEYWORD_RE = re.compile(r"(?:^|(?<=[\s,]))(in|from|matching)(?=[\s(\[]|\Z)", re.IGNORECASE)
_VAR_RE = re.compile(r"[A-Za-z_.][A-Za-z0-9_.]*\Z")
_SEPARATORS = re.compile(r"[\s,]+")
_ROW_SEPARATOR = re.compile(r"[, \t]")
_COUNT_RE = re.compile(r"[0-9+\-*/%() \t]+\Z")


@attrs.frozen
class QueueSpec:
    """A parsed queue statement (items not yet read)."""

    count: int = 1
    variables: tuple[str, ...] = ()
    mode: str | None = None                 # "in", "from", "matching" or None
    qualifier: str = "any"                  # matching: "files", "dirs" or "any"
    selection: slice | int | None = None    # [start:stop:step] or [n]
    items: str | None = None                # same-line text: items, file name or globs
    block: tuple[str, ...] | None = None    # multi-line ( ... ) lines
    inline: bool = False                    # items came in parentheses
    table: bool = False                     # "from table": the first row names the columns

    def selected(self, n_rows: int) -> range | list[int]:
        """Indexes of the rows that make jobs (the slice applied)."""
        if self.selection is None:
            return range(n_rows)
        if isinstance(self.selection, int):
            i = self.selection + n_rows if self.selection < 0 else self.selection
            return [i] if 0 <= i < n_rows else []
        return range(n_rows)[self.selection]


def _fail(message: str, where) -> SubmitError:
    number, text, source = where
    return SubmitError(message, number, text, source)


def eval_count(text: str, where) -> int:
    """The queue count: an integer expression (empty means 1)."""
    text = text.strip()
    if not text:
        return 1
    try:
        value = int(text, 10)
    except ValueError:
        value = _eval_int(text)
    if value is None:
        raise _fail("invalid Queue statement: Invalid Queue count expression", where)
    if value < 0:
        raise _fail("invalid Queue statement: Queue count out of range", where)
    return value


def _eval_int(text: str) -> int | None:
    from eventcore.classad import ExprTree, Value
    from eventcore.errors import ClassAdError
    try:
        value = ExprTree(text).eval()
    except (ClassAdError, RecursionError, ValueError, TypeError):
        return None
    if isinstance(value, Value):
        return None
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float) and value == int(value):
        return int(value)
    return value if isinstance(value, int) else None


def parse_queue(args: str, block: tuple[str, ...] | None, block_closed: bool, where) -> QueueSpec:
    """Parse expanded queue arguments; ``where`` is (line, text, source)."""
    kw = _KEYWORD_RE.search(args)
    if kw is None:
        return QueueSpec(count=eval_count(args, where))
    head = args[:kw.start()]
    tokens = [t for t in _SEPARATORS.split(head) if t]
    variables: list[str] = []
    while tokens and _VAR_RE.match(tokens[-1]) and not tokens[-1][0].isdigit():
        variables.insert(0, tokens.pop())
    count_text = head
    if variables:
        first = re.search(r"(?:^|(?<=[\s,]))" + re.escape(variables[0]) + r"(?=[\s,]|\Z)", head)
        count_text = head[:first.start()] if first else ""
    count = eval_count(count_text.strip().rstrip(","), where)
    mode = kw.group(1).lower()
    rest = args[kw.end():].lstrip()
    qualifier = "any"
    if mode == "matching":
        m = re.match(r"(files|dirs|any)(?=[\s(\[]|\Z)", rest, re.IGNORECASE)
        if m:
            qualifier = m.group(1).lower()
            rest = rest[m.end():].lstrip()
    table = False
    if mode == "from":
        m = re.match(r"table(?=[\s(\[]|\Z)", rest, re.IGNORECASE)
        if m:
            table = True
            rest = rest[m.end():].lstrip()
    selection = None
    if rest.startswith("["):
        close = rest.find("]")
        if close < 0:
            raise _fail("invalid Queue statement: Invalid [::] statement", where)
        selection = _parse_slice(rest[1:close], where)
        rest = rest[close + 1:].lstrip()
    names = tuple(variables) or ("Item",)
    if rest == "(":
        if block is None or not block_closed:
            raise _fail("invalid Queue statement: no ')' closes the item list", where)
        return QueueSpec(count, names, mode, qualifier, selection, None, block, True, table)
    if rest.startswith("("):
        close = rest.rfind(")")
        if close < 0:
            raise _fail("invalid Queue statement: no ')' closes the item list", where)
        if rest[close + 1:].strip():
            raise _fail("invalid Queue statement: text after the closing ')'", where)
        return QueueSpec(count, names, mode, qualifier, selection, rest[1:close], None, True, table)
    if not rest.strip():
        raise _fail(f"invalid Queue statement: no items after '{mode}'", where)
    return QueueSpec(count, names, mode, qualifier, selection, rest.strip(), None, False, table)


def _parse_slice(text: str, where) -> slice | int | None:
    if not text:
        return None
    if any(c in text for c in " \t"):
        raise _fail("invalid Queue statement: Invalid [::] statement", where)
    parts = text.split(":")
    if len(parts) > 3:
        raise _fail("invalid Queue statement: Invalid [::] statement", where)
    values = []
    for part in parts:
        if not part:
            values.append(None)
            continue
        try:
            values.append(int(part, 10))
        except ValueError:
            raise _fail("invalid Queue statement: Invalid [::] statement", where) from None
    if len(values) == 1:
        if values[0] is None:
            raise _fail("invalid Queue statement: Invalid [::] statement", where)
        return values[0]
    if len(values) == 3 and values[2] == 0:
        raise _fail("invalid Queue statement: slice step cannot be zero", where)
    return slice(*values)


def split_row(row: str, names: tuple[str, ...]) -> dict[str, str]:
    """One ``from`` row into variables (submit.md section 3.2)."""
    row = row.strip(" \t")
    if len(names) == 1:
        return {names[0]: row}
    if "\x1f" in row:
        parts = [p.strip(" \t") for p in row.split("\x1f")]
        parts += [""] * (len(names) - len(parts))
        head = parts[:len(names) - 1]
        return dict(zip(names, head + ["\x1f".join(parts[len(names) - 1:])]))
    out = {}
    last = len(names) - 1
    for i, name in enumerate(names):
        if i == last:
            out[name] = row
            break
        m = _ROW_SEPARATOR.search(row)
        if m is None:
            out[name], row = row, ""
        else:
            out[name] = row[:m.start()].strip(" \t")
            row = row[m.end():].lstrip(" \t")
    return out


def split_rows(texts: list[str], names: tuple[str, ...]) -> list[dict[str, str]]:
    """``split_row`` over many rows (the common one- and two-variable cases inline)."""
    if len(names) == 1:
        (name,) = names
        return [{name: t.strip(" \t")} for t in texts]
    if len(names) == 2 and not any("\x1f" in t for t in texts):
        first, second = names
        search = _ROW_SEPARATOR.search
        out = []
        for t in texts:
            t = t.strip(" \t")
            m = search(t)
            if m is None:
                out.append({first: t, second: ""})
            else:
                out.append({first: t[:m.start()].strip(" \t"), second: t[m.end():].lstrip(" \t")})
        return out
    return [split_row(t, names) for t in texts]


def table_rows(texts: list[str], where) -> list[dict[str, str]]:
    """``from table``: the first row names the columns (comma separated; the
    statement's own variable names are ignored), each further row is split at
    commas, the last column taking the rest; missing columns are empty."""
    if not texts:
        return []
    header = [name.strip(" \t") for name in texts[0].split(",")]
    bad = [name for name in header if not _VAR_RE.match(name) or name[0].isdigit()]
    if bad:
        raise _fail(f"Columns {len(bad)} have names that are not allowed : {' '.join(bad)}", where)
    rows = []
    for text in texts[1:]:
        parts = [p.strip(" \t") for p in text.split(",", len(header) - 1)]
        parts += [""] * (len(header) - len(parts))
        rows.append(dict(zip(header, parts)))
    return rows


def load_rows(spec: QueueSpec, env, where, max_jobs: int | None = None,
              per_row: int = 1) -> list[dict[str, str]] | None:
    """Every row of the (unsliced) item list; None when there are no items.
    With ``max_jobs``: ``SubmitError`` as soon as the rows (``per_row``
    jobs each) would make more jobs than that, before they are all split."""
    if spec.mode is None:
        return None
    names = spec.variables
    limit = None if max_jobs is None else max_jobs // max(per_row, 1)

    def check(n: int) -> None:
        if limit is not None and n > limit:
            raise _fail(too_many_jobs(max_jobs), where)
    if spec.mode == "in":
        lines = _block_lines(spec) if spec.block is not None else [spec.items or ""]
        tokens = [t for line in lines for t in _SEPARATORS.split(line) if t]
        check(len(tokens))
        rows = [_first_only(t, names) for t in tokens]
    elif spec.mode == "from":
        if spec.block is not None:
            texts = [line.strip(" \t") for line in _block_lines(spec)]
        elif spec.inline:
            texts = [spec.items.strip(" \t")]
        else:
            texts = _read_rows(spec.items, env, where, check)
        check(len(texts))
        for i, text in enumerate(texts):
            if not text.strip(" \t"):
                raise _fail(f"invalid Queue statement: item row {i + 1} is empty", where)
        rows = table_rows(texts, where) if spec.table else split_rows(texts, names)
    else:
        lines = _block_lines(spec) if spec.block is not None else [spec.items or ""]
        patterns = [t for line in lines for t in line.split() if t]
        found = _glob(patterns, spec.qualifier, env)
        check(len(found))
        rows = [_first_only(p, names) for p in found]
    return rows or None


def _block_lines(spec: QueueSpec) -> list[str]:
    return [line for line in spec.block if not line.lstrip(" \t").startswith("#")]


def _first_only(token: str, names: tuple[str, ...]) -> dict[str, str]:
    row = dict.fromkeys(names, "")
    row[names[0]] = token
    return row


def _read_rows(name: str, env, where, check) -> list[str]:
    if name.endswith("|"):
        raise _fail("invalid Queue statement: 'from command |' is not supported", where)
    try:
        text = env.read_file(name)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise _fail(f"can't open file {name}: {reason}", where) from None
    check(text.count("\n") + (0 if text.endswith("\n") else 1))
    return [line.rstrip("\r") for line in text.split("\n")][:-1] if text.endswith("\n") \
        else [line.rstrip("\r") for line in text.split("\n")] if text else []


def _glob(patterns: list[str], qualifier: str, env) -> list[str]:
    out: list[str] = []
    seen: set[str] = set()
    for pattern in patterns:
        literal = not any(c in pattern for c in "*?[")
        for path, is_dir in env.glob(pattern):
            # HTCondor keeps a named (wildcard-free) file even for "dirs"
            if (qualifier == "files" and is_dir) or (qualifier == "dirs" and not is_dir and not literal):
                continue
            item = path.rstrip("/") + "/" if is_dir else path
            if item not in seen:
                seen.add(item)
                out.append(item)
    return out
