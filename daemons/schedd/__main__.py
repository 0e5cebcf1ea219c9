"""``python -m jobledger.daemons.schedd``: the schedd daemon (the master starts it so)."""

from jobledger.daemons.daemon import main_for
from jobledger.daemons.schedd.daemon import Schedd

main_for(Schedd)
