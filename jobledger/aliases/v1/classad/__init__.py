"""With this folder on sys.path, ``import classad`` gives ``jobledger.v1.classad``."""

import sys

import jobledger.v1.classad

sys.modules[__name__] = jobledger.v1.classad
