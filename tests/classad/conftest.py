"""ClassAd tests evaluate with the real clock and a seeded generator (as jobledger.classad does)."""

import random
import time

from jobledger.eventcore.classad import configure

configure(clock=time.time, rng=random.Random(20240611))
