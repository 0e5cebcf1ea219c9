"""Test-only import shim: with this directory first on PYTHONPATH, a program written
for the HTCondor bindings (``htcondor2``/``classad2``, or v1 ``htcondor``/``classad``)
imports jobledger instead -- the program itself runs unchanged."""

import sys

import jobledger
import jobledger._utils
import jobledger._utils.ansi
import jobledger._utils.keyboard
import jobledger.classad

for prefix in ("htcondor2", "htcondor"):
    sys.modules[prefix] = jobledger
    sys.modules[f"{prefix}._utils"] = jobledger._utils
    sys.modules[f"{prefix}._utils.ansi"] = jobledger._utils.ansi
    sys.modules[f"{prefix}._utils.keyboard"] = jobledger._utils.keyboard
for name in ("classad2", "classad"):
    sys.modules[name] = jobledger.classad
