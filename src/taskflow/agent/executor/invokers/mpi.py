"""The @mpi invoker: hostfile, runner command line, mpi4py mode (node side).

    runner [flags] --hostfile <log_dir>/job<id>.hosts -n P program args...

The hostfile lists the hosts the scheduler chose with their slots, in the
runner's own format (Open MPI ``host slots=N``, MPICH/Hydra ``host:N``). The
hostfile stays next to the task's logs and its path is in ``TASKFLOW_HOSTFILE``.

``runner='srun'`` (agents inside a Slurm job) starts a job step on the nodes
the scheduler chose, by Slurm's node names, with exactly the chosen number of
ranks per node: ``--distribution=arbitrary`` with a ``--nodelist`` of one
node per rank (the hostfile lists the same). The step is
``--overlap`` (the agents' own step holds the node's CPUs already), each rank
gets ``--cpus-per-task`` = the task's computing units per process, and the
agent step's ``SLURM_NTASKS_PER_NODE``/``SLURM_CPUS_PER_TASK``/... are
dropped from the environment so they do not leak into the new step. User
``flags`` come last, so ``flags='--mpi=pmix'`` and the like override. An
agent outside any Slurm job runs ``srun --ntasks=P``, and Slurm allocates. Open MPI refuses
to run as root unless told; the invoker sets ``OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM)`` when it runs as root
(override them in the environment to change that).
"""
from __future__ import annotations

import os
import pickle
import shlex
import subprocess
import sys
import tempfile
from typing import TYPE_CHECKING, Any

import cloudpickle

from ....errors import ProgramFailed
from ....wire.invocation import Invocation, Mpi
from . import command, process
from .environment import log_base_of, program_env

if TYPE_CHECKING:
    from ....wire.messages import LineWire

_FLAVOR: dict[str, str] = {}


def flavor(runner: str, env: dict[str, str]) -> str:
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


# The agent's own step exports these; srun would read them as options of the new step.
_STEP_ENV = ("SLURM_NTASKS", "SLURM_NPROCS", "SLURM_NTASKS_PER_NODE", "SLURM_TASKS_PER_NODE",
             "SLURM_CPUS_PER_TASK", "SLURM_DISTRIBUTION", "SLURM_NNODES", "SLURM_NODELIST",
             "SLURM_STEP_NODELIST", "SLURM_STEP_NUM_NODES", "SLURM_STEP_NUM_TASKS",
             "SLURM_STEP_TASKS_PER_NODE", "SLURM_HOSTFILE", "SLURM_ARBITRARY_NODELIST")


def srun_args(hosts: list[Any], procs: int, unit: int, hostfile: str,
              env: dict[str, str]) -> list[str]:
    """Options of an ``srun`` step over ``hosts`` [(slurm node, ranks)] (sets ``env``)."""
    with open(hostfile, "w") as f:
        for h, k in hosts:
            f.write(f"{h}\n" * k)
    for k in _STEP_ENV:
        env.pop(k, None)
    return ["--overlap", "--distribution=arbitrary", f"--nodes={len(hosts)}",
            f"--ntasks={procs}", f"--cpus-per-task={unit}",
            "--nodelist=" + ",".join(h for h, k in hosts for _ in range(k))]


def host_args(kind: str, hosts: list[Any], hostfile: str) -> list[str]:
    with open(hostfile, "w") as f:
        for h, k in hosts:
            f.write(f"{h} slots={k}\n" if kind == "openmpi" else f"{h}:{k}\n")
    return ["--hostfile" if kind == "openmpi" else "-f", hostfile]


def distribution(layout: tuple[int, int, int], rank: int, size: int) -> list[int]:
    """The indices of a collection rank ``rank`` of ``size`` receives under a PyCOMPSs
    layout (block_count, block_length, stride; -1: size, 1, 1): one block per rank when
    there are as many blocks as ranks, else the blocks dealt round-robin."""
    count, length, stride = layout
    count = size if count == -1 else count
    length = 1 if length == -1 else length
    stride = 1 if stride == -1 else stride
    blocks = [rank] if count == size else range(rank, count, size)
    return [i for b in blocks for i in range(b * stride, b * stride + length)]


def rank_parts(call: Mpi, values: dict[str, Any], args: list[Any], kw: dict[str, Any],
               procs: int) -> list[tuple[str, int | None, list[list[Any]]]]:
    """Each layout's collection cut per rank: [(parameter, its position in ``args`` or
    None for a keyword, [rank 0's elements, rank 1's, ...])]; the collection itself leaves
    ``args``/``kw`` (set to None there), so no rank receives all of it."""
    order = list(call.line.order)
    out = []
    for name, count, length, stride in call.layouts:
        col = values.get(name)
        if not isinstance(col, (list, tuple)):
            raise TypeError(f"@mpi {name}_layout: parameter '{name}' is a "
                            f"{type(col).__name__}, not a collection")
        blocks = []
        for rank in range(procs):
            idx = distribution((count, length, stride), rank, procs)
            if idx and idx[-1] >= len(col):
                raise IndexError(f"@mpi {name}_layout={{block_count: {count}, block_length: "
                                 f"{length}, stride: {stride}}}: rank {rank} of {procs} needs "
                                 f"element {idx[-1]}, but '{name}' has {len(col)}")
            blocks.append([col[i] for i in idx])
        pos = order.index(name) if name in order else None
        if pos is not None and pos < len(args):
            args[pos] = None
        else:
            pos = None
            kw[name] = None
        out.append((name, pos, blocks))
    return out


