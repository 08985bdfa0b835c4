"""One node of the cluster file: where it is and how to start its agent there.

A record of its own, below the cluster file's reader (:mod:`.cluster`, which
builds the providers) and the SSH provider that starts the node (:mod:`.ssh`):
each imports it, neither the other. ``taskflow.providers.cluster.NodeConfig``
names it too.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Union

# What a node declares of one named resource: a count of tokens (``license: 4``) or the
# indices of its devices (``gpu: [0, 1]``)
Declared = Union[int, list[Union[int, str]]]
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")


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
    # named resources: {"license": 4, "gpu": [0, 1], "socket": [0, 1]} (declared_resources)
    resources: dict[str, Declared] = field(default_factory=dict)
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


def declared_resources(value: Any, gpus: int = 0) -> dict[str, Declared]:
    """A node's ``resources`` mapping checked: each name a word, each value a count >= 1
    (counted tokens) or a non-empty list of distinct indices (devices, shareable by
    fractions). ``gpus`` is ``gpu`` (``gpus: N`` alone declares ``gpu: [0..N-1]``).
    Raises ValueError naming the entry."""
    if not isinstance(value, dict):
        raise ValueError(f"resources must be a mapping such as {{license: 4, gpu: [0, 1]}}, "
                         f"not {value!r}")
    out: dict[str, Declared] = {}
    for name, v in value.items():
        if not isinstance(name, str) or not _NAME.match(name):
            raise ValueError(f"resource name {name!r} must be a word (letters, digits, "
                             f"'_', '-', '.')")
        key = "gpu" if name == "gpus" else name
        if key in out:
            raise ValueError(f"resource {key!r} is declared twice")
        if isinstance(v, bool) or not isinstance(v, (int, list)):
            raise ValueError(f"resources.{name} must be a count (license: 4) or a list of "
                             f"indices (gpu: [0, 1]), not {v!r}")
        if isinstance(v, int):
            if v < 1:
                raise ValueError(f"resources.{name} is {v}: declare a count >= 1 (or leave "
                                 f"it out)")
            out[key] = v
            continue
        if not v or not all(isinstance(i, (int, str)) and not isinstance(i, bool) for i in v):
            raise ValueError(f"resources.{name} must list its indices (ints or names), such "
                             f"as [0, 1], not {v!r}")
        if len({str(i) for i in v}) != len(v):
            raise ValueError(f"resources.{name} lists an index twice: {v!r}")
        out[key] = list(v)
    if gpus:
        have = out.get("gpu")
        if have is None:
            out["gpu"] = list(range(gpus))
        elif not isinstance(have, list) or len(have) != gpus:
            raise ValueError(f"gpus: {gpus} and resources.gpu: {have!r} disagree; keep one")
    return out
