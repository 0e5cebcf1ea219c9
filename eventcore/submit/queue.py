"""The queue statement: ``queue [count] [vars {in|from|matching} [slice] items]``.

``parse_queue`` turns the (macro-expanded) arguments into a ``QueueSpec``;
``load_rows`` reads its items (inline text, a block, a file or a glob, all
through the environment) as ``Rows``: the row texts, split into row dicts
only as they are read, so a 10^6-row item file stays one text in memory.  Rules: submit.md
section 3.  Errors are ``SubmitError``s naming the queue line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from functools import partial

import attrs

from jobledger.eventcore.errors import SubmitError

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
    from jobledger.eventcore.classad import ExprTree, Value
    from jobledger.eventcore.errors import ClassAdError
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


def row_splitter(names: tuple[str, ...]) -> Callable[[str], dict[str, str]]:
    """``split_row`` for ``names`` as one function of the row text (the common
    one- and two-variable cases inline)."""
    if len(names) == 1:
        (name,) = names
        return lambda t: {name: t.strip(" \t")}
    if len(names) == 2:
        first, second = names
        search = _ROW_SEPARATOR.search

        def two(t: str) -> dict[str, str]:
            if "\x1f" in t:
                return split_row(t, names)
            t = t.strip(" \t")
            m = search(t)
            if m is None:
                return {first: t, second: ""}
            return {first: t[:m.start()].strip(" \t"), second: t[m.end():].lstrip(" \t")}
        return two
    return lambda t: split_row(t, names)


def split_rows(texts: list[str], names: tuple[str, ...]) -> list[dict[str, str]]:
    """``split_row`` over many rows."""
    return list(map(row_splitter(names), texts))


def _table_header(text: str, where) -> list[str]:
    """``from table``'s first row: the column names (the statement's own
    variable names are ignored)."""
    header = [name.strip(" \t") for name in text.split(",")]
    bad = [name for name in header if not _VAR_RE.match(name) or name[0].isdigit()]
    if bad:
        raise _fail(f"Columns {len(bad)} have names that are not allowed : {' '.join(bad)}", where)
    return header


def _table_splitter(header: list[str]) -> Callable[[str], dict[str, str]]:
    """Each further ``from table`` row is split at commas, the last column
    taking the rest; missing columns are empty."""
    def split(text: str) -> dict[str, str]:
        parts = [p.strip(" \t") for p in text.split(",", len(header) - 1)]
        parts += [""] * (len(header) - len(parts))
        return dict(zip(header, parts))
    return split


class Rows:
    """The item rows of a queue statement: row texts, split into dicts only
    as they are read (a 10^6-row item file is held as its text, not as 10^6
    dicts).  ``len``, iteration, ``rows[i]``, and ``pick(indexes)``."""

    def __init__(self, texts: Sequence[str], split: Callable[[str], dict[str, str]]):
        self._texts = texts
        self._split = split

    def __len__(self) -> int:
        return len(self._texts)

    def __iter__(self) -> Iterator[dict[str, str]]:
        return map(self._split, self._texts)

    def __getitem__(self, index: int) -> dict[str, str]:
        return self._split(self._texts[index])

    def pick(self, indexes: range | list[int]) -> Iterator[tuple[int, dict[str, str]]]:
        """(index, row) for each of ``indexes``, in their order."""
        if not isinstance(indexes, range) or indexes.step < 0:
            return ((i, self[i]) for i in indexes)
        split = self._split
        return ((i, split(t)) for i, t in enumerate(self._texts) if i in indexes)


class _Lines(Sequence):
    """The lines of a text (``\r`` dropped at their ends), cut out as they
    are read; ``len`` counts them once."""

    def __init__(self, text: str):
        self._text = text
        self._count = text.count("\n") + (0 if not text or text.endswith("\n") else 1)

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[str]:
        text, start, end = self._text, 0, len(self._text)
        while start < end:
            stop = text.find("\n", start)
            if stop < 0:
                stop = end
            yield text[start:stop].rstrip("\r")
            start = stop + 1

    def __getitem__(self, index: int) -> str:
        if isinstance(index, slice) or not -self._count <= index < self._count:
            raise IndexError(index)
        index %= self._count
        for i, line in enumerate(self):
            if i == index:
                return line
        raise IndexError(index)


class _Skip1(Sequence):
    """A sequence without its first element (``from table``'s header line)."""

    def __init__(self, texts: Sequence[str]):
        self._texts = texts

    def __len__(self) -> int:
        return len(self._texts) - 1

    def __iter__(self) -> Iterator[str]:
        it = iter(self._texts)
        next(it, None)
        return it

    def __getitem__(self, index: int) -> str:
        if not -len(self) <= index < len(self):
            raise IndexError(index)
        return self._texts[index % len(self) + 1]


_BLANK_LINE = re.compile(r"^[ \t]*\r?$", re.MULTILINE)


def _check_not_blank(texts: Sequence[str], where) -> None:
    """``SubmitError`` naming the first empty item row."""
    if isinstance(texts, _Lines):
        text = texts._text
        for m in _BLANK_LINE.finditer(text):
            if m.start() == len(text) and text.endswith("\n"):
                break    # the end of the last line, not a row of its own
            row = text.count("\n", 0, m.start()) + 1
            raise _fail(f"invalid Queue statement: item row {row} is empty", where)
        return
    for i, text in enumerate(texts):
        if not text.strip(" \t"):
            raise _fail(f"invalid Queue statement: item row {i + 1} is empty", where)


def load_rows(spec: QueueSpec, env, where, max_jobs: int | None = None,
              per_row: int = 1) -> Rows | None:
    """Every row of the (unsliced) item list, as ``Rows`` (split when read);
    None when there are no items.  With ``max_jobs``: ``SubmitError`` as soon
    as the rows (``per_row`` jobs each) would make more jobs than that."""
    if spec.mode is None:
        return None
    names = spec.variables
    limit = None if max_jobs is None else max_jobs // max(per_row, 1)

    def check(n: int) -> None:
        if limit is not None and n > limit:
            raise _fail(too_many_jobs(max_jobs), where)
    if spec.mode == "in":
        lines = _block_lines(spec) if spec.block is not None else [spec.items or ""]
        texts = [t for line in lines for t in _SEPARATORS.split(line) if t]
        split = partial(_first_only, names=names)
    elif spec.mode == "from":
        if spec.block is not None:
            texts = [line.strip(" \t") for line in _block_lines(spec)]
        elif spec.inline:
            texts = [spec.items.strip(" \t")]
        else:
            texts = _read_rows(spec.items, env, where, check)
        _check_not_blank(texts, where)
        split = row_splitter(names)
        if spec.table and len(texts):
            split = _table_splitter(_table_header(texts[0], where))
            texts = texts[1:] if isinstance(texts, list) else _Skip1(texts)
    else:
        lines = _block_lines(spec) if spec.block is not None else [spec.items or ""]
        patterns = [t for line in lines for t in line.split() if t]
        texts = _glob(patterns, spec.qualifier, env)
        split = partial(_first_only, names=names)
    check(len(texts))
    return Rows(texts, split) if len(texts) else None


def _block_lines(spec: QueueSpec) -> list[str]:
    return [line for line in spec.block if not line.lstrip(" \t").startswith("#")]


def _first_only(token: str, names: tuple[str, ...]) -> dict[str, str]:
    row = dict.fromkeys(names, "")
    row[names[0]] = token
    return row


def _read_rows(name: str, env, where, check) -> _Lines:
    if name.endswith("|"):
        raise _fail("invalid Queue statement: 'from command |' is not supported", where)
    try:
        text = env.read_file(name)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise _fail(f"can't open file {name}: {reason}", where) from None
    lines = _Lines(text)
    check(len(lines))
    return lines


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
