"""Pratt parser for ClassAd expressions (HTCondor mode).

``parse_expr(text)`` parses one complete expression; ``Parser`` is reusable
for ad literals and for reading one expression off the front of a text (the
old format needs that).  Binding powers follow HTCondor's precedence table:

====  =============================================
bp    operators
====  =============================================
1     ``? :`` (right associative, handled apart)
2     ``||``
3     ``&&``
4     ``|``
5     ``^``
6     ``&``
7     ``== != =?= =!=`` (``is``/``isnt`` lexed as ``=?=``/``=!=``)
8     ``< <= > >=``
9     ``<< >> >>>``
10    ``+ -``
11    ``* / %``
12    prefix ``- + ! ~``
13    postfix ``.name``, ``[index]``, ``?:`` (Elvis, tighter than prefix)
====  =============================================

Limits: ``MAX_NESTING`` nested constructs (parentheses, lists, ads, calls,
prefix operators, conditional branches); deeper text is a parse error, never
a Python ``RecursionError``.
"""

from __future__ import annotations

from jobledger.eventcore.errors import ClassAdParseError

from . import nodes as N
from .lexer import _careful_tokenize, tokenize
from .ops import ascii_lower
from .values import ERROR, UNDEF

MAX_NESTING = 165

BINARY_BP = {
    "||": 2, "&&": 3, "|": 4, "^": 5, "&": 6,
    "==": 7, "!=": 7, "=?=": 7, "=!=": 7,
    "<": 8, "<=": 8, ">": 8, ">=": 8,
    "<<": 9, ">>": 9, ">>>": 9,
    "+": 10, "-": 10,
    "*": 11, "/": 11, "%": 11,
}
PREFIX = frozenset(("-", "+", "!", "~"))
_LITERAL_KINDS = frozenset(("int", "real", "str", "kw"))
_KW_VALUES = {"true": True, "false": False, "undefined": UNDEF, "error": ERROR}


