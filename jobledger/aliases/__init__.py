"""Folders that make a program's own imports resolve to jobledger, unchanged.

``python -m jobledger.aliases v1`` prints the folder to put first on PYTHONPATH so
that ``import htcondor`` / ``import classad`` (the v1 bindings' names) give
``jobledger.v1`` / ``jobledger.v1.classad``; ``v2`` does the same for ``htcondor2`` /
``classad2`` with ``jobledger`` / ``jobledger.classad``.
"""

from jobledger.aliases.paths import alias_path, main

__all__ = ["alias_path", "main"]
