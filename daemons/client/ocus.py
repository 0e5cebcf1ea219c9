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
        if not isinstance(request, ClassAd):
            raise TypeError("request must be a ClassAd")
        try:
            answer = ipc.call(self._address, "create_ocu", timeout=20, request=adwire.classad_exprs(request))
        except (HTCondorException, OSError) as exc:
            raise HTCondorException("Cannot send OCU creation request to schedd") from exc
        return adwire.to_classad(answer)

    def remove_ocu(self, request) -> ClassAd:
        """Remove the OCU ``request`` names (its id, an integer; or a ClassAd with OCUId)."""
        if isinstance(request, ClassAd):
            ocu_id = request.get("OCUId")
        else:
            ocu_id = request
        if isinstance(ocu_id, bool) or not isinstance(ocu_id, int):
            raise TypeError("remove_ocu needs an OCU id (an integer)")
        try:
            answer = ipc.call(self._address, "remove_ocu", timeout=20, ocu_id=int(ocu_id))
        except (HTCondorException, OSError) as exc:
            raise HTCondorException("Cannot send OCU removal request to schedd") from exc
        return adwire.to_classad(answer)

    def query_ocu(self, request: ClassAd) -> list:
        """Every OCU of the schedd as a ClassAd (its request, OCUId, OCUName, OCUState...)."""
        if not isinstance(request, ClassAd):
            raise TypeError("request must be a ClassAd")
        try:
            items = ipc.call(self._address, "query_ocu", timeout=20, request=adwire.classad_exprs(request))
        except (HTCondorException, OSError) as exc:
            raise HTCondorException("Cannot send OCU query request to schedd") from exc
        return [adwire.to_classad(item) for item in items]
