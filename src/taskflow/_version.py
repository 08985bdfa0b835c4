"""The version of taskflow; master and nodes must run the same one (frames change)."""
from __future__ import annotations

__version__ = "0.1.0"
# The name to pip install. ``taskflow`` on the package index is OpenStack's TaskFlow (another
# library, with the same import name): this project is published as taskflow-hpc.
DIST_NAME = "taskflow-hpc"


def install_hint(extra: str | None = None) -> str:
    """The ``pip install`` line that works for this installation: the checkout it was installed
    from (the package index does not have taskflow-hpc yet), else the distribution's name."""
    import os
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    target = here if os.path.isfile(os.path.join(here, "pyproject.toml")) else DIST_NAME
    return f"pip install '{target}[{extra}]'" if extra else f"pip install '{target}'"
