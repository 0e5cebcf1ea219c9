"""HTCondor configuration language: parse text, expand macros, type values.

Pure: text in, tables out.  Reading files and the environment is the
caller's job (``daemons/config_files.py``); an ``include`` directive asks the
``read`` callable it is given.

The syntax understood (HTCondor's, as in ``condor_config``)::

    # comment                       (a line whose first non-blank is '#')
    NAME = value                    (names are case-insensitive)
    NAME = first part \\            (a trailing backslash continues the line)
           second part
    NAME @=end                      (a multi-line value, up to the line '@end')
    ...
    @end
    $(NAME)  $(NAME:default)        (references, expanded on lookup)
    $ENV(VAR)  $ENV(VAR:default)    (environment, from the env mapping given)
    $$(NAME)                        (match-time reference, left as is)
    use ROLE: Personal              (metaknobs; only the ones listed in METAKNOBS)
    include : path                  (asks ``read(path)`` for more text)
    if / elif / else / endif        (with true/false/defined NAME/version tests)

Values are strings until ``typed_value`` converts one by the parameter's
declared type (``PARAM_TYPES``): ``param["UPDATE_INTERVAL"]`` is an int,
an unknown parameter stays a str, as in htcondor2.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

import attrs

from jobledger.eventcore.errors import ConfigError

_NAME = r"[A-Za-z_.][A-Za-z0-9_.]*"
_ASSIGN_RE = re.compile(rf"^\s*({_NAME})\s*=(.*)$")
_MULTI_RE = re.compile(rf"^\s*({_NAME})\s*@=\s*(\S+)\s*$")
_USE_RE = re.compile(r"^\s*use\s+([A-Za-z_]+)\s*:\s*(.*)$", re.IGNORECASE)
_INCLUDE_RE = re.compile(r"^\s*include\s*(?:command)?\s*:\s*(.*)$", re.IGNORECASE)
_COND_RE = re.compile(r"^\s*(if|elif|else|endif)\b\s*(.*)$", re.IGNORECASE)
_REF_RE = re.compile(r"\$(ENV)?\(([^()$]*)\)")

MAX_EXPANSION_DEPTH = 32
MAX_INCLUDE_DEPTH = 10

# Metaknobs the personal pool uses: ``use CATEGORY: Name`` -> settings.
METAKNOBS: dict[tuple[str, str], str] = {
    ("ROLE", "PERSONAL"): "DAEMON_LIST = MASTER COLLECTOR NEGOTIATOR SCHEDD STARTD\n"
                          "CONDOR_HOST = 127.0.0.1\n",
    ("ROLE", "SUBMIT"): "DAEMON_LIST = $(DAEMON_LIST) SCHEDD\n",
    ("ROLE", "EXECUTE"): "DAEMON_LIST = $(DAEMON_LIST) STARTD\n",
    ("ROLE", "CENTRALMANAGER"): "DAEMON_LIST = $(DAEMON_LIST) COLLECTOR NEGOTIATOR\n",
    ("FEATURE", "GPUS"): "",
    ("FEATURE", "PARTITIONABLESLOT"): "NUM_SLOTS = 1\nNUM_SLOTS_TYPE_1 = 1\n"
                                      "SLOT_TYPE_1 = 100%\nSLOT_TYPE_1_PARTITIONABLE = TRUE\n",
    ("POLICY", "ALWAYS_RUN_JOBS"): "START = TRUE\nSUSPEND = FALSE\nPREEMPT = FALSE\n",
}

# Declared types of the parameters we know (HTCondor's param table, the part we use).
PARAM_TYPES: dict[str, type] = {
    **{name: int for name in (
        "UPDATE_INTERVAL", "NEGOTIATOR_INTERVAL", "NEGOTIATOR_CYCLE_DELAY", "SCHEDD_INTERVAL",
        "PERIODIC_EXPR_INTERVAL", "MAX_PERIODIC_EXPR_INTERVAL", "MAX_JOBS_RUNNING",
        "MAX_JOBS_PER_SUBMISSION",
        "POLLING_INTERVAL", "NUM_CPUS", "MEMORY", "MAX_JOBS_SUBMITTED", "SYSTEM_MAX_RELEASES",
        "CLASSAD_LIFETIME", "MASTER_BACKOFF_CONSTANT", "MASTER_BACKOFF_CEILING",
        "MASTER_UPDATE_INTERVAL", "STARTER_UPDATE_INTERVAL", "SHADOW_QUEUE_UPDATE_INTERVAL",
        "JOB_DEFAULT_REQUESTMEMORY", "JOB_DEFAULT_REQUESTDISK", "JOB_DEFAULT_REQUESTCPUS",
        "KILLING_TIMEOUT", "MAX_HISTORY_LOG", "MAX_HISTORY_ROTATIONS", "HISTORY_HELPER_MAX_HISTORY",
        "SCHEDD_QUERY_WORKERS", "STARTD_NOCLAIM_SHUTDOWN", "COLLECTOR_UPDATE_INTERVAL",
        "MAX_JOB_RETIREMENT_TIME", "JOB_START_DELAY", "JOB_START_COUNT", "SHUTDOWN_GRACEFUL_TIMEOUT",
        "SCHEDD_RECONNECT_TIMEOUT", "JOB_LEASE_DURATION", "STARTER_INITIAL_UPDATE_INTERVAL",
        "NEGOTIATOR_MAX_TIME_PER_CYCLE", "DETECTED_CORES", "DETECTED_MEMORY", "DETECTED_CPUS",
    )},
    **{name: bool for name in (
        "ENABLE_SOAP", "USE_SHARED_PORT", "CONDOR_Q_ONLY_MY_JOBS", "IGNORE_ATTEMPTS_TO_SET_SECURE_JOB_ATTRS",
        "HISTORY_CONTAINS_JOB_ENVIRONMENT", "SLOT_TYPE_1_PARTITIONABLE", "USE_PID_NAMESPACES",
        "ALLOW_SCRIPTS_TO_RUN_AS_EXECUTABLES", "CLASSAD_LOG_STRICT_PARSING", "SUBMIT_SKIP_FILECHECK",
        "JOB_EVENT_LOG_USE_XML", "ENABLE_USERLOG_LOCKING", "CREATE_CORE_FILES",
    )},
    **{name: float for name in ("NEGOTIATOR_MIN_INTERVAL_FLOAT", "DEFAULT_PRIO_FACTOR")},
}

_TRUE = {"true", "yes", "t", "y", "1"}
_FALSE = {"false", "no", "f", "n", "0"}


@attrs.frozen
class Setting:
    """One ``NAME = value`` as read: raw (unexpanded) value and where it came from."""

    name: str
    value: str
    source: str
    line: int


@attrs.define
class ConfigTable:
    """Settings by upper-cased name, in first-definition order; later ones win."""

    settings: dict[str, Setting] = attrs.field(factory=dict)

    def set(self, setting: Setting) -> None:
        self.settings[setting.name.upper()] = setting

    def raw(self, name: str) -> str | None:
        found = self.settings.get(name.upper())
        return None if found is None else found.value

    def names(self) -> list[str]:
        return [s.name for s in self.settings.values()]

    def copy(self) -> "ConfigTable":
        return ConfigTable(dict(self.settings))


def parse_config(text: str, source: str = "<config>", table: ConfigTable | None = None,
                 read: Callable[[str], str] | None = None, env: Mapping[str, str] | None = None,
                 _depth: int = 0) -> ConfigTable:
    """Read configuration text into ``table`` (a new one by default) and return it.

    ``read(path)`` supplies the text of ``include`` files; ``env`` answers
    ``$ENV()`` in ``if`` tests.  Any malformed line raises ``ConfigError``
    naming ``source`` and the line number, and ``table`` is left unchanged.
    """
    base = table if table is not None else ConfigTable()
    work = base.copy()
    lines = _logical_lines(text, source)
    conditions: list[list[bool]] = []  # per open if: [this branch active, some branch taken]
    index = 0
    while index < len(lines):
        lineno, line = lines[index]
        index += 1
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        cond = _COND_RE.match(line)
        if cond and (cond.group(1).lower() in ("else", "endif") or cond.group(2)):
            _conditional(cond.group(1).lower(), cond.group(2), conditions, work, env, source, lineno)
            continue
        if conditions and not all(c[0] for c in conditions):
            multi = _MULTI_RE.match(line)
            if multi:
                index = _skip_multiline(lines, index, multi.group(2), source, lineno)
            continue
        multi = _MULTI_RE.match(line)
        if multi:
            body, index = _read_multiline(lines, index, multi.group(2), source, lineno)
            work.set(Setting(multi.group(1), body, source, lineno))
            continue
        use = _USE_RE.match(line)
        if use:
            _apply_metaknobs(use.group(1), use.group(2), work, source, lineno)
            continue
        include = _INCLUDE_RE.match(line)
        if include:
            _include(include.group(1).strip(), work, read, env, source, lineno, _depth)
            continue
        assign = _ASSIGN_RE.match(line)
        if assign:
            name = assign.group(1)
            work.set(Setting(name, _self_reference(name, assign.group(2).strip(), work), source, lineno))
            continue
        raise ConfigError(f"not a configuration line: {stripped!r}", source, lineno)
    if conditions:
        raise ConfigError("'if' without 'endif'", source, lines[-1][0] if lines else 1)
    base.settings.clear()
    base.settings.update(work.settings)
    return base


def _self_reference(name: str, value: str, table: ConfigTable) -> str:
    """``$(NAME)`` in NAME's own value is its value so far (empty when it had none): HTCondor
    substitutes it as the line is read, so ``PATH = $(PATH) more`` appends."""
    if "$" not in value:
        return value
    pattern = re.compile(r"\$\(" + re.escape(name) + r"\)", re.IGNORECASE)
    if not pattern.search(value):
        return value
    before = table.raw(name) or ""
    return pattern.sub(lambda _m: before, value)


def _logical_lines(text: str, source: str) -> list[tuple[int, str]]:
    """Physical lines joined at trailing backslashes; each with its first line number."""
    out: list[tuple[int, str]] = []
    pending: list[str] = []
    start = 0
    for number, physical in enumerate(text.splitlines(), start=1):
        if not pending:
            start = number
            if physical.lstrip().startswith("#"):
                out.append((number, ""))
                continue
        if physical.endswith("\\"):
            pending.append(physical[:-1])
            continue
        pending.append(physical)
        out.append((start, "".join(pending)))
        pending = []
    if pending:
        out.append((start, "".join(pending)))
    return out


def _read_multiline(lines, index, tag, source, lineno) -> tuple[str, int]:
    body = []
    while index < len(lines):
        _, line = lines[index]
        index += 1
        if line.strip() == f"@{tag}":
            return "\n".join(body), index
        body.append(line)
    raise ConfigError(f"multi-line value has no closing '@{tag}'", source, lineno)


def _skip_multiline(lines, index, tag, source, lineno) -> int:
    return _read_multiline(lines, index, tag, source, lineno)[1]


def _apply_metaknobs(category: str, names: str, table: ConfigTable, source: str, lineno: int) -> None:
    for name in [n for n in re.split(r"[\s,]+", names.strip()) if n]:
        body = METAKNOBS.get((category.upper(), name.upper()))
        if body is None:
            raise ConfigError(f"unknown metaknob 'use {category}: {name}'", source, lineno)
        for setting in parse_config(body, f"<use {category.upper()}:{name}>").settings.values():
            # Metaknob lines may refer to the value they replace ($(DAEMON_LIST) ...).
            value = setting.value.replace(f"$({setting.name})", table.raw(setting.name) or "")
            table.set(Setting(setting.name, value.strip(), source, lineno))


def _include(path: str, table: ConfigTable, read, env, source: str, lineno: int, depth: int) -> None:
    if read is None:
        raise ConfigError(f"include of {path!r} is not allowed here", source, lineno)
    if depth >= MAX_INCLUDE_DEPTH:
        raise ConfigError(f"includes nested deeper than {MAX_INCLUDE_DEPTH}", source, lineno)
    target = expand(path, table, env or {})
    try:
        text = read(target)
    except OSError as exc:
        raise ConfigError(f"cannot include {target!r}: {exc.strerror or exc}", source, lineno) from exc
    parse_config(text, target, table, read, env, depth + 1)


def _conditional(word, test, stack, table, env, source, lineno) -> None:
    if word == "if":
        active = _truth(test, table, env, source, lineno) if all(c[0] for c in stack) else False
        stack.append([active, active])
        return
    if not stack:
        raise ConfigError(f"'{word}' without 'if'", source, lineno)
    current = stack[-1]
    if word == "endif":
        stack.pop()
    elif word == "else":
        current[0] = not current[1]
        current[1] = True
    else:  # elif
        active = not current[1] and _truth(test, table, env, source, lineno)
        current[0] = active
        current[1] = current[1] or active


def _truth(test: str, table: ConfigTable, env, source: str, lineno: int) -> bool:
    words = test.strip().split()
    negate = bool(words) and words[0] == "!"
    if negate:
        words = words[1:]
    if len(words) == 2 and words[0].lower() == "defined":
        result = table.raw(words[1]) is not None
    elif len(words) == 1:
        value = expand(words[0], table, env or {}).strip().lower()
        if value in _TRUE:
            result = True
        elif value in _FALSE or value == "":
            result = False
        else:
            raise ConfigError(f"cannot evaluate 'if {test.strip()}'", source, lineno)
    elif words and words[0].lower() == "version":
        result = True  # we claim the current HTCondor version: version tests pass
    else:
        raise ConfigError(f"cannot evaluate 'if {test.strip()}'", source, lineno)
    return result != negate


def expand(value: str, table: ConfigTable, env: Mapping[str, str], _depth: int = 0,
           _seen: frozenset[str] = frozenset()) -> str:
    """``value`` with every ``$(NAME)``, ``$(NAME:default)`` and ``$ENV(X)`` replaced.

    ``$$(...)`` is kept as is (a match-time reference).  A reference to an
    undefined name without a default expands to ``""``, as in HTCondor.
    A reference cycle raises ``ConfigError``.
    """
    if "$" not in value:
        return value
    if _depth > MAX_EXPANSION_DEPTH:
        raise ConfigError(f"macro expansion deeper than {MAX_EXPANSION_DEPTH}: {value!r}")
    out: list[str] = []
    pos = 0
    for match in _REF_RE.finditer(value):
        start = match.start()
        if start > 0 and value[start - 1] == "$":
            continue  # $$(...): match-time
        out.append(value[pos:start])
        pos = match.end()
        name, _, default = match.group(2).partition(":")
        name = name.strip()
        if match.group(1):
            out.append(env.get(name, default))
            continue
        if name.upper() in _seen:
            raise ConfigError(f"macro {name} refers to itself")
        raw = table.raw(name)
        if raw is None:
            out.append(expand(default, table, env, _depth + 1, _seen))
        else:
            out.append(expand(raw, table, env, _depth + 1, _seen | {name.upper()}))
    out.append(value[pos:])
    return "".join(out)


_DECLARED = {"int": int, "long": int, "double": float, "bool": bool,
             "string": str, "path": str}


def typed_value(name: str, text: str, declared: str | None = None):
    """``text`` converted by ``name``'s declared type (``declared``: HTCondor's param
    table type name; else ``PARAM_TYPES``); str when unknown or unparsable.  A number
    parameter may be a ClassAd expression (``MIN({$(DETECTED_MEMORY), 10000})``), which
    is evaluated, as HTCondor's param_integer does."""
    kind = _DECLARED.get(declared or "") or PARAM_TYPES.get(name.upper())
    stripped = text.strip()
    if kind in (int, float):
        try:
            return kind(stripped)
        except ValueError:
            value = _evaluated_number(stripped)
            return stripped if value is None else kind(value)
    if kind is bool:
        low = stripped.lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
        return stripped
    return text


