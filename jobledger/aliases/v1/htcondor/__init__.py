"""With this folder on sys.path, ``import htcondor`` gives ``jobledger.v1``."""

import sys

import jobledger.dags
import jobledger.personal
import jobledger.v1

sys.modules["htcondor.dags"] = jobledger.dags
sys.modules["htcondor.personal"] = jobledger.personal
sys.modules[__name__] = jobledger.v1
