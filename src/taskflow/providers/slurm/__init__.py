"""Node agents in Slurm jobs: the Slurm provider and what only it uses.

:mod:`.provider` the provider (batch and pilot jobs, the agents dialling back);
:mod:`.manager` its thread (looks, decides, explains), which sees the provider
as a narrow :class:`~.manager.JobOwner`; :mod:`.queue` what Slurm says about
a run's jobs (one batched ``squeue``) and the Slurm commands; :mod:`.auto`
``--slurm auto`` (batch or pilots, from a model of the queue); :mod:`.alloc`
the allocation the master itself runs in (``taskflow submit``);
:mod:`.reaper` the small process that cancels a dead master's jobs
(``python -m taskflow.providers.slurm.reaper``); :mod:`.adopt` a resumed
master taking over the jobs an earlier master left running.

``from taskflow.providers.slurm import SlurmProvider`` is loaded on first use
(PEP 562), so the reaper's process imports only what it runs.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what the lazy name below resolves to, for type checkers
    from .provider import SlurmProvider as SlurmProvider


def __getattr__(name: str) -> Any:
    if name != "SlurmProvider":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = importlib.import_module(".provider", __name__).SlurmProvider
    globals()[name] = value
    return value
