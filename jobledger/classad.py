"""``import jobledger.classad as classad`` stands in for ``import classad2 as classad``.

Re-exports only.  Importing this module configures the ClassAd evaluation
environment with the real clock and a random generator (eventcore itself
never reads either), so ``time()``, ``CurrentTime`` and ``random()`` work as
in classad2.
"""

from jobledger.eventcore.classad import (ClassAd, ClassAdException, ExprTree, Parser, ParserType, Value,
                               lastError, parseAds, parseNext, parseOne, quote, unquote, version)
from jobledger.daemons.storage.adtext import real_environment as _configure

_configure()

__all__ = [
    "ClassAd", "ClassAdException", "ExprTree", "Parser", "ParserType", "Value", "lastError", "parseAds",
    "parseNext", "parseOne", "quote", "unquote", "version",
]
