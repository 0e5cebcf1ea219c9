import sys

from jobledger.aliases.paths import main

sys.exit(main())