def _evaluated_number(text: str):
    """The number a constant ClassAd expression evaluates to (None otherwise)."""
    from jobledger.eventcore.classad import ExprTree
    from jobledger.eventcore.errors import ClassAdError
    try:
        value = ExprTree(text).eval()
    except (ClassAdError, RecursionError, ValueError, TypeError):
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value


_BOOL_WORD = re.compile(r"^(true|1|false|0)\s*$", re.IGNORECASE)


def param_boolean(name: str, text: str | None, default: bool, setting: Setting | None = None) -> bool:
    """A boolean setting as HTCondor's ``param_boolean`` reads it: ``default`` when unset;
    ``true``/``1`` and ``false``/``0`` (any case, trailing blanks); else the value as a
    ClassAd expression, true when it evaluates to true or a non-zero number.  Anything
    else -- ``yes`` is an attribute reference, undefined -- is a ``ConfigError`` in
    HTCondor's words (its daemons stop on it), naming where the setting was made."""
    if text is None or not text.strip():
        return default
    word = _BOOL_WORD.match(text.lstrip())
    if word:
        return word.group(1).lower() in ("true", "1")
    from jobledger.eventcore.classad import ExprTree
    from jobledger.eventcore.errors import ClassAdError
    try:
        value = ExprTree(text.strip()).eval()
    except (ClassAdError, RecursionError, ValueError, TypeError):
        value = None
    if type(value) is bool:
        return value
    if type(value) in (int, float):       # (not Undefined or Error: enum members are ints)
        return value != 0
    raise ConfigError(f'{name} in the condor configuration  is not a valid boolean ("{text.strip()}").  '
                      f"Please set it to True or False (default is {default})",
                      setting.source if setting else None, setting.line if setting else None)
