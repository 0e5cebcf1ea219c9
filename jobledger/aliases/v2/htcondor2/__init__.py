"""With this folder on sys.path, ``import htcondor2`` gives ``jobledger``."""

import sys

import jobledger
import jobledger.dags
import jobledger.personal

sys.modules["htcondor2.dags"] = jobledger.dags
sys.modules["htcondor2.personal"] = jobledger.personal
sys.modules[__name__] = jobledger
