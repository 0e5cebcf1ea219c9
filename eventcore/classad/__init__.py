"""The ClassAd language (HTCondor mode), pure Python, classad2-compatible.

Stable API for the rest of jobledger (submit, queue projection, schedd,
negotiator, trackers):

Objects
    ``ClassAd(text_or_dict)``  a MutableMapping; ``ad[k] = value`` takes Python
        values (None, bool, int, float, str, list, dict, datetime) or an
        ``ExprTree``; ``ad[k]`` gives literals back as Python values and other
        expressions as ``ExprTree``; ``ad.eval(k)``, ``ad.lookup(k)``,
        ``repr(ad)`` (one-line new syntax), ``str(ad)`` (pretty),
        ``ad.printOld()`` (``condor_q -long`` lines), ``ad.printJson()``,
        ``ad.matches(other)``, ``ad.symmetricMatch(other)``, pickling.
    ``ExprTree(text)``  parsed once, compiled into closures on first use;
        ``expr.eval(scope=None, target=None)``.
    ``Value.Undefined`` / ``Value.Error``  (IntEnum, == 2 / == 1).

Parsing
    ``parse_ad(text)``        one new-syntax ad ``[ ... ]``
    ``parse_old_ad(text)``    old format, all ads merged (classad2 parseOne)
    ``parse_old_ads(text)`` / ``parse_new_ads(text)`` / ``parse_json_ads(text)``
        iterators of ``(ClassAd, end_offset)``; as in classad2 an unreadable
        ad ends the stream (quietly at the end of the text, else
        ``ClassAdValueError``, a ValueError)
    ``parse_expr(text)``      a syntax tree (nodes.py); raises
        ``ClassAdParseError`` (offset/line/column, caret) on bad text.
    classad2's ``parseAds``/``parseNext``/``parseOne``/``quote``/``unquote`` too.

Sharing expressions
    An ``ExprTree`` compiles itself once; putting the same ExprTree into many
    ads (``ad[k] = tree``) shares its tree and compiled closure, so callers
    that rebuild ads from stored expression text should keep one ExprTree per
    distinct text.  Each ad still gets its own ExprTree object (the circular
    reference guard tells expressions apart by identity).

Fast helpers
    ``compile_constraint(text) -> callable(ad) -> bool``  condor_q rules: True
        only when the value is true or a non-zero number.
    ``references(expr) -> set[str]``  lower-case attribute names read
        (``MY.``/``TARGET.`` stripped).
    ``calls(expr) -> set[str]``  lower-case names of the functions called.
    ``equality_conjuncts(expr) -> dict | None``  ``{Name: literal}`` when the
        expression is ``Name == literal && ...`` (int/str/bool literals; string
        equality is case-insensitive in ClassAds).
    ``match_many(job, machines) -> [(index, job_rank, machine_rank)]``  every
        machine whose Requirements and the job's Requirements accept each
        other (spec section 11 match context), with the negotiator's float
        ranks; ``requirements_ok(owner, other)``, ``symmetric_match(a, b)``,
        ``rank(ad, other)``.

Clock and randomness
    eventcore never reads the clock or draws random numbers by itself:
    ``configure(clock=time.time, rng=random.Random())`` sets the process-wide
    environment (``env.ENV``).  ``jobledger.classad`` does this on import;
    daemons must do it at start-up.  Without it ``time()``/``CurrentTime``/
    ``random()`` make the evaluation fail with ``ClassAdEvalError``.

Errors: ``ClassAdError`` (= ``classad2.ClassAdException``),
``ClassAdParseError``, ``ClassAdValueError`` (also a ValueError, from
``unquote``), ``ClassAdEvalError`` from ``eventcore.errors``.

Limits: ``parser.MAX_NESTING`` (165 nested constructs) and
``evaluate.MAX_EVAL_DEPTH`` (400 nested evaluation levels).

Where we differ from classad2 on purpose: ``ExprTree(text)`` parses one
stand-alone expression (classad2 parses ``[expression = text]``, so it takes
``1; b = 2`` and refuses ``1 // comment``; the corpus follows the stand-alone
rule); ExprTrees can be pickled; ``ClassAd.copy()`` and ``ClassAd(other_ad)``
exist; the reference's crashes (e.g. ``ad["l"][0]`` when the element is a list
or an ad) give the sensible value instead; times the platform cannot
represent give ``error`` (the reference prints garbage); regular expressions
run on Python's ``re`` after translating PCRE spellings (patterns are matched
on text, not bytes, so ``.`` matches one non-ASCII character, not one byte).

Modules: lexer, parser, nodes (syntax), evaluate + ops (compiler, scoping,
operators), functions + convert, strfuncs, regexfuncs, stringlists, timefuncs,
jobfuncs (builtins), unparse, formats (old/new/JSON), ad (ClassAd, ExprTree),
pyvalue (Python values), matching, refs, api (classad2's module functions),
env (clock and randomness), timeutil, values.
"""

from __future__ import annotations

from jobledger.eventcore.errors import ClassAdError, ClassAdEvalError, ClassAdParseError

from .classad2 import ClassAd, ExprTree
from .api import (Parser, ParserType, lastError, parse_ad, parseAds, parseNext, parseOne, quote,
                  unquote, version)
from .env import ENV, configure
from .formats import parse_json_ads, parse_new_ads, parse_old_ad, parse_old_ads
from .matching import (calls, compile_constraint, equality_conjuncts, match_many, rank,
                       references, requirements_ok, symmetric_match)
from .parser import parse_expr
from .pyvalue import Value

ClassAdException = ClassAdError

__all__ = [
    "ClassAd", "ExprTree", "Value", "ClassAdException", "ClassAdError", "ClassAdParseError",
    "ClassAdEvalError", "Parser", "ParserType", "parseAds", "parseNext", "parseOne", "quote", "unquote",
    "lastError", "version", "parse_ad", "parse_old_ad", "parse_old_ads", "parse_new_ads", "parse_json_ads",
    "parse_expr", "compile_constraint", "references", "calls", "equality_conjuncts", "match_many", "rank",
    "requirements_ok", "symmetric_match", "configure", "ENV",
]
