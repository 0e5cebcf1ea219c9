"""The cyclic garbage collector paused while a DAG's objects are made.

Parsing a DAG of 10^5 nodes, or starting its run, makes several objects per
node and keeps them all: each of the collector's passes would walk a heap
that only grows (a third of the time at 10^5 nodes) and find nothing, since
neither makes cycles to collect.  A process that keeps the DAG for its whole
life (DAGMan) then moves it out of the collector's way with ``gc.freeze()``.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def no_cyclic_gc() -> Iterator[None]:
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
