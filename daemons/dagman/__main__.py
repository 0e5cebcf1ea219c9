"""``condor_dagman -Dag x.dag ...`` (or ``python -m jobledger.daemons.dagman ...``).

The DAGMan job runs the ``condor_dagman`` command, so its ``Cmd`` ends in
"dagman" as HTCondor's does: tools find DAGMan jobs by it (LSST BPS's report
asks the schedd for ``regexp("dagman$", Cmd)``)."""

from __future__ import annotations

import sys

from jobledger.daemons.dagman.options import FLAGS, parse_options
from jobledger.daemons.dagman.process import Dagman


def main(argv: list[str]) -> int:
    try:
        options = parse_options(argv)
    except ValueError as exc:
        print(f"condor_dagman: {exc}", file=sys.stderr)
        return 1
    return Dagman(options).run()


def usage() -> str:
    """What HTCondor's condor_dagman prints for -help (on stdout, exit status 1)."""
    flags = "".join(f"\t[{flag.capitalize()}{' <value>' if takes else ''}]\n" for flag, (_, takes) in FLAGS.items())
    return ("Usage: condor_dagman -p 0 -f -l .\n\t[-Help]\n\t[-Version]\n\t[-WaitForDebug]\n" + flags
            + "Where NAME is the name of your DAG file.\n")


def console(argv: list[str] | None = None) -> None:
    """The ``condor_dagman`` console script: any -h... argument prints the usage, as HTCondor's."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if any(arg.startswith("-") and "-h" in arg.lower() for arg in argv):
        sys.stdout.write(usage())
        sys.exit(1)
    sys.exit(main(argv))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
