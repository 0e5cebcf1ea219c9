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

from eventcore.errors import ClassAdParseError

from . import nodes as N
from .lexer import Token, tokenize
from .values import ERROR, UNDEF

MAX_NESTING = 150

BINARY_BP = {
    "||": 2, "&&": 3, "|": 4, "^": 5, "&": 6,
    "==": 7, "!=": 7, "=?=": 7, "=!=": 7,
    "<": 8, "<=": 8, ">": 8, ">=": 8,
    "<<": 9, ">>": 9, ">>>": 9,
    "+": 10, "-": 10,
    "*": 11, "/": 11, "%": 11,
}
PREFIX = frozenset(("-", "+", "!", "~"))
_KW_VALUES = {"true": True, "false": False, "undefined": UNDEF, "error": ERROR}


class Parser:
    """Parses tokens of ``text``; ``pos`` indexes the token list."""

    def __init__(self, text: str, tokens: list[Token] | None = None):
        self.text = text
        self.toks = tokens if tokens is not None else tokenize(text)
        self.pos = 0
        self.depth = 0

    # -- helpers ---------------------------------------------------------
    def fail(self, message: str, tok: Token | None = None):
        tok = tok or self.toks[self.pos]
        raise ClassAdParseError(message, self.text, tok.offset)

    def peek(self) -> Token:
        return self.toks[self.pos]

    def expect_op(self, op: str) -> Token:
        tok = self.toks[self.pos]
        if tok.kind != "op" or tok.value != op:
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
        if tok.kind != "eof":
            self.fail(f"unexpected {_describe(tok)} after a complete expression")
        return node

    def expression(self, rbp: int = 0) -> N.Node:
        self.enter()
        left = self.unary()
        toks = self.toks
        while True:
            tok = toks[self.pos]
            if tok.kind != "op":
                break
            op = tok.value
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
        if tok.kind == "op" and tok.value in PREFIX:
            self.pos += 1
            self.enter()
            operand = self.unary()
            self.depth -= 1
            return N.Unary(tok.value, operand)
        return self.postfix(True)

    def postfix(self, elvis: bool) -> N.Node:
        node = self.primary()
        toks = self.toks
        while True:
            tok = toks[self.pos]
            if tok.kind != "op":
                return node
            op = tok.value
            if op == ".":
                self.pos += 1
                name = toks[self.pos]
                if name.kind != "name":
                    self.fail(f"expected an attribute name after '.', found {_describe(name)}")
                self.pos += 1
                node = N.Select(node, name.value)
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
        kind = tok.kind
        self.pos += 1
        if kind == "int" or kind == "real" or kind == "str":
            return N.Literal(tok.value)
        if kind == "kw":
            return N.Literal(_KW_VALUES[tok.value])
        if kind == "name":
            nxt = self.toks[self.pos]
            if nxt.kind == "op" and nxt.value == "(":
                return self.call(tok)
            return N.Attr(tok.value)
        if kind == "op":
            op = tok.value
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
                if name.kind != "name":
                    self.fail(f"expected an attribute name after '.', found {_describe(name)}")
                self.pos += 1
                return N.AbsAttr(name.value)
        self.pos -= 1
        self.fail(f"expected an expression, found {_describe(tok)}")

    def call(self, name_tok: Token) -> N.Node:
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
        return fold_call(name_tok.value, tuple(args), self, name_tok)

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
        while True:
            while self._at_op(";"):
                self.pos += 1
            if self._at_op("]"):
                break
            name, value = self.attribute()
            low = name.lower()
            if low in attrs:
                attrs[low][1] = value
            else:
                attrs[low] = [name, value]
            if self._at_op(";"):
                continue
            if not self._at_op("]"):
                self.fail(f"expected ';' or ']' in an ad, found {_describe(self.peek())}")
        self.pos += 1
        self.depth -= 1
        return N.AdExpr(tuple((n, v) for n, v in attrs.values()))

    def attribute(self):
        tok = self.toks[self.pos]
        if tok.kind != "name":
            self.fail(f"expected an attribute name, found {_describe(tok)}")
        self.pos += 1
        self.expect_op("=")
        return tok.value, self.expression(0)

    def _at_op(self, op: str) -> bool:
        tok = self.toks[self.pos]
        return tok.kind == "op" and tok.value == op


def fold_call(name: str, args: tuple, parser: Parser | None = None, tok: Token | None = None) -> N.Node:
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


def _describe(tok: Token) -> str:
    if tok.kind == "eof":
        return "end of text"
    if tok.kind == "op":
        return repr(tok.value)
    if tok.kind == "name":
        return f"name {tok.value!r}"
    return f"{tok.kind} literal {tok.value!r}"


def parse_expr(text: str) -> N.Node:
    """Parse ``text`` as one complete expression (raises ClassAdParseError)."""
    try:
        return Parser(text).parse_complete()
    except RecursionError:
        raise ClassAdParseError("expression nested too deeply", text, 0) from None