def invoke(call: Mpi, inv: Invocation, func: Any, args: list[Any], kw: dict[str, Any],
           logs: list[LineWire], tid: int) -> Any:
    """The task's MPI launch (its exit code, or rank 0's value in mpi4py mode)."""
    values = command.bind(func, args, kw, call.line.order)
    env = program_env(inv)
    cwd = command.working_dir(call.working_dir, values)
    tail, streams = command.build_args(call.line, values, env, cwd)
    return run(call, inv, func, args, kw, values, tail, streams, cwd, dict(env), logs,
               log_base_of(inv, tid), tid)


def run(call: Mpi, inv: Invocation, func: Any, args: list[Any], kw: dict[str, Any],
        values: dict[str, Any], tail: list[str], streams: dict[str, tuple[str, str]], cwd: str,
        env: dict[str, str], logs: list[LineWire], log_base: str | None, tid: int) -> Any:
    runner = call.runner
    kind = flavor(runner, env)
    procs = call.processes or 1
    place = inv.placement
    hosts: Any = place.hosts if place is not None else [["localhost", procs]]
    base = log_base or os.path.join(tempfile.mkdtemp(prefix="taskflow-mpi-"), "job")
    os.makedirs(os.path.dirname(base), exist_ok=True)
    hostfile = base + ".hosts"
    unit = max(inv.gang.unit, 1) if inv.gang is not None else 1     # (0: on I/O executors)
    flags = shlex.split(call.flags or "")
    fail = call.fail_by_exit_value
    if kind == "slurm" and place is not None and place.slurm_nodes:
        argv = [runner] + srun_args(list(place.slurm_nodes), procs, unit, hostfile, env) + flags
    elif kind == "slurm":       # the agent is not in a Slurm job: srun gets an allocation
        argv = [runner, f"--ntasks={procs}", f"--cpus-per-task={unit}"] + flags
    else:
        argv = [runner] + flags + host_args(kind, hosts, hostfile) + ["-n", str(procs)]
    env["TASKFLOW_HOSTFILE"] = hostfile
    env["OMP_NUM_THREADS"] = str(unit)
    if kind == "openmpi" and os.geteuid() == 0:
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    if call.binary and inv.container is not None:     # every rank in a container
        from . import container
        argv += container.rank_command(inv, call.binary, values, tail, cwd, env, tid)
    elif call.programs:            # MPMD: runner ... -n P1 prog1 args1 : -n P2 prog2 ...
        argv = argv[:-2] if argv[-2:] == ["-n", str(procs)] else argv
        for i, prog in enumerate(call.programs):
            ptail, _ = command.build_args(call.line._replace(args=prog.args, words=prog.words),
                                          values, env, cwd)
            if i:
                argv.append(":")
            argv += ["-n", str(prog.processes or 1)]
            argv += [command.resolve_binary(prog.binary, cwd, env)] + ptail
        return process.run(argv, cwd, env, streams, logs, log_base, fail)
    if call.binary:
        argv += [command.resolve_binary(call.binary, cwd, env)] + tail
        return process.run(argv, cwd, env, streams, logs, log_base, fail)
    # mpi4py mode: the function itself on every rank; rank 0 writes the result.
    payload, result = base + ".call.pkl", base + ".result.pkl"
    args, kw = list(args), dict(kw)
    parts = rank_parts(call, values, args, kw, procs) if call.layouts else []
    with open(payload, "wb") as f:
        cloudpickle.dump((func, args, kw, result, call.rank_values,
                          [(name, pos) for name, pos, _ in parts]), f)
    written = [payload]
    for rank in range(procs if parts else 0):     # each rank reads only its blocks
        written.append(f"{payload}.r{rank}")
        with open(written[-1], "wb") as f:
            cloudpickle.dump([blocks[rank] for _, _, blocks in parts], f)
    if os.path.exists(result):
        os.unlink(result)
    argv += [sys.executable, "-m", "taskflow.agent.executor.invokers.mpi_python", payload]
    try:
        code = process.run(argv, cwd, env, streams, logs, log_base, False)
        outcome = None
        if os.path.exists(result):
            with open(result, "rb") as f:
                outcome = pickle.load(f)
    finally:
        for p in (*written, result):
            if os.path.exists(p):
                os.unlink(p)
    status, value = outcome if outcome is not None else (None, None)    # mpi_python._write
    if status == "error" and isinstance(value, BaseException):
        raise value
    if code != 0 or status is None:
        lines = [line for _, lvl, line in logs if lvl != "STDOUT"][-process.TAIL:]
        raise ProgramFailed(
            f"command {shlex.join(argv)} failed with exit code {code} (in {cwd}) before rank 0 "
            f"returned a value\nlast stderr lines:\n  " + "\n  ".join(lines) +
            (f"\nlogs: {log_base}.out, {log_base}.err" if log_base else ""), code, argv)
    return value
