"""Import aliases for HTCondor's own test suite run against jobledger.

With this directory first on PYTHONPATH, ``htcondor2`` and every module under it
import as ``jobledger`` (``htcondor2.X`` as ``jobledger.X``), ``classad2`` as
``jobledger.classad``, and v1's ``htcondor``/``classad`` as ``jobledger.v1`` and
``jobledger.v1.classad``.  Nothing else changes: the programs
and tests importing them run unchanged.  Used by ``make upstream-tests`` only.
"""

import importlib
import importlib.abc
import importlib.util
import sys

_ROOTS = {"htcondor2": "jobledger", "htcondor": "jobledger.v1",
          "classad2": "jobledger.classad", "classad": "jobledger.v1.classad"}


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, target: str):
        self.target = target

    def create_module(self, spec):
        module = importlib.import_module(self.target)
        self.real_spec = module.__spec__
        return module

    def exec_module(self, module):
        module.__spec__ = self.real_spec  # the import system set the alias's spec on it


class _AliasFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        root, _, rest = fullname.partition(".")
        if root not in _ROOTS:
            return None
        real = _ROOTS[root] + ("." + rest if rest else "")
        if importlib.util.find_spec(real) is None:
            return None
        return importlib.util.spec_from_loader(fullname, _AliasLoader(real))


sys.meta_path.insert(0, _AliasFinder())
