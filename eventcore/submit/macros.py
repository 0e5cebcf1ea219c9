"""Macro expansion: ``$(NAME)``, ``$(NAME:default)``, ``$ENV()``, ``$INT()`` ...

The algorithm is HTCondor's: find the leftmost macro reference, replace it
by its value, and scan again *from the same place*, so a value that holds
references is expanded in turn (and a value referring to itself never
ends: we stop after ``MAX_STEPS`` replacements with a ``MacroError``).
``$$(...)`` is never touched; ``$(DOLLAR)`` becomes ``$`` at the very end.

What counts as a reference (HTCondor's rules, kept because the corpus shows
them): ``$(`` then identifier characters (letters, digits, ``_ . /``), an
optional ``:`` and a default made of identifier characters, blanks, ``$ , \\
:`` and parenthesised groups, then ``)``.  Anything else (``$(a-b)``,
``$(x:a-b)``) stays literal text, as does ``$Name(...)`` for a Name that is
not one of the functions below.  Function names are case-sensitive.

``Expander(lookup, env).expand(text)``; ``lookup(name)`` returns the raw
(unexpanded) value of a macro, or None when it is not defined.

Two modes: *strict* (building jobs, like condor_submit) raises
``MacroError`` when a function fails (``$CHOICE`` out of range, ``$INT`` of
text), for a capitalised ``$NAME(`` that is no function, and for a
circular reference; *lenient* (``Submit.expand``, like htcondor2) expands a
failing function to nothing and an invalid printf format to the format
text, and leaves unknown ``$NAME(...)`` alone.  A circular reference raises
in both (htcondor2 never returns).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

from jobledger.eventcore.errors import MacroError

MAX_STEPS = 5_000           # replacements in one expansion before we call it circular
MAX_LENGTH = 65_536        # characters an expansion may grow to

_IDCHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./")
_DEFAULT_EXTRA = frozenset("$ ,\\:")
_PREFIX_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_FILENAME_FLAGS = frozenset("pnxdqabfwu")

NORMAL = "$"
FUNCTIONS = frozenset({"ENV", "RANDOM_CHOICE", "RANDOM_INTEGER", "CHOICE", "SUBSTR", "INT", "REAL",
                       "STRING", "EVAL", "BASENAME", "DIRNAME"})
_IDCHAR_BODY = frozenset({NORMAL, "ENV"})   # bodies limited to identifier characters (+ default)

# `$NAME(` in capitals that is no function: condor_submit-style code says so
# (htcondor2's expand() leaves it as text; the lenient mode does the same).
_UNCLOSED = re.compile(r"\$[A-Za-z_]*\((?![^)]*\))")   # "$(Foo" with no ")" after it
_UNKNOWN_FUNCTION = re.compile(r"(?<!\$)\$(?!(?:ENV|RANDOM_CHOICE|RANDOM_INTEGER|CHOICE|SUBSTR|INT|REAL|STRING|"
                               r"EVAL|BASENAME|DIRNAME|F[pnxdqabfwuPNXDQABFWU]*)\()([A-Z][A-Z0-9_]+)\(")

SENTINEL = "\x00"           # marks a per-job value in a symbolic expansion (see compile)


class Runaway(MacroError):
    """An expansion that never ends (a circular reference)."""


class BadFormat(MacroError):
    """A printf format that does not fit the function ($INT with %f ...)."""

    def __init__(self, message: str, fmt: str):
        super().__init__(message)
        self.fmt = fmt


class NotCompilable(Exception):
    """A per-job value reached a place where a template cannot follow it."""


def _classify(prefix: str) -> str | None:
    """The kind of reference ``prefix`` (text between ``$`` and ``(``) starts."""
    if prefix == "":
        return NORMAL
    if prefix[0] == "$":
        return None
    if prefix[0] == "F" and all(c.lower() in _FILENAME_FLAGS for c in prefix[1:]):
        return prefix      # $F<flags>
    if prefix in FUNCTIONS:
        return prefix
    return None


def find_macro(text: str, pos: int, want_dollar: bool = False):
    """The next reference at or after ``pos``:
    ``(kind, dollar, body_start, colon_or_-1, close)`` or None.

    ``want_dollar`` selects only ``$(DOLLAR)``; otherwise it is skipped."""
    n = len(text)
    find = text.find
    while True:
        d = find("$", pos)
        if d < 0:
            return None
        p = d + 1
        if p < n and text[p] == "$":
            p += 1
        while p < n and text[p] in _PREFIX_CHARS:
            p += 1
        if p >= n or text[p] != "(":
            pos = p if p > d + 1 else d + 1
            continue
        kind = _classify(text[d + 1:p])
        if kind is None:
            pos = p
            continue
        body = p + 1
        colon = -1
        q = body
        if kind in _IDCHAR_BODY:
            ok = True
            while q < n and text[q] != ")":
                c = text[q]
                q += 1
                if c == ":" and colon < 0:
                    colon = q - 1
                    continue
                if colon >= 0:
                    if c == "(":
                        close = find(")", q)
                        if close >= 0:
                            q = close + 1
                            continue
                    elif c in _DEFAULT_EXTRA:
                        continue
                if c not in _IDCHARS:
                    ok = False
                    break
            if not ok:
                pos = body
                continue
        else:
            close = find(")", q)
            q = close if close >= 0 else n
        if q >= n:
            pos = body
            continue
        is_dollar = kind == NORMAL and q - body == 6 and text[body:q].upper() == "DOLLAR"
        if is_dollar != want_dollar:
            pos = q
            continue
        return kind, d, body, colon, q


def _items(args: str) -> list[str]:
    """Comma-separated arguments, blanks trimmed, empties kept."""
    return [a.strip() for a in args.split(",")]


def _list_items(value: str) -> list[str]:
    """A comma-separated list value, blanks trimmed, empties dropped."""
    return [a for a in (x.strip() for x in value.split(",")) if a]


_PRINTF_RE = re.compile(r"^([^%]*)%([-+ #0]*)(\d*)(?:\.(\d*))?(?:hh|h|ll|l|L|q|j|z|t)?([diouxXeEfFgGcs])(.*)$",
                        re.DOTALL)
_INT_CONV = frozenset("diouxXc")
_REAL_CONV = frozenset("eEfFgG")


@functools.lru_cache(maxsize=256)
def _printf_parts(fmt: str, allowed: frozenset, fname: str) -> tuple[str, str, str, bool]:
    """(head, %-spec, tail, is %c) of a one-conversion printf format."""
    m = _PRINTF_RE.match(fmt)
    if m is None or m.group(5) not in allowed or "%" in m.group(6).replace("%%", ""):
        raise BadFormat(f"{fname} error: '{fmt}' is not a valid format specifier", fmt)
    head, flags, width, prec, conv, tail = m.groups()
    spec = "%" + flags + width + ("." + prec if prec is not None else "") + ("d" if conv == "u" else conv)
    return head.replace("%%", "%"), spec, tail.replace("%%", "%"), conv == "c"


def _printf(fmt: str, value, allowed: frozenset, fname: str) -> str:
    head, spec, tail, is_char = _printf_parts(fmt, allowed, fname)
    if is_char:
        value = int(value) % 0x110000
    try:
        return head + (spec % value) + tail
    except (TypeError, ValueError, OverflowError) as exc:
        raise MacroError(f"{fname} error: cannot format {value!r} with '{fmt}'") from exc


def _number(text: str, fname: str, want_int: bool):
    """Evaluate ``text`` as a ClassAd number (HTCondor's string_is_*_param)."""
    s = text.strip()
    try:
        return int(s, 10) if want_int else float(s)
    except ValueError:
        pass
    value = _eval_classad(s)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        kind = "an integer" if want_int else "a real"
        raise MacroError(f"{fname} error: {text} does not evaluate to {kind}")
    return int(value) if want_int else float(value)


def format_number(value, want_int: bool, fmt: str | None) -> str:
    """``$INT``/``$REAL`` output: ``value`` printed with ``fmt`` (None: default)."""
    if want_int:
        return _printf(fmt, int(value), _INT_CONV, "$INT()") if fmt is not None else str(int(value))
    if fmt is None:
        return _printf("%.16G", float(value), _REAL_CONV, "$REAL()")
    out = _printf(fmt, float(value), _REAL_CONV, "$REAL()")
    return out if "." in out else out + ".0"


def _eval_classad(text: str):
    from jobledger.eventcore.classad import ExprTree, Value
    from jobledger.eventcore.errors import ClassAdError
    try:
        value = ExprTree(text).eval()
    except (ClassAdError, RecursionError, ValueError, TypeError):
        return None
    return None if isinstance(value, Value) else value


def _eval_to_text(text: str) -> str:
    """$EVAL: the value of ClassAd ``text`` (strings raw, others unparsed); text that is not
    an expression is a MacroError, as HTCondor 25 refuses it (htcondor2 25.14.1's expand
    raises; older versions substituted the text itself)."""
    from jobledger.eventcore.classad import ExprTree
    from jobledger.eventcore.errors import ClassAdError
    try:
        tree = ExprTree(text)
    except (ClassAdError, RecursionError, ValueError, TypeError):
        raise MacroError(f"$EVAL() error: '{text.strip()[:200]}' is not a ClassAd expression") from None
    try:
        value = tree.eval()
    except (ClassAdError, RecursionError, ValueError, TypeError):
        return text             # HTCondor keeps the text when evaluation fails
    if isinstance(value, str):
        return value
    return repr(tree.simplify())


def _split_path(value: str) -> tuple[int, int]:
    """(start of the file name, index of its extension's dot or len)."""
    ixn = max(value.rfind("/"), value.rfind("\\")) + 1
    dot = value.rfind(".", ixn)
    return ixn, (dot if dot >= 0 else len(value))


_FLAG_PARTS = {"x": 1, "n": 2, "p": 4, "d": 8}


def _filename_flags(flags: str):
    """(parts bitmask, number of d's, quote char, full path, bare, path char)."""
    parts = num_dirs = 0
    quoted = full = bare = arg_quote = False
    to_char = ""
    for c in flags.lower():
        parts |= _FLAG_PARTS.get(c, 0)
        num_dirs += c == "d"
        arg_quote |= c == "a"
        bare |= c == "b"
        full |= c == "f"
        quoted |= c == "q"
        if c in "wu":
            to_char = "\\" if c == "w" else "/"
    quote = ("'" if arg_quote else '"') if quoted else ""
    return parts, num_dirs, quote, full, bare, to_char


def filename_parts(flags: str, value: str, cwd: str | None) -> str:
    """``$F<flags>(value)``: pieces of a path (see submit.md section 2.2)."""
    parts, num_dirs, quote, full, bare, to_char = _filename_flags(flags)
    if len(value) > 1 and value[0] == value[-1] and value[0] in "\"'":
        value = value[1:-1]
    if value[:1] == '"' or (quote and value[:1] == quote):     # HTCondor drops a lone leading quote
        value = value[1:-1] if value[-1:] == value[:1] and len(value) > 1 else value[1:]
    if full and cwd and not value.startswith("/"):
        if len(value) > 2 and value.startswith("./"):
            value = value[2:]
        value = cwd.rstrip("/") + "/" + value
    if to_char:
        value = value.replace("\\" if to_char == "/" else "/", to_char)
    ixn, ixx = _split_path(value)
    end = len(value)
    if ixn == 0 and parts & 3:
        parts &= ~12
    sel = parts & 0xF
    if sel == 1:
        start = ixx + 1 if bare and ixx < end else ixx
    elif sel == 3:
        start = ixn
    elif sel == 2:
        start, end = ixn, ixx
    elif sel in (0, 7, 5):
        start = 0
    elif sel == 4:
        start, end = 0, (ixn - 1 if bare and ixn > 0 else ixn)
    elif sel == 6:
        start, end = 0, ixx
    elif ixn > 0:
        seps = [i + 1 for i, c in enumerate(value) if c in "/\\"]
        del seps[len(seps) - min(num_dirs, len(seps)):]
        start = seps[-1] if seps else 0
        if parts & 3 == 2:
            end = ixx
        elif parts & 3 == 0:
            end = ixn - 1 if bare else ixn
    else:
        start = end = 0
    return quote + value[start:end] + quote


class Expander:
    """Expands macro references against ``lookup`` and an environment.

    ``cwd`` is used by ``$Ff()`` (None: paths stay relative, as offline
    htcondor2 does).  ``symbolic`` is the template mode (see
    ``compile_template``): a looked-up value holding the sentinel may only be
    substituted plainly.  ``strict`` (condor_submit): a macro function that
    fails raises ``MacroError``; otherwise (``htcondor2.Submit.expand``) it
    expands to nothing, and an invalid format to the format text itself.
    """

    __slots__ = ("lookup", "env", "cwd", "symbolic", "strict", "derive")

    def __init__(self, lookup: Callable[[str], str | None], env, cwd: str | None = None,
                 symbolic: bool = False, strict: bool = True, derive=None):
        self.lookup = lookup
        self.env = env
        self.cwd = cwd
        self.symbolic = symbolic
        self.strict = strict
        self.derive = derive      # symbolic $INT/$REAL of a numeric per-job slot -> derived slot

    def expand(self, text: str, dollar: bool = True) -> str:
        if "$" not in text:
            return text
        pos = 0
        steps = 0
        while True:
            found = find_macro(text, pos)
            if found is None:
                break
            kind, d, body, colon, close = found
            value = self._evaluate(kind, text, body, colon, close)
            text = text[:d] + value + text[close + 1:]
            pos = d
            steps += 1
            if steps > MAX_STEPS or len(text) > MAX_LENGTH:
                raise Runaway("macro expansion does not end (a macro refers to itself?)")
        if self.strict and "(" in text:
            unknown = _UNKNOWN_FUNCTION.search(text)
            if unknown:
                raise MacroError(f"unknown macro function ${unknown.group(1)}()")
            unclosed = _UNCLOSED.search(text)
            if unclosed:
                raise MacroError(f"unclosed macro reference: no ')' after '{text[unclosed.start():][:40]}'")
        if dollar:
            pos = 0
            while True:
                found = find_macro(text, pos, want_dollar=True)
                if found is None:
                    break
                d, close = found[1], found[4]
                text = text[:d] + "$" + text[close + 1:]
                pos = d         # as HTCondor: "$" + "$(DOLLAR)" now reads as "$$(" and stays
        return text

    # -- evaluation of one reference ------------------------------------
    def _evaluate(self, kind: str, text: str, body: int, colon: int, close: int) -> str:
        if kind is NORMAL or kind == "ENV":
            name = text[body:colon if colon >= 0 else close]
            if kind is NORMAL:
                value = self.lookup(name)
            else:
                value = self.env.getenv(name)
                if value is None and colon < 0:
                    value = "UNDEFINED"
            if not value:
                return text[colon + 1:close] if colon >= 0 else ""
            if colon >= 0 and self.symbolic and SENTINEL in value:
                raise NotCompilable(name)
            return value
        args = text[body:close]
        if self.symbolic and (SENTINEL in args or kind.startswith("RANDOM_")):
            raise NotCompilable(kind)     # per job: a per-job argument, or a new draw each time
        try:
            if kind[0] == "F":
                return self._filename(kind[1:], args)
            return getattr(self, "_f_" + kind)(args)
        except Runaway:
            raise
        except BadFormat as exc:
            if self.strict:
                raise
            return exc.fmt
        except MacroError:
            if self.strict:
                raise
            return ""

    def _arg(self, arg: str) -> str:
        """An argument that may name a macro: its value (expanded) or itself."""
        value = self.lookup(arg)
        out = self.expand(arg if value is None else value)
        if self.symbolic and SENTINEL in out:
            raise NotCompilable(arg)
        return out

    def _macro_value(self, name: str) -> str | None:
        value = self.lookup(name)
        if value is None:
            return None
        out = self.expand(value)
        if self.symbolic and SENTINEL in out:
            raise NotCompilable(name)
        return out

    def _filename(self, flags: str, args: str) -> str:
        value = self._macro_value(args)
        return filename_parts(flags, args if value is None else value, self.cwd)

    def _f_BASENAME(self, args: str) -> str:
        name, _, suffix = args.partition(",")
        value = self._macro_value(name.strip())
        out = filename_parts("nx", name.strip() if value is None else value, None)
        suffix = suffix.strip()
        if suffix and out.endswith(suffix) and out != suffix:
            out = out[:-len(suffix)]
        return out

    def _f_DIRNAME(self, args: str) -> str:
        value = self._macro_value(args.strip())
        return filename_parts("p", args.strip() if value is None else value, None)

    def _f_INT(self, args: str) -> str:
        return self._number(args, True)

    def _f_REAL(self, args: str) -> str:
        return self._number(args, False)

    def _number(self, args: str, want_int: bool) -> str:
        name, comma, fmt = args.partition(",")
        fmt = fmt if comma else None
        if self.derive is not None:     # $INT(ProcId,%03d) in a template: a derived slot
            raw = self.lookup(name.strip())
            if raw is not None and SENTINEL in raw:
                mark = self.derive(raw, want_int, fmt)
                if mark is not None:
                    return mark
        text = self._arg(name.strip())
        if not text.strip():
            return ""           # an empty macro formats as nothing (htcondor2 does the same)
        return format_number(_number(text, "$INT()" if want_int else "$REAL()", want_int), want_int, fmt)

    def _f_STRING(self, args: str) -> str:
        name, comma, fmt = args.partition(",")
        value = self._arg(name.strip())
        evaluated = _eval_classad(value) if value.strip() else None
        if isinstance(evaluated, str):
            value = evaluated
        return _printf(fmt, value, frozenset("s"), "$STRING()") if comma else value

    def _f_EVAL(self, args: str) -> str:
        value = self.lookup(args)
        text = self.expand(args if value is None else value)
        if self.symbolic and SENTINEL in text:
            raise NotCompilable(args)
        return _eval_to_text(text)

    def _f_SUBSTR(self, args: str) -> str:
        name, comma, rest = args.partition(",")
        if not comma:
            raise MacroError("$SUBSTR() error: no length specified")
        start_arg, comma2, len_arg = rest.partition(",")
        start = self._int_arg(start_arg, "$SUBSTR()", "start index")
        length = self._int_arg(len_arg, "$SUBSTR()", "length") if comma2 else None
        value = self._macro_value(name)
        if value is None:
            return ""
        cch = len(value)
        start = cch + start if start < 0 else start
        start = min(max(start, 0), cch)
        value = value[start:]
        if length is not None:
            length = len(value) + length if length < 0 else length
            value = value[:max(length, 0)]
        return value

    def _int_arg(self, arg: str, fname: str, what: str) -> int:
        text = self._arg(arg.strip())
        try:
            return int(text.strip(), 10)
        except ValueError:
            value = _eval_classad(text) if text.strip() else None
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return int(value)
            raise MacroError(f"{fname} error: {text} is invalid {what}") from None

    def _f_CHOICE(self, args: str) -> str:
        entries = _items(args)
        if len(entries) < 2:
            raise MacroError("$CHOICE() error: no index")
        if self.strict:
            index = self._int_arg(entries[0], "$CHOICE()", "index")
            if index < 0:
                raise MacroError(f"$CHOICE() error: '{index}' is invalid index")
        else:       # htcondor2 reads the index like C's atoi, negatives as 0
            m = re.match(r"\s*([-+]?\d+)", self._arg(entries[0]))
            index = max(int(m.group(1)), 0) if m else 0
        if len(entries) == 2:
            listed = self._macro_value(entries[1])
            if listed is None:
                raise MacroError(f"$CHOICE() error: no list named {entries[1]}")
            entries = _list_items(listed)
        else:
            entries = entries[1:]
        if index >= len(entries):
            raise MacroError(f"$CHOICE() error: index {index} is out of range")
        return entries[index]

    def _f_RANDOM_CHOICE(self, args: str) -> str:
        entries = _items(args)
        if len(entries) == 1:
            if not entries[0]:
                raise MacroError("$RANDOM_CHOICE() error: no list")
            listed = self._macro_value(entries[0])
            if listed is not None:
                entries = [e for e in re.split(r"[,\s]+", listed) if e]
        if not entries:
            raise MacroError("$RANDOM_CHOICE() error: no list")
        return entries[self.env.randint(0, len(entries) - 1)]

    def _f_RANDOM_INTEGER(self, args: str) -> str:
        entries = _items(args)
        bounds = []
        for i, what in enumerate(("min", "max", "step")):
            text = entries[i] if i < len(entries) else ""
            if not text and what == "step":
                bounds.append(1)
                continue
            try:
                bounds.append(int(text, 0))
            except ValueError:
                raise MacroError(f"$RANDOM_INTEGER() error: invalid {what}") from None
        low, high, step = bounds
        if step < 1:
            raise MacroError("$RANDOM_INTEGER() error: invalid step")
        if low > high:
            raise MacroError("$RANDOM_INTEGER() error: min > max")
        return str(low + self.env.randint(0, (high - low) // step) * step)


_SLOT_MARK = re.compile("\x00([0-9]+)\x00")


def compile_template(text: str, lookup, env, cwd, slots: dict[str, int], numeric: frozenset = frozenset(),
                     derived: list | None = None):
    """Expand ``text`` once with every per-job macro (``slots``: lower-case
    name -> slot number) kept as a placeholder.

    Returns a tuple alternating literal text and slot numbers
    (``("out.", 0, ".txt")``), or None when a per-job value feeds a
    function, a default or a ``$`` (then each job must be expanded in full).
    ``$INT()``/``$REAL()`` of a slot in ``numeric`` (ProcId, Step, ...)
    becomes a derived slot: ``(source slot, want_int, format)`` appended to
    ``derived``, numbered after the slots.
    """
    if SENTINEL in text:
        return None
    marks = {name: f"{SENTINEL}{slot}{SENTINEL}" for name, slot in slots.items()}

    def symbolic_lookup(name: str):
        mark = marks.get(name.lower())
        return mark if mark is not None else lookup(name)

    def derive(raw: str, want_int: bool, fmt: str | None):
        m = _SLOT_MARK.fullmatch(raw)
        if m is None or int(m.group(1)) not in numeric:
            return None
        format_number(0, want_int, fmt)          # a bad format fails now, like every job would
        key = (int(m.group(1)), want_int, fmt)
        if key not in derived:
            derived.append(key)
        return f"{SENTINEL}{len(slots) + derived.index(key)}{SENTINEL}"

    expander = Expander(symbolic_lookup, env, cwd, symbolic=True,
                        derive=derive if derived is not None else None)
    try:
        out = expander.expand(text)
    except NotCompilable:
        return None
    if out.count(SENTINEL) % 2:
        return None     # a macro value held the sentinel character itself
    pieces = out.split(SENTINEL)
    limit = len(slots) + (len(derived) if derived is not None else 0)
    template: list = []
    for i, piece in enumerate(pieces):
        if i % 2:
            if not piece.isdigit() or int(piece) >= limit:
                return None
            template.append(int(piece))
        else:
            if i + 1 < len(pieces) and piece.endswith("$"):
                return None
            template.append(piece)
    return tuple(template)
