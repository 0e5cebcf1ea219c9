"""Terminal helpers HTCondor's own Python tools import from the bindings
(``htcondor2._utils.ansi`` / ``.keyboard``); here so those tools run with
``jobledger`` standing in for ``htcondor2``."""
