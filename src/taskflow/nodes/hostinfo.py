"""Facts about this host that are needed before any work can flow.

Kept apart from :mod:`taskflow.nodes.sampler` so that neither the master nor
a starting agent imports psutil (~20 ms here) just to learn the memory size.
"""
from __future__ import annotations

import os


def total_memory_gb() -> float:
    """This host's memory in GiB: from the OS where it says (Linux, macOS), else psutil."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):
        import psutil
        return psutil.virtual_memory().total / 2**30
