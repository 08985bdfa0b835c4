"""Where things are, from this file's place (tests/support/paths.py): the checkout and tests/.

One definition for every test and helper, whichever folder it sits in."""
from __future__ import annotations

import os

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # tests/
ROOT = os.path.dirname(TESTS)                                          # the checkout
