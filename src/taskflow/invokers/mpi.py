"""The @mpi invoker: hostfile, runner command line, mpi4py mode (node side).

    runner [flags] --hostfile <log_dir>/job<id>.hosts -n P program args...

The hostfile lists the hosts the scheduler chose with their slots, in the
runner's own format (Open MPI ``host slots=N``, MPICH/Hydra ``host:N``); srun
gets ``--nodelist``. The hostfile stays next to the task's logs and its path
is in ``TASKFLOW_HOSTFILE``. Open MPI refuses to run as root unless told;
the invoker sets ``OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM)`` when it runs as root
(override them in the environment to change that).
"""
from __future__ import annotations

import os
import pickle
import shlex
import subprocess
import sys
import tempfile
from typing import Any

import cloudpickle

from . import command, process

_FLAVOR: dict = {}


def flavor(runner: str, env: dict) -> str:
    """"openmpi", "mpich" or "slurm" (cached per runner path)."""
    if runner == "srun":
        return "slurm"
    path = command.resolve_binary(runner, os.getcwd(), env)
    if path not in _FLAVOR:
        try:
            out = subprocess.run([path, "--version"], capture_output=True, text=True,
                                 timeout=30, env=env).stdout
        except (OSError, subprocess.TimeoutExpired):
            out = ""
        _FLAVOR[path] = "openmpi" if ("Open MPI" in out or "OpenRTE" in out) else "mpich"
    return _FLAVOR[path]


def host_args(kind: str, hosts: list, hostfile: str) -> list[str]:
    if kind == "slurm":
        return ["--nodelist=" + ",".join(h for h, _ in hosts), f"--nodes={len(hosts)}"]
    with open(hostfile, "w") as f:
        for h, k in hosts:
            f.write(f"{h} slots={k}\n" if kind == "openmpi" else f"{h}:{k}\n")
    return ["--hostfile" if kind == "openmpi" else "-f", hostfile]


def run(cfg: dict, options: dict, func: Any, args: list, kw: dict, tail: list, streams: dict,
        cwd: str, env: dict, logs: list, log_base: str | None, fail: bool) -> Any:
    runner = cfg["runner"]
    kind = flavor(runner, env)
    procs = cfg.get("processes") or 1
    hosts = options.get("hosts") or [["localhost", procs]]
    base = log_base or os.path.join(tempfile.mkdtemp(prefix="taskflow-mpi-"), "job")
    os.makedirs(os.path.dirname(base), exist_ok=True)
    hostfile = base + ".hosts"
    argv = [runner] + shlex.split(cfg.get("flags") or "") + host_args(kind, hosts, hostfile)
    argv += ["-n", str(procs)]
    env["TASKFLOW_HOSTFILE"] = hostfile
    env["OMP_NUM_THREADS"] = str((options.get("gang") or {}).get("unit", 1))
    if kind == "openmpi" and os.geteuid() == 0:
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    if cfg.get("binary"):
        argv += [command.resolve_binary(cfg["binary"], cwd, env)] + tail
        return process.run(argv, cwd, env, streams, logs, log_base, fail)
    # mpi4py mode: the function itself on every rank; rank 0 writes the result.
    payload, result = base + ".call.pkl", base + ".result.pkl"
    with open(payload, "wb") as f:
        cloudpickle.dump((func, list(args), dict(kw), result), f)
    if os.path.exists(result):
        os.unlink(result)
    argv += [sys.executable, "-m", "taskflow.invokers.mpi_python", payload]
    try:
        code = process.run(argv, cwd, env, streams, logs, log_base, False)
        outcome = None
        if os.path.exists(result):
            with open(result, "rb") as f:
                outcome = pickle.load(f)
    finally:
        for p in (payload, result):
            if os.path.exists(p):
                os.unlink(p)
    if outcome is not None and outcome[0] == "error":
        raise outcome[1]
    if code != 0 or outcome is None:
        lines = [line for _, lvl, line in logs if lvl != "STDOUT"][-process.TAIL:]
        raise process.ProgramFailed(
            f"command {shlex.join(argv)} failed with exit code {code} (in {cwd}) before rank 0 "
            f"returned a value\nlast stderr lines:\n  " + "\n  ".join(lines) +
            (f"\nlogs: {log_base}.out, {log_base}.err" if log_base else ""), code, argv)
    return outcome[1]
