"""``python -m jobledger.daemons.dagman -Dag x.dag ...``: condor_dagman."""

from __future__ import annotations

import sys

from jobledger.daemons.dagman.options import parse_options
from jobledger.daemons.dagman.process import Dagman


def main(argv: list[str]) -> int:
    try:
        options = parse_options(argv)
    except ValueError as exc:
        print(f"condor_dagman: {exc}", file=sys.stderr)
        return 1
    return Dagman(options).run()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
