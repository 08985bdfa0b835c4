"""The workflow invoker: a whole application as one task (PyCOMPSs's ``@compss``), node side.

The task runs ``python -m taskflow run [--compat pycompss] --workers N
--run-dir <parent run dir>/nested <flags> <script> <args>`` in its working
directory, where N is the computing units the task holds on its node(s):
the nested run uses exactly the slots the scheduler gave the task. Its run
id is ``<parent run id>-t<task id>``; the task's log names it and the
command that shows it (``taskflow status``). The exit code is the task's
value; with ``fail_by_exit_value`` (the default) a non-zero one fails it.
Several nodes: the nested run starts its agents on them over SSH, as a
cluster file with those hosts would (they must reach each other by SSH).
"""
from __future__ import annotations

import os
import shlex
import sys
import tempfile
import time
from typing import TYPE_CHECKING, Any, Sequence

from ....wire.invocation import Invocation, Workflow
from . import command, process
from .environment import log_base_of, program_env

if TYPE_CHECKING:
    from ....wire.messages import LineWire


def invoke(call: Workflow, inv: Invocation, func: Any, args: list[Any], kw: dict[str, Any],
           logs: list[LineWire], tid: int) -> int:
    """The nested run of task ``tid``; its exit status is the value."""
    values = command.bind(func, args, kw, call.line.order)
    cwd = command.working_dir(call.working_dir, values)
    return run(call, inv, values, cwd, program_env(inv), logs, log_base_of(inv, tid), tid)


def run(call: Workflow, inv: Invocation, values: dict[str, Any], cwd: str,
        env: dict[str, str], logs: list[LineWire], log_base: str | None, tid: int) -> int:
    script = command.substitute(call.script, values)
    if not os.path.isabs(script):
        script = os.path.abspath(os.path.join(cwd, script))
    if not os.path.isfile(script):
        raise FileNotFoundError(f"the application {script} of this workflow task does not "
                                f"exist on node {os.uname().nodename}")
    place = inv.placement
    hosts = place.node_hosts if place is not None else ("localhost",)
    names: Any = place.node_names if place is not None else [("localhost", int(inv.threads or 1))]
    run_dir = call.run_dir or os.path.join(cwd, ".taskflow", "runs")
    run_id = f"{call.parent_run or 'run'}-t{tid}"
    argv = [sys.executable, "-m", "taskflow", "run", "--run-dir", run_dir, "--no-progress"]
    if call.compat:
        argv += ["--compat", "pycompss"]
    if len(hosts) > 1:
        argv += ["--cluster", _cluster_file(hosts, names, log_base or run_dir)]
    else:
        argv += ["--workers", str(sum(k for _, k in names))]
    argv += shlex.split(command.substitute(call.flags or "", values))
    argv.append(script)
    argv += command.build_args(call.line, values, env, cwd)[0] if call.line.args else []
    env = dict(env, TASKFLOW_RUN_ID=run_id)
    logs.append((time.time(), "STDOUT", f"[workflow] nested run {run_id} in {run_dir}: "
                                        f"taskflow status {run_id} --run-dir {run_dir}"))
    return process.run(argv, cwd, env, {}, logs, log_base, call.fail_by_exit_value)


def _cluster_file(hosts: Sequence[str], names: list[Any], base: str) -> str:
    lines = ["nodes:"]
    for i, (host, (_, units)) in enumerate(zip(hosts, names)):
        if i == 0:
            lines += ["  - name: local", "    local: true", f"    computing_units: {units}"]
        else:
            lines += [f"  - name: {host}", f"    host: {host}", f"    computing_units: {units}"]
    d = os.path.dirname(base) if base else tempfile.gettempdir()
    os.makedirs(d, exist_ok=True)
    fd, path = tempfile.mkstemp(prefix="workflow-", suffix=".yaml", dir=d)
    with os.fdopen(fd, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path
