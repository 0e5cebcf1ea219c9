"""``RemoteParam``: a daemon's configuration as a mutable mapping (htcondor2.RemoteParam).

The keys are the names the daemon's configuration defines (asked once, and
again by ``refresh``); a value is asked for the first time it is read.
Assigning sets the daemon's *runtime* configuration (it needs
ENABLE_RUNTIME_CONFIG and a SETTABLE_ATTRS_<level> list naming the knob:
daemons/runtime_config.py), which takes effect when the daemon is next
reconfigured; later reads here see the assigned value until ``refresh``.
Deleting unsets the runtime assignment.  Names are matched in any case, as
HTCondor's configuration names are.  ``_Param`` is the class of this process's
own ``param`` (the v1 reference names it).
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping

from jobledger.daemons import ipc
from jobledger.daemons.config_files import Param as _Param
from jobledger.eventcore.classad import ClassAd
from jobledger.eventcore.errors import HTCondorException, HTCondorValueError

__all__ = ["RemoteParam", "_Param"]

TIMEOUT = 30.0


class RemoteParam(MutableMapping):
    """The configuration of the daemon ``location`` names (``MyAddress``)."""

    def __init__(self, location: ClassAd):
        if not isinstance(location, ClassAd):
            raise TypeError("location must be a ClassAd")
        address = location.get("MyAddress")
        if not isinstance(address, str):
            raise HTCondorValueError("Address not available in location ClassAd.")
        self._location = location
        self._address = address
        self._keys: list[str] = []
        self._cache: dict[str, str] = {}
        self.refresh()

    def _call(self, cmd: str, **args):
        return ipc.call(self._address, cmd, timeout=TIMEOUT, **args)

    def refresh(self) -> None:
        """Read the daemon's names again; values are asked afresh (an assignment not
        yet applied by a reconfig is gone from what this mapping shows)."""
        self._keys = list(self._call("config_names"))
        self._cache = {}

    def _name(self, key) -> str:
        if not isinstance(key, str):
            raise TypeError("key must be a string")
        upper = key.upper()
        for name in self._keys:
            if name.upper() == upper:
                return name
        raise KeyError(key)

    def __getitem__(self, key: str) -> str:
        name = self._name(key)
        if name.upper() not in self._cache:
            value = self._call("config_val", name=name)
            if value is None:
                raise KeyError(key)
            self._cache[name.upper()] = value
        return self._cache[name.upper()]

    def __setitem__(self, key: str, value: str) -> None:
        if not isinstance(key, str):
            raise TypeError("key must be a string")
        if not isinstance(value, str):
            raise TypeError("value must be a string")
        try:
            self._call("config_set", name=key, assignment=f"{key} = {value}")
        except ipc.ConnectionLost:
            raise
        except HTCondorException as exc:
            raise HTCondorException(f"Failed to set remote daemon parameter. ({exc})") from None
        if not any(name.upper() == key.upper() for name in self._keys):
            self._keys.append(key)
        self._cache[key.upper()] = value

    def __delitem__(self, key: str) -> None:
        name = self._name(key)
        try:
            self._call("config_set", name=name, assignment="")
        except ipc.ConnectionLost:
            raise
        except HTCondorException as exc:
            raise HTCondorException(f"Failed to set remote daemon parameter. ({exc})") from None
        self._cache.pop(name.upper(), None)
        self._keys.remove(name)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._keys))

    def __len__(self) -> int:
        return len(self._keys)

    def __repr__(self) -> str:
        return f"<RemoteParam of {self._address}: {len(self._keys)} names>"
