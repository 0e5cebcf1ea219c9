"""How condor_q, condor_history and condor_status print ads.

* ``AutoFormat``: ``-af[:jlhVrTY,tng] attr...`` (HTCondor's print mask: a
  column prefix before every column but the first, a suffix after every
  column but the last, a newline ending each row; values as ``%v``: strings
  bare, other values as the old ClassAd syntax writes them, ``undefined``
  when the attribute is missing).
* ``Formats``: ``-format FMT attr`` pairs, printf(3) conversions.
* ``ListWriter``: ``-long``, ``-json`` and ``-xml`` lists of whole ads, with
  HTCondor's separators and footer.

Attributes may be expressions (``-af 'ClusterId * 10'``); ``references``
tells the caller which attributes to fetch.
"""

from __future__ import annotations

import re

from jobledger.eventcore.classad import ClassAd, ExprTree
from jobledger.eventcore.classad import evaluate as E
from jobledger.eventcore.classad.ad import value_node
from jobledger.eventcore.classad.formats import print_json_pairs
from jobledger.eventcore.classad.unparse import quote_string_old, unparse_old
from jobledger.eventcore.classad.values import ERROR, UNDEF
from jobledger.eventcore.errors import ClassAdError

from jobledger.eventcore.adwire import NotLiteral, literal, to_classad
from jobledger.condor_cli.args import Usage

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")


def compile_attr(text: str, prog: str) -> ExprTree:
    """An attribute name or expression of -af/-format (a usage error when it is not one)."""
    try:
        return ExprTree(text)
    except (ClassAdError, ValueError):
        raise Usage(f"{prog}: attribute or expression is not valid: {text}", show_usage=False) from None


def references(exprs) -> list[str] | None:
    """Attribute names the expressions read (None: fetch whole ads)."""
    names: list[str] = []
    scratch = ClassAd()
    for expr in exprs:
        try:
            refs = scratch.externalRefs(expr)
        except Exception:  # an expression we cannot analyse: fetch everything
            return None
        for ref in refs:
            if ref not in names:
                names.append(ref)
    return names


def evaluate(expr: ExprTree, ad: ClassAd):
    """The run-time value of ``expr`` in ``ad`` (UNDEF/ERROR are values here)."""
    return E.evaluate(expr, ad, None)


def value_text(value, quoted: bool = False) -> str:
    """``%v`` (strings bare) or ``%V`` (strings quoted) text of a run-time value."""
    kind = type(value)
    if kind is int:
        return str(value)
    if kind is bool:
        return "true" if value else "false"
    if kind is str:
        return quote_string_old(value) if quoted else value
    if value is UNDEF:
        return "undefined"
    if value is ERROR:
        return "error"
    return unparse_old(value_node(value))


def raw_text(ad: ClassAd, expr: ExprTree) -> str:
    """``%r``: the unevaluated expression (an attribute's own text)."""
    if _NAME.match(str(expr)):
        return ad.lookup(str(expr)).old_text() if str(expr) in ad else "undefined"
    return expr.old_text()


def _elapsed(value) -> str:
    """``%T``: HTCondor's format_time, ``DDD+HH:MM:SS`` with the days right-aligned in 3."""
    seconds = int(value) if type(value) in (int, float) else 0
    return f"{seconds // 86400:3d}+{seconds % 86400 // 3600:02d}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def _date(value) -> str:
    """``%Y``: HTCondor's format_date (``M/D HH:MM``)."""
    from jobledger.condor_cli.table import qdate
    return qdate(value) if type(value) in (int, float) else ""


