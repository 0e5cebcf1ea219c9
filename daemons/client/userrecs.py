"""htcondor2's ``Schedd`` methods on the schedd's User and Project records
(``queryUserAds``, ``addUserRec`` ... ``disableProjectRec``), as HTCondor's bindings
shape them: a user_spec is a name, a list of names, a list of ClassAds (add, enable,
update) or an ExprTree constraint; each change answers the schedd's result ClassAd
(``NumAds``, ``Result``, ``ErrorString`` ...), not found included, as HTCondor's.
The commands are ``daemons.schedd.userrecs``'s."""

from __future__ import annotations

from jobledger.daemons import ipc
from jobledger.eventcore import adwire
from jobledger.eventcore.classad import ClassAd, ExprTree
from jobledger.eventcore.errors import HTCondorException

__all__ = ["UserRecMethods"]

DEFAULT_REASON = "Python-initiated action"
# HTCondor's bindings answer every refusal of the pair (schedd.cpp) with these words
ACTION_FAILED = "Error when performing user or project action on the schedd."


def _result(answer: dict) -> ClassAd:
    return adwire.to_classad(adwire.exprs_of(answer))


class UserRecMethods:
    """Mixed into ``daemons.client.api.Schedd`` (``self._address``)."""

    _address: str

    def _userrec_query(self, constraint, projection, callback, limit, projects: bool) -> list:
        if not isinstance(projection, list):
            raise TypeError("projection must be a list")
        if not all(isinstance(p, str) for p in projection):
            raise TypeError("projection must be a list of strings")
        items = ipc.call(self._address, "query_userrec_ads", timeout=60,
                         constraint=str(constraint) if constraint is not None else "",
                         projection=list(projection), limit=int(limit), projects=projects)
        ads = [adwire.to_classad(item) for item in items]
        if callback is None:
            return ads
        return [value for value in (callback(ad) for ad in ads) if value is not None]

    def queryUserAds(self, constraint="", projection=[], callback=None, limit: int = -1) -> list:
        """The schedd's User records (``MyType = "Owner"``) ``constraint`` is true of, with
        their live job counts (NumIdle, NumRunning, ...)."""
        return self._userrec_query(constraint, projection, callback, limit, False)

    def queryProjectAds(self, constraint="", projection=[], callback=None, limit: int = -1) -> list:
        """The schedd's Project records (``MyType = "Project"``)."""
        return self._userrec_query(constraint, projection, callback, limit, True)

    def _userrec_act(self, cmd: str, spec, projects: bool, reason=None, create: bool = False,
                     ads_only: bool = False) -> ClassAd:
        args: dict = {"projects": projects}
        if isinstance(spec, list):
            if all(isinstance(item, str) for item in spec):
                if ads_only:     # HTCondor: "Edit requires a list of ads."
                    raise HTCondorException(ACTION_FAILED)
                args["names"] = list(spec)
            elif all(isinstance(item, ClassAd) for item in spec):
                if cmd in ("disable_userrec", "delete_userrec"):
                    raise HTCondorException(ACTION_FAILED)   # "... mixed users and projects not implemented"
                key = "Name" if projects else "User"
                for ad in spec:
                    if key not in ad and "Requirements" not in ad:
                        raise HTCondorException(ACTION_FAILED)   # the ad names no record
                args["ads"] = [adwire.classad_exprs(ad) for ad in spec]
            else:
                raise TypeError("All elements of the userrec list must be strings or classads")
        elif isinstance(spec, ExprTree):
            # HTCondor's bindings act on a constraint for users, and remove projects by one
            if ads_only or (projects and cmd != "delete_userrec") or cmd == "add_userrec":
                raise HTCondorException(ACTION_FAILED)
            args["constraint"] = str(spec)
        elif isinstance(spec, str):
            if ads_only:
                raise HTCondorException(ACTION_FAILED)
            args["names"] = [spec]
        else:
            raise TypeError("The userrec_spec must be list of strings, a list of ClassAd, a string, or an ExprTree.")
        if reason is not None:
            if not isinstance(reason, str):
                raise TypeError("reason must be a string")
            args["reason"] = reason
        if not args.get("names") and not args.get("ads") and "constraint" not in args:
            raise HTCondorException(ACTION_FAILED)
        return _result(ipc.call(self._address, cmd, timeout=60, **args))

    def addUserRec(self, user_spec) -> ClassAd:
        """Add User records (enable those that exist): names, or ClassAds with User."""
        return self._userrec_act("add_userrec", user_spec, False)

    def enableUserRec(self, user_spec) -> ClassAd:
        return self._userrec_act("enable_userrec", user_spec, False)

    def disableUserRec(self, user_spec, reason=None) -> ClassAd:
        """Disable User records: their users cannot submit (``DisableReason`` says why)."""
        return self._userrec_act("disable_userrec", user_spec, False,
                                 DEFAULT_REASON if reason is None else reason)

    def removeUserRec(self, user_spec, reason=None) -> ClassAd:
        """Remove User records; one whose user has jobs in the queue is disabled instead."""
        return self._userrec_act("delete_userrec", user_spec, False,
                                 DEFAULT_REASON if reason is None else reason)

    def updateUserRec(self, user_attributes) -> ClassAd:
        """Set attributes of User records: ClassAds naming User (or a Requirements)."""
        return self._userrec_act("edit_userrec", user_attributes, False, ads_only=True)

    def addProjectRec(self, project_spec) -> ClassAd:
        return self._userrec_act("add_userrec", project_spec, True)

    def removeProjectRec(self, user_spec, reason=None) -> ClassAd:
        """Remove Project records; one with jobs in the queue is refused (Result 16)."""
        return self._userrec_act("delete_userrec", user_spec, True,
                                 DEFAULT_REASON if reason is None else reason)

    def updateProjectRec(self, project_attributes) -> ClassAd:
        return self._userrec_act("edit_userrec", project_attributes, True, ads_only=True)

    def enableProjectRec(self, project_spec) -> ClassAd:
        return self._userrec_act("enable_userrec", project_spec, True)

    def disableProjectRec(self, project_spec, reason=None) -> ClassAd:
        return self._userrec_act("disable_userrec", project_spec, True,
                                 DEFAULT_REASON if reason is None else reason)
