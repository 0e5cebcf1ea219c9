"""The global event log's header event (``EVENT_LOG``), made and read.

A new event-log file starts with a 008 Generic event, ids ``-1.-1.-1``,
whose text is ``Global JobLog: ctime=<epoch> id=<id> sequence=<n> size=<bytes>
events=<n> offset=<bytes> event_off=<n> max_rotation=<n> creator_name=<NAME>``
padded with blanks to 256 characters (so it can be rewritten in place).
``header_event(...)`` builds it; ``parse_header_info(text)`` reads its fields
back (``None`` for any other text).
"""

from __future__ import annotations

from jobledger.eventcore.events import GenericEvent

__all__ = ["header_event", "parse_header_info", "HEADER_PREFIX", "HEADER_WIDTH"]

HEADER_PREFIX = "Global JobLog:"
HEADER_WIDTH = 256
_INT_FIELDS = ("ctime", "sequence", "size", "events", "offset", "event_off", "max_rotation")


def header_event(*, timestamp, ctime: int, log_id: str, sequence: int, size: int = 0,
                 events: int = 0, offset: int = 0, event_off: int = 0,
                 max_rotation: int = 1, creator_name: str = "<SCHEDD>") -> GenericEvent:
    """The header event that opens an event-log file (see the module docstring)."""
    info = (f"{HEADER_PREFIX} ctime={ctime} id={log_id} sequence={sequence} size={size} "
            f"events={events} offset={offset} event_off={event_off} "
            f"max_rotation={max_rotation} creator_name={creator_name}")
    return GenericEvent(cluster=-1, proc=-1, subproc=-1, timestamp=timestamp,
                        info=info.ljust(HEADER_WIDTH))


def parse_header_info(text: str | None):
    """The header's fields as a dict (ints where numeric), or ``None``."""
    if not text or not text.startswith(HEADER_PREFIX):
        return None
    fields = {}
    for word in text[len(HEADER_PREFIX):].split():
        key, sep, value = word.partition("=")
        if not sep:
            continue
        fields[key] = int(value) if key in _INT_FIELDS and value.lstrip("-").isdigit() else value
    return fields
