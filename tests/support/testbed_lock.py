"""One test session at a time per testbed (testbed/testbed_hold.py); skip when busy."""
from __future__ import annotations

import os
import sys

import pytest

from support.paths import ROOT

sys.path.insert(0, os.path.join(ROOT, "testbed"))
from testbed_hold import Held, hold  # noqa: E402


def acquire(path: str, what: str, timeout: float = 90.0) -> Held:
    """Hold the lock named by ``path``; skip the test if it stays busy past ``timeout``
    (shorter than pytest-timeout's 120 s per test: a busy testbed skips, never errors)."""
    held = hold(path, timeout)
    if held is None:
        pytest.skip(f"the {what} testbed is in use by another test session")
    return held
