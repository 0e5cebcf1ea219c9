"""classad_eval: evaluate ClassAd expressions from the command line.

Each argument is an ad (``[ x = 1 ]``), assignments (``x = 1``, ``x = 1; y = 2``)
merged into the context ad, or an expression: the context ad is printed on one
line (``[ x = 1 ]``) when it changed since the last expression, unless ``-quiet``
came before, and the expression's value simplified against the context (MY) and
the ``-target-file`` ad (TARGET) is printed.  ``-file``/``-my-file`` read the
initial context ad from a file (``condor_q -long:new`` output too).
"""

from __future__ import annotations

from jobledger.eventcore.classad import ClassAd, ExprTree
from jobledger.eventcore.errors import ClassAdError, SubmitError

from jobledger.condor_cli.args import Args, Failed, Help, entry

USAGE = """\
Usage: classad_eval [options] <expr|assignment>[ <expr|assignment>]*

Evaluate ClassAd expressions.
Assignments modify the ClassAd context.

Where [options] is one of
\t-[my-]file   <file>\tA file containing the initial ClassAd context
\t-target-file <file>\tA file containing the target ClassAd
\t-debug             \tEnable debug mode
\t-help              \tPrint this screen and exit

Flags may replace expressions or assignments:
\t-quiet             \tDon't print the ClassAd context after this flag
"""


def as_ad(text: str, from_file: bool = False) -> ClassAd:
    """An ad literal, or assignments read as the ad holding them."""
    if from_file and text.startswith("{\n") and text.endswith("\n}\n"):
        text = text[2:]       # condor_q -long:new wraps its ads in { }
    try:
        return ClassAd(text)
    except ClassAdError:
        return ClassAd("[" + text + "]")


def _file_ad(path: str) -> ClassAd:
    from jobledger.daemons.input_files import read_text
    try:
        text = read_text(path)
    except (OSError, SubmitError) as exc:
        raise Failed(f"classad_eval: cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        return as_ad(text, from_file=True)
    except ClassAdError:
        raise Failed(f"Unable to turn file '{path}' into a ClassAd.") from None


def run(argv: list[str]) -> int:
    args = Args(argv, "classad_eval")
    my, target = ClassAd(), None
    quiet, changed = False, True
    for arg in args:
        if arg == "-quiet":
            quiet = True
        elif arg in ("-file", "-my-file"):
            my = _file_ad(args.value("a file name"))
        elif arg == "-target-file":
            target = _file_ad(args.value("a file name"))
        elif arg == "-debug":
            pass                       # no debug output to enable: evaluation logs nothing
        elif arg == "-help":
            raise Help()
        else:
            try:
                my.update(as_ad(arg))
                changed = True
                continue
            except ClassAdError:
                pass
            if changed and not quiet:
                print(repr(my))
            changed = False
            try:
                expr = ExprTree(arg)
            except ClassAdError:
                raise Failed(f"Unable to turn '{arg}' into a ClassAd or an expression.") from None
            print(repr(expr.simplify(my, target)))
    return 0


main = entry("classad_eval", run, USAGE, help_to="stdout", help_status=255)  # HTCondor's exits -1

__all__ = ["main", "run", "as_ad"]
