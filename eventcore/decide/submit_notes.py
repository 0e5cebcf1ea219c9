"""What a SUBMIT event says besides the host: the notes HTCondor's schedd takes from the job ad.

- ``LogNotes`` is the job's ``SubmitEventNotes`` (``submit_event_notes``;
  DAGMan sets ``DAG Node: <name>`` there), ``UserNotes`` its
  ``SubmitEventUserNotes`` (``submit_event_user_notes``);
- ``StructuredNotes`` is an ad of the attributes named by
  ``SubmitEventNotesAttrs`` (``submit_event_notes_attrs``, a comma or space
  separated list) followed by ``DAGNodeName`` and ``JobBatchName``, each
  evaluated in the job ad; undefined and error values are left out, and an
  empty ad is no ad.  (HTCondor 25's schedd; the text writer prints the
  structured ad in place of the plain notes when there is one.)
"""

from __future__ import annotations

import re
from typing import Any

from jobledger.eventcore import adwire

ALWAYS_STRUCTURED = ("DAGNodeName", "JobBatchName")
# Job attributes that can change a SUBMIT event's notes.
NOTE_SOURCES = frozenset(name.lower() for name in (
    "SubmitEventNotes", "SubmitEventUserNotes", "SubmitEventNotesAttrs") + ALWAYS_STRUCTURED)


def has_notes(ad: dict) -> bool:
    """Does the ad (expression text) name anything a SUBMIT event's notes come from?"""
    return any(name.lower() in NOTE_SOURCES for name in ad)


def submit_notes(ad: dict) -> dict:
    """The SUBMIT event attributes (LogNotes, UserNotes, StructuredNotes) of a job ad."""
    out: dict[str, Any] = {}
    for attr, key in (("SubmitEventNotes", "LogNotes"), ("SubmitEventUserNotes", "UserNotes")):
        value = adwire.evaluate(ad, attr)
        if isinstance(value, str) and value:
            out[key] = value
    listed = adwire.evaluate(ad, "SubmitEventNotesAttrs")
    names = [n for n in re.split(r"[,\s]+", listed) if n] if isinstance(listed, str) else []
    structured: dict[str, Any] = {}
    for name in names + list(ALWAYS_STRUCTURED):
        value = adwire.evaluate(ad, name)
        if value is not None and not any(k.lower() == name.lower() for k in structured):
            structured[name] = value
    if structured:
        out["StructuredNotes"] = structured
    return out
