"""With this folder on sys.path, ``import classad2`` gives ``jobledger.classad``."""

import sys

import jobledger.classad

sys.modules[__name__] = jobledger.classad
