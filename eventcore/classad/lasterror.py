"""The message ``classad.lastError()`` returns: HTCondor's ``CondorErrMsg``.

Set by a failed parse (``ClassAd(text)``, ``ExprTree(text)``) and, as in HTCondor's
``Operation::doComparison``, by a comparison of a string with a non-string value.
"""

LAST_ERROR = [""]

STRING_COMPARISON = "strings can only be compared to strings"