class Parser:
    """Parses tokens of ``text``; ``pos`` indexes the token list."""

    def __init__(self, text: str, tokens: list | None = None):
        self.text = text
        self.toks = tokens if tokens is not None else tokenize(text)
        self.pos = 0
        self.depth = 0

    # -- helpers ---------------------------------------------------------
    def fail(self, message: str, tok=None):
        tok = tok or self.toks[self.pos]
        offset = tok[2]
        if offset < 0:                 # a fast-path token: find where it is
            index = next(i for i, t in enumerate(self.toks) if t is tok)
            offset = _careful_tokenize(self.text)[index][2]
        raise ClassAdParseError(message, self.text, offset)

    def peek(self) -> tuple:
        return self.toks[self.pos]

    def expect_op(self, op: str) -> tuple:
        tok = self.toks[self.pos]
        if tok[0] != "op" or tok[1] != op:
            self.fail(f"expected {op!r}, found {_describe(tok)}")
        self.pos += 1
        return tok

    def enter(self):
        self.depth += 1
        if self.depth > MAX_NESTING:
            self.fail(f"expression nested deeper than {MAX_NESTING} levels")

    # -- grammar ---------------------------------------------------------
    def parse_complete(self) -> N.Node:
        node = self.expression()
        tok = self.peek()
        if tok[0] != "eof":
            self.fail(f"unexpected {_describe(tok)} after a complete expression")
        return node

    def expression(self, rbp: int = 0) -> N.Node:
        self.depth += 1
        if self.depth > MAX_NESTING:
            self.fail(f"expression nested deeper than {MAX_NESTING} levels")
        toks = self.toks
        tok = toks[self.pos]
        if tok[0] == "op" and tok[1] in PREFIX:
            left = self.unary()
        else:
            left = self.postfix(True)
        while True:
            tok = toks[self.pos]
            if tok[0] != "op":
                break
            op = tok[1]
            if op == "?":
                if rbp >= 1:
                    break
                self.pos += 1
                then = self.expression(0)
                self.expect_op(":")
                other = self.expression(0)
                left = N.Cond(left, then, other)
                continue
            bp = BINARY_BP.get(op)
            if bp is None or bp <= rbp:
                break
            self.pos += 1
            right = self.expression(bp)
            left = N.Binary(op, left, right)
        self.depth -= 1
        return left

    def unary(self) -> N.Node:
        tok = self.toks[self.pos]
        if tok[0] == "op" and tok[1] in PREFIX:
            self.pos += 1
            self.enter()
            operand = self.unary()
            self.depth -= 1
            return N.Unary(tok[1], operand)
        return self.postfix(True)

    def postfix(self, elvis: bool) -> N.Node:
        toks = self.toks
        pos = self.pos
        tok = toks[pos]
        kind = tok[0]
        if kind == "name":              # the common operands, without primary()
            nxt = toks[pos + 1]
            if nxt[1] != "(" or nxt[0] != "op":
                node = N.Attr(tok[1])
                self.pos = pos + 1
            else:
                node = self.primary()
        elif kind == "int" or kind == "str":
            node = N.Literal(tok[1])
            self.pos = pos + 1
        else:
            node = self.primary()
        while True:
            tok = toks[self.pos]
            if tok[0] != "op":
                return node
            op = tok[1]
            if op == ".":
                self.pos += 1
                name = toks[self.pos]
                if name[0] != "name":
                    self.fail(f"expected an attribute name after '.', found {_describe(name)}")
                self.pos += 1
                node = N.Select(node, name[1])
            elif op == "[":
                self.pos += 1
                index = self.expression(0)
                self.expect_op("]")
                node = N.Subscript(node, index)
            elif op == "?:" and elvis:
                self.pos += 1
                self.enter()
                right = self.postfix(False)
                self.depth -= 1
                node = N.Elvis(node, right)
            else:
                return node

    def primary(self) -> N.Node:
        tok = self.toks[self.pos]
        kind = tok[0]
        self.pos += 1
        if kind == "int" or kind == "real" or kind == "str":
            return N.Literal(tok[1])
        if kind == "kw":
            return N.Literal(_KW_VALUES[tok[1]])
        if kind == "name":
            nxt = self.toks[self.pos]
            if nxt[0] == "op" and nxt[1] == "(":
                return self.call(tok)
            return N.Attr(tok[1])
        if kind == "op":
            op = tok[1]
            if op == "(":
                inner = self.expression(0)
                self.expect_op(")")
                return N.Paren(inner)
            if op == "{":
                return self.list_literal()
            if op == "[":
                return self.ad_literal()
            if op == ".":
                name = self.toks[self.pos]
                if name[0] != "name":
                    self.fail(f"expected an attribute name after '.', found {_describe(name)}")
                self.pos += 1
                return N.AbsAttr(name[1])
        self.pos -= 1
        self.fail(f"expected an expression, found {_describe(tok)}")

    def call(self, name_tok) -> N.Node:
        self.pos += 1                  # '('
        self.enter()
        args = []
        if not self._at_op(")"):
            while True:
                args.append(self.expression(0))
                if self._at_op(",") or self._at_op(";"):
                    self.pos += 1
                    continue
                break
        self.expect_op(")")
        self.depth -= 1
        return fold_call(name_tok[1], tuple(args), self, name_tok)

    def list_literal(self) -> N.Node:
        self.enter()
        items = []
        if not self._at_op("}"):
            while True:
                items.append(self.expression(0))
                if self._at_op(","):
                    self.pos += 1
                    continue
                break
        self.expect_op("}")
        self.depth -= 1
        return N.ListExpr(tuple(items))

    def ad_literal(self) -> N.Node:
        """After '[': ``{';'} [Attr {';' {';'} Attr} {';'}] ']'``."""
        self.enter()
        attrs: dict[str, list] = {}
        toks = self.toks
        last = len(toks) - 4
        SEMI, CLOSE = ("op", ";"), ("op", "]")
        while True:
            pos = self.pos
            while toks[pos][:2] == SEMI:
                pos += 1
            if toks[pos][:2] == CLOSE:
                self.pos = pos
                break
            self.pos = pos
            value = None
            if pos <= last:
                # fast path: ``name = literal`` followed by ';' or ']'
                t0, t1, t2, t3 = toks[pos], toks[pos + 1], toks[pos + 2], toks[pos + 3]
                if (t0[0] == "name" and t1[1] == "=" and t1[0] == "op" and t3[0] == "op"
                        and (t3[1] == ";" or t3[1] == "]") and t2[0] in _LITERAL_KINDS):
                    name = t0[1]
                    value = N.Literal(t2[1] if t2[0] != "kw" else _KW_VALUES[t2[1]])
                    self.pos = pos + 3
            if value is None:
                name, value = self.attribute()
            low = name.lower() if name.isascii() else ascii_lower(name)
            entry = attrs.get(low)
            if entry is None:
                attrs[low] = [name, value]
            else:
                entry[1] = value
            nxt = toks[self.pos][:2]
            if nxt == SEMI:
                continue
            if nxt != CLOSE:
                self.fail(f"expected ';' or ']' in an ad, found {_describe(self.peek())}")
        self.pos += 1
        self.depth -= 1
        return N.AdExpr(tuple((n, v) for n, v in attrs.values()))

    def attribute(self):
        tok = self.toks[self.pos]
        if tok[0] != "name":
            self.fail(f"expected an attribute name, found {_describe(tok)}")
        self.pos += 1
        self.expect_op("=")
        return tok[1], self.expression(0)

    def _at_op(self, op: str) -> bool:
        tok = self.toks[self.pos]
        return tok[0] == "op" and tok[1] == op


def fold_call(name: str, args: tuple, parser: Parser | None = None, tok=None) -> N.Node:
    """``absTime("lit")`` / ``relTime("lit")`` become time literals at parse time."""
    low = name.lower()
    if (low == "abstime" or low == "reltime") and len(args) == 1 \
            and type(args[0]) is N.Literal and type(args[0].value) is str:
        from .timeutil import parse_abstime_literal, parse_reltime_literal
        text = args[0].value
        if low == "abstime":
            value = parse_abstime_literal(text)
            if value is None:
                _bad_time(parser, tok, f"invalid absolute time {text!r}")
            return N.Literal(value)
        secs = parse_reltime_literal(text)
        if secs is None:
            _bad_time(parser, tok, f"invalid relative time {text!r}")
        return N.RelTimeLit(secs)
    return N.Call(name, args)


def _bad_time(parser, tok, message):
    if parser is not None:
        parser.fail(message, tok)
    raise ClassAdParseError(message, "", 0)


def _describe(tok) -> str:
    if tok[0] == "eof":
        return "end of text"
    if tok[0] == "op":
        return repr(tok[1])
    if tok[0] == "name":
        return f"name {tok[1]!r}"
    return f"{tok[0]} literal {tok[1]!r}"


def parse_expr(text: str) -> N.Node:
    """Parse ``text`` as one complete expression (raises ClassAdParseError)."""
    try:
        return Parser(text).parse_complete()
    except RecursionError:
        raise ClassAdParseError("expression nested too deeply", text, 0) from None
    except UnicodeError:
        raise ClassAdParseError("text holds characters that are not UTF-8", text, 0) from None
