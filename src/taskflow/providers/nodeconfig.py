"""One node of the cluster file: where it is and how to start its agent there.

A record of its own, below the cluster file's reader (:mod:`.cluster`, which
builds the providers) and the SSH provider that starts the node (:mod:`.ssh`):
each imports it, neither the other. ``taskflow.providers.cluster.NodeConfig``
names it too.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class NodeConfig:
    """One node of the cluster file (also usable directly from Python)."""

    name: str
    host: str = ""
    port: int = 22
    user: str | None = None
    identity_file: str | None = None
    computing_units: int | None = None
    memory: float | None = None
    gpus: int = 0
    python: str = "python3"
    working_dir: str = "~/.taskflow"
    shared_fs: bool = False
    env: dict[str, str] = field(default_factory=dict)
    setup: list[str] = field(default_factory=list)
    local: bool = False
    # taskflow installs itself there (providers.selfinstall); a list: and these requirements
    install: bool | list[str] = False
    memory_budget: float | str | None = None    # wire.budget amounts (None: the run's)
    memory_pause: float | str | None = None

    @property
    def where(self) -> str:
        user = f"{self.user}@" if self.user else ""
        return f"{user}{self.host}:{self.port}"
