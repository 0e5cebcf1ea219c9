"""Keep a long-running daemon's resident memory close to what it really holds.

CPython hands allocations over 512 bytes (ads, payload texts, rows) to the C
library's malloc.  glibc gives each thread that allocates an arena of its
own, up to 8 per core, and keeps freed pages inside each; a daemon that
answers every request on a fresh thread then shows a resident size that
climbs with the work it has done, not with what it holds.  ``limit_arenas``
caps the arenas (call it before the threads start); ``trim`` gives the free
pages of every arena back to the system (a few ms; call it now and then).
Both do nothing where the C library is not glibc.
"""

from __future__ import annotations

from jobledger.daemons.libc import LIBC

__all__ = ["limit_arenas", "trim"]

_M_ARENA_MAX = -8    # mallopt's parameter number in glibc's malloc.h


_LIBC = LIBC if hasattr(LIBC, "malloc_trim") and hasattr(LIBC, "mallopt") else None   # glibc


def limit_arenas(count: int = 2) -> bool:
    """At most ``count`` malloc arenas from now on; False if this libc cannot."""
    return bool(_LIBC is not None and _LIBC.mallopt(_M_ARENA_MAX, int(count)))


def trim() -> bool:
    """Give free malloc pages back to the system; True if any were."""
    return bool(_LIBC is not None and _LIBC.malloc_trim(0))
