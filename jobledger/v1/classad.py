"""``import jobledger.v1.classad as classad`` stands in for the v1 bindings' ``import classad``.

The ClassAd engine is the one of ``jobledger.classad`` (which sets the clock and the
random generator), re-exported under v1's module name.
"""

from jobledger.classad import (ClassAd, ClassAdException, ExprTree, Parser, ParserType, Value, lastError,
                               parseAds, parseNext, parseOne, quote, unquote, version)

__all__ = [
    "ClassAd", "ClassAdException", "ExprTree", "Parser", "ParserType", "Value", "lastError", "parseAds",
    "parseNext", "parseOne", "quote", "unquote", "version",
]
