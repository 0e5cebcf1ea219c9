"""classad2's module-level functions: parseAds/parseNext/parseOne, quote,
unquote, lastError, version, and the ParserType enum."""

from __future__ import annotations

import enum

from jobledger.eventcore.errors import ClassAdValueError, ClassAdParseError

from .ad import ClassAd, parse_new_ad
from .lasterror import LAST_ERROR
from .formats import parse_json_ads, parse_new_ads, parse_old_ads
from .lexer import tokenize
from .unparse import quote_string

VERSION = "25.14.1"


class ParserType(enum.IntEnum):
    """Serialisation formats (classad2.ParserType)."""

    Auto = -1
    Old = 0
    XML = 1
    JSON = 2
    New = 3
    FileAuto = 4


Parser = ParserType


def _text_of(input) -> str:
    if isinstance(input, str):
        return input
    if hasattr(input, "read"):
        return input.read()
    return "".join(input)


def _start_of(input):
    """Where a seekable file input starts (classad2 advances such files past
    each ad it returns), else None."""
    if isinstance(input, str) or not hasattr(input, "seek"):
        return None
    try:
        return input.tell()
    except (OSError, ValueError):
        return None


def _detect(text: str, parser) -> ParserType:
    parser = ParserType(int(parser))
    if parser in (ParserType.Auto, ParserType.FileAuto):
        stripped = text.lstrip()
        if stripped.startswith(("[", "/")):
            return ParserType.New
        if stripped.startswith("{"):
            return ParserType.JSON
        return ParserType.Old
    if parser is ParserType.XML:
        raise ClassAdParseError("the XML ClassAd format is not supported", text, 0)
    return parser


def _iter_ads(text: str, parser):
    kind = _detect(text, parser)
    if kind is ParserType.Old:
        return parse_old_ads(text)
    if kind is ParserType.JSON:
        return parse_json_ads(text)
    return parse_new_ads(text)


def parseAds(input, parser=ParserType.Auto):
    """Iterator over the ads in ``input`` (a string, a file or an iterable of
    lines); a seekable file is left just after the last ad returned."""
    start = _start_of(input)
    text = _text_of(input)
    for ad, end in _iter_ads(text, parser):
        if start is not None:
            input.seek(start + end)
        yield ad


def parseNext(input, parser=ParserType.Auto):
    """The first ad of ``input`` (None when there is none); a seekable file
    is left just after it."""
    return next(parseAds(input, parser), None)


def parseOne(input, parser=ParserType.Auto) -> ClassAd:
    """All ads of ``input`` merged into one (later attributes win)."""
    text = _text_of(input)
    out = None
    for ad, _ in _iter_ads(text, parser):
        if out is None:
            out = ad                   # the first ad is taken as it is
            continue
        for ln, e in ad._exprs.items():
            if ln not in out._names:
                out._names[ln] = ad._names[ln]
            out._exprs[ln] = e
    return out if out is not None else ClassAd()


def parse_ad(text: str) -> ClassAd:
    """One new-syntax ad ``[ ... ]`` (text after its closing ``]`` is ignored)."""
    ad = ClassAd()
    for name, value in parse_new_ad(text).attrs:
        ad._set_node(name, value)
    return ad


def quote(input: str) -> str:
    """``input`` as a ClassAd string literal."""
    return quote_string(input)


def unquote(input: str) -> str:
    """The value of the ClassAd string literal ``input``."""
    try:
        toks = tokenize(input)
    except ClassAdParseError as exc:
        raise ClassAdValueError(exc.message, input, exc.offset) from None
    if len(toks) != 2 or toks[0][0] != "str":
        raise ClassAdValueError("not a single string literal", input, 0)
    return toks[0][1]


def lastError() -> str:
    """The last error message: of a failed parse (ClassAd(text)/ExprTree(text)), or of a
    string compared with a non-string value (HTCondor's CondorErrMsg)."""
    return LAST_ERROR[0]


def version() -> str:
    return VERSION
