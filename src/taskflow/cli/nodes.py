"""The nodes of ``taskflow run``: ``--cluster FILE``, ``--slurm MODE --slurm-opt KEY=VALUE``.

The providers check what they are given and raise typed errors; this module
turns those into the command's answer: ``taskflow: <why>`` on stderr and
exit status 2.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, NoReturn

import click
import yaml

from ..errors import ClusterConfigError
from ..providers.cluster import runtime_options, slurm_provider

if TYPE_CHECKING:
    from ..providers.base import Provider


def cluster_options(path: str | None, placement: str) -> dict[str, Any]:
    """Runtime keywords for ``taskflow run [--cluster FILE] [--placement P]``."""
    try:
        return runtime_options(path, placement)
    except ClusterConfigError as exc:
        _refuse(str(exc))


def slurm_cli_provider(mode: str, nodes: int, opts: tuple[str, ...]) -> Provider:
    """The SlurmProvider of ``taskflow run --slurm MODE --slurm-nodes N --slurm-opt K=V ...``.

    The keys and their checks are the cluster file's ``slurm`` section's; a
    mistake exits with status 2 and says which option and why.
    """
    sec: dict[str, Any] = {"mode": mode, "nodes": nodes}
    for opt in opts:
        key, sep, value = opt.partition("=")
        key = key.strip()
        if not sep or not key:
            _refuse(f"--slurm-opt {opt!r}: write KEY=VALUE (e.g. partition=debug)")
        if key in ("sbatch", "worker_init"):
            sec.setdefault(key, []).append(value)
        elif key in ("time", "partition", "account", "qos", "memory", "python", "host",
                     "history"):
            sec[key] = value
        else:
            try:
                sec[key] = yaml.safe_load(value)
            except yaml.YAMLError:
                sec[key] = value
    try:
        return slurm_provider(sec, "--slurm-opt")
    except ClusterConfigError as exc:
        _refuse(str(exc).split(": ", 1)[-1].replace("slurm.", "--slurm-opt "))
    except RuntimeError as exc:          # e.g. --slurm allocation outside an allocation
        _refuse(str(exc))


def _refuse(message: str) -> NoReturn:
    click.echo(f"taskflow: {message}", err=True)
    raise SystemExit(2) from None
