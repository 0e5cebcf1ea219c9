"""htcondor2 25.x's ``Schedd`` methods on owner claimed units (OCUs): ``create_ocu``,
``query_ocu``, ``remove_ocu``, as HTCondor's bindings shape them.

- ``create_ocu(request)``: a ClassAd with ``Owner`` and the resources (``RequestCpus``,
  ``RequestMemory``, ``RequestDisk``, maybe ``OCUName`` and a ``Requirements``); the
  schedd's result ad (``Result`` 0, ``OCUId``, ``OCUName``; or ``Result`` -1 and
  ``ErrorString``: not an OCU super user, no Owner, an owner the schedd does not know).
- ``query_ocu(request)``: a list of every OCU's ad with its ``OCUState`` (U, I or R).
- ``remove_ocu(ocu_id)``: HTCondor's binding sends an integer id (its C++ side parses
  the argument as a long, whatever the annotation says); a ClassAd naming ``OCUId`` is
  taken too.  The result ad: ``Result`` 0 (also for an id that names no OCU, as HTCondor's
  schedd answers), with ``OCUId`` when one was removed.

The commands are ``daemons.schedd.ocus``'s.
"""

from __future__ import annotations

from jobledger.daemons import ipc
from jobledger.eventcore import adwire
from jobledger.eventcore.classad import ClassAd
from jobledger.eventcore.errors import HTCondorException

__all__ = ["OcuMethods"]


class OcuMethods:
    """Mixed into ``daemons.client.api.Schedd`` (``self._address``)."""

    _address: str

    def create_ocu(self, request: ClassAd) -> ClassAd:
        """Send a ClassAd representing an OCU claim request to the schedd: it must hold
        Owner and the requests (RequestCpus, RequestMemory, maybe RequestDisk)."""
        return adwire.to_classad(self._ocu_call("create_ocu", "creation", request=_exprs(request)))

    def remove_ocu(self, request) -> ClassAd:
        """Remove the OCU ``request`` names (its id, an integer; or a ClassAd with OCUId)."""
        if isinstance(request, ClassAd):
            ocu_id = request.get("OCUId")
        else:
            ocu_id = request
        if isinstance(ocu_id, bool) or not isinstance(ocu_id, int):
            raise TypeError("remove_ocu needs an OCU id (an integer)")
        return adwire.to_classad(self._ocu_call("remove_ocu", "removal", ocu_id=int(ocu_id)))

    def query_ocu(self, request: ClassAd) -> list:
        """Every OCU of the schedd as a ClassAd (its request, OCUId, OCUName, OCUState...)."""
        return [adwire.to_classad(item) for item in self._ocu_call("query_ocu", "query", request=_exprs(request))]

    def _ocu_call(self, command: str, what: str, **arguments):
        try:
            return ipc.call(self._address, command, timeout=20, **arguments)
        except (HTCondorException, OSError) as exc:
            raise HTCondorException(f"Cannot send OCU {what} request to schedd") from exc


def _exprs(request) -> dict:
    if not isinstance(request, ClassAd):
        raise TypeError("request must be a ClassAd")
    return adwire.classad_exprs(request)