class AutoFormat:
    """``-af[:opts] attr...`` rows (see the module docstring)."""

    def __init__(self, attrs: list[str], options: str | None, prog: str):
        opts = options or ""
        if "l" in opts and "h" in opts:
            raise Usage(f"{prog}: -af options l and h cannot be used together", show_usage=False)
        self.labels = "l" in opts
        self.headings = "h" in opts
        self.job_id = "j" in opts
        self.kind = next((k for k in "rVTY" if k in opts or (k == "r" and "o" in opts)), "v")
        self.row_prefix = "\n" if "g" in opts else ""
        self.col_prefix = "\t" if "t" in opts else ("" if "g" in opts else " ")
        self.col_suffix = "\n" if "n" in opts else ("," if "," in opts else "")
        self.names = attrs
        self.exprs = [compile_attr(a, prog) for a in attrs]
        self.plain = [str(e) if _NAME.match(str(e)) and "." not in str(e) else None for e in self.exprs]
        self.printed_heading = False

    def projection(self) -> list[str] | None:
        names = references(self.exprs)
        if names is not None and self.job_id:
            names = ["ClusterId", "ProcId"] + [n for n in names if n not in ("ClusterId", "ProcId")]
        return names

    def _cell(self, ad: ClassAd, expr: ExprTree) -> str:
        if self.kind == "r":
            return raw_text(ad, expr)
        value = evaluate(expr, ad)
        if self.kind == "T":
            return _elapsed(value)
        if self.kind == "Y":
            return _date(value)
        return value_text(value, self.kind == "V")

    def row_exprs(self, exprs: dict) -> str:
        """``row`` of an ad in its wire form; literal values are printed without
        building a ClassAd (the fast path for many jobs), anything else through one."""
        if self.kind not in "vV" or self.labels:
            return self.row(to_classad(exprs))
        cells = [f"{exprs.get('ClusterId')}.{exprs.get('ProcId')}"] if self.job_id else []
        for name in self.plain:
            if name is None:
                return self.row(to_classad(exprs))
            text = exprs.get(name)
            if text is not None and text.isdigit() and (text[0] != "0" or text == "0") and text.isascii():
                cells.append(text)      # an integer literal prints as it is written
                continue
            if text is None:
                folded = {k.lower(): v for k, v in exprs.items()}
                if name.lower() not in folded:
                    cells.append("undefined")
                    continue
                text = folded[name.lower()]
            try:
                value = literal(text)
            except NotLiteral:
                return self.row(to_classad(exprs))
            if value is None or type(value) not in (int, str, bool):
                return self.row(to_classad(exprs))
            cells.append(value_text(value, self.kind == "V"))
        return self._join(cells)

    def row(self, ad: ClassAd) -> str:
        cells = []
        labels = []
        if self.job_id:
            cells.append(f"{ad.get('ClusterId', '')}.{ad.get('ProcId', '')}")
            labels.append("ID")
        for name, expr in zip(self.names, self.exprs):
            cells.append(self._cell(ad, expr))
            labels.append(name)
        if self.labels:
            cells = [f"{label} = {cell}" for label, cell in zip(labels, cells)]
        return self._join(cells)

    def row_values(self, values: list) -> str:
        """A row of values rather than an ad (HTCondor's print mask rendering a row): the
        i-th column shows the i-th value in its format; a column past the values, or one
        whose value is None, is empty (the mask's alternate text)."""
        cells = []
        labels = (["ID"] if self.job_id else []) + list(self.names)
        for index, label in enumerate(labels):
            value = values[index] if index < len(values) else None
            if value is None:
                cells.append("")
                continue
            if self.kind in "TY":
                number = value if isinstance(value, (int, float)) and not isinstance(value, bool) else 0
                text = _elapsed(number) if self.kind == "T" else _date(number)
            else:
                text = value_text(value, self.kind == "V")
            cells.append(f"{label} = {text}" if self.labels else text)
        return self._join(cells)

    def _join(self, cells: list[str]) -> str:
        return self.row_prefix + (self.col_suffix + self.col_prefix).join(cells) + "\n"

    def heading(self) -> str:
        if not self.headings or self.printed_heading:
            return ""
        self.printed_heading = True
        names = (["ID"] if self.job_id else []) + list(self.names)
        return self._join(names)


_CONVERSION = re.compile(r"%([-+ #0]*\d*(?:\.\d+)?)(l{0,2}|h{0,2})([diouxXeEfFgGsvVrcTY%])")
_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "r": "\r", "a": "\a"}


def c_escapes(text: str) -> str:
    """``\\n``-style escapes of a -format string, as HTCondor collapses them."""
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(0)), text)


class Formats:
    """``-format FMT attr`` pairs: each prints its text with the value converted."""

    def __init__(self, prog: str):
        self.prog = prog
        self.items: list[tuple[str, ExprTree]] = []

    def add(self, fmt: str, attr: str) -> None:
        self.items.append((c_escapes(fmt), compile_attr(attr, self.prog)))

    def projection(self) -> list[str] | None:
        return references([e for _, e in self.items])

    def render(self, ad: ClassAd) -> str:
        out = []
        for fmt, expr in self.items:
            value = evaluate(expr, ad)
            if value is not UNDEF:  # HTCondor prints nothing for an undefined item
                out.append(_printf(fmt, value, ad, expr))
        return "".join(out)


def _printf(fmt: str, value, ad: ClassAd, expr: ExprTree) -> str:
    def one(match: re.Match) -> str:
        flags, _, letter = match.groups()
        if letter == "%":
            return "%"
        if letter in "diouxXc":
            number = value if type(value) in (int, bool) else (int(value) if type(value) is float else 0)
            if letter == "c":
                return chr(number)
            return ("%" + flags + ("d" if letter in "iu" else letter)) % number
        if letter in "eEfFgG":
            number = float(value) if type(value) in (int, float, bool) else 0.0
            return ("%" + flags + letter) % number
        if letter == "r":
            text = raw_text(ad, expr)
        elif letter == "T":
            text = _elapsed(value)
        elif letter == "Y":
            text = _date(value)
        else:
            text = value_text(value, letter == "V")
        return ("%" + flags + "s") % text
    return _CONVERSION.sub(one, fmt)


class ListWriter:
    """-long / -json / -xml lists of whole ads (HTCondor's ClassAd list writer)."""

    XML_HEAD = '<?xml version="1.0"?>\n<!DOCTYPE classads SYSTEM "classads.dtd">\n<classads>\n'

    def __init__(self, form: str, attributes: list[str] | None = None):
        self.form = form
        self.attributes = attributes
        self.count = 0

    def _pairs(self, ad: ClassAd):
        if self.attributes:
            wanted = {a.lower() for a in self.attributes}
            names = [k for k in ad.keys() if k.lower() in wanted]
        else:
            names = list(ad.keys())
        return sorted(((name, ad.lookup(name)) for name in names), key=lambda p: p[0].lower())

    def ad(self, ad: ClassAd) -> str:
        pairs = self._pairs(ad)
        if not pairs:
            return ""
        first = self.count == 0
        self.count += 1
        if self.form == "long":
            return "".join(f"{name} = {expr.old_text()}\n" for name, expr in pairs) + "\n"
        if self.form == "json":
            return ("[\n" if first else ",\n") + print_json_pairs(pairs) + "\n"
        return (self.XML_HEAD if first else "") + _xml_ad(pairs)

    def footer(self, always: bool = False) -> str:
        if self.form == "json":
            return "]\n" if self.count else ""
        if self.form == "xml":
            if self.count:
                return "</classads>\n"
            return self.XML_HEAD + "</classads>\n" if always else ""
        return ""


def _xml_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;") \
        .replace("'", "&apos;")


def _xml_value(node) -> str:
    from jobledger.eventcore.classad import nodes as N
    if type(node) is N.Literal:
        v = node.value
        if type(v) is bool:
            return f'<b v="{"t" if v else "f"}"/>'
        if type(v) is int:
            return f"<i>{v}</i>"
        if type(v) is float:
            return f"<r>{v:.15E}</r>"
        if type(v) is str:
            return f"<s>{_xml_escape(v)}</s>"
        if v is UNDEF:
            return "<un/>"
        if v is ERROR:
            return "<er/>"
    if type(node) is N.ListExpr:
        return "<l>" + "".join(_xml_value(i) for i in node.items) + "</l>"
    return f"<e>{_xml_escape(unparse_old(node))}</e>"


def _xml_ad(pairs) -> str:
    lines = ["<c>\n"]
    for name, expr in pairs:
        lines.append(f'    <a n="{_xml_escape(name)}">{_xml_value(expr.node)}</a>\n')
    lines.append("</c>\n")
    return "".join(lines)


class Output:
    """The output options condor_q, condor_history and condor_status share:
    ``-af``/``-autoformat``, ``-format``, ``-long``/``-json``/``-xml`` and ``-attributes``.

    ``take(args)`` consumes one of them (False when the current argument is
    something else); ``projection(default)`` is what to fetch; ``write``
    prints the ads if one of these forms was asked for (True) or leaves the
    command's own table to it (False)."""

    def __init__(self, prog: str):
        self.prog = prog
        self.show: AutoFormat | Formats | None = None
        self.listing: str | None = None
        self.attributes: list[str] | None = None

    def take(self, args) -> bool:
        arg = args.current
        if args.flag("autoformat", 5) or args.flag("af", 2):
            qual, names = args.qualifier, args.words()
            if not names:
                raise Usage(f"Error: {arg} requires at least one attribute", show_usage=False)
            self.show = AutoFormat(names, qual, self.prog)
        elif args.flag("format", 2):
            self.show = self.show if isinstance(self.show, Formats) else Formats(self.prog)
            fmt = args.value()
            self.show.add(fmt, args.value())
        elif args.flag("long", 1):
            self.listing = "long"
        elif args.flag("json", 2) or args.flag("xml", 2):
            form = "json" if args.flag("json", 2) else "xml"
            if self.listing in ("json", "xml") and self.listing != form:
                raise Usage("Error: Cannot print as both XML and JSON", show_usage=False)
            self.listing = form
        elif args.flag("attributes", 2):
            self.attributes = [a.strip() for a in args.value().split(",") if a.strip()]
        else:
            return False
        return True

    def projection(self, default: list[str]) -> list[str]:
        if self.show:
            return self.show.projection() or []
        if self.listing:
            return self.attributes or []
        return default

    def wants_exprs(self) -> bool:
        """Can ``write`` take ads in their wire form (``write_exprs``)?"""
        return isinstance(self.show, AutoFormat)

    def write_exprs(self, out, items) -> None:
        out.write(self.show.heading())
        out.writelines(self.show.row_exprs(exprs) for exprs in items)

    def write(self, out, ads) -> bool:
        if self.show:
            if isinstance(self.show, AutoFormat):
                out.write(self.show.heading())
                out.write("".join(self.show.row(ad) for ad in ads))
            else:
                out.write("".join(self.show.render(ad) for ad in ads))
            return True
        if self.listing:
            writer = ListWriter(self.listing, self.attributes)
            for ad in ads:
                out.write(writer.ad(ad))
            out.write(writer.footer(always=True))
            return True
        return False
