"""``taskflow run --compat pycompss [runcompss options] app.py [args]``: the runcompss launcher.

What a PyCOMPSs user and their test scripts expect from ``runcompss``:

- the application runs as ``__main__`` in the globals runcompss's launcher
  gives it (``sys``, ``os``, ``logging``, ``traceback``, ``compss_start``,
  ``compss_stop``, ``app_path``), with ``pycompss.*`` resolving to taskflow;
- ``----------------- Executing app.py --------------------------`` before it
  and a closing line of 60 dashes after every run, also a failed one;
  ``Error running application`` when the application raised;
- runcompss's options, before the application: ``-g``/``--graph[=bool]``,
  ``-t``/``--tracing[=level]``, ``-m``/``--monitoring[=ms]``, ``-d``/``--debug``,
  ``--log_level=off|info|debug|trace``, ``--summary``, ``--project=FILE``,
  ``--resources=FILE`` (:mod:`.xmlconfig`), ``--wall_clock_limit=S``,
  ``--env_script=FILE`` (sourced with bash; its exported variables reach the
  application and every node), ``--pythonpath=DIRS``, ``--lang=python``; the
  Java runtime's own tuning options (``--jvm_*``, ``--comm``, ``--scheduler``,
  ...) are accepted and have no effect; storage options are refused;
- task output stays in the tasks' logs (``taskflow logs``), as runcompss keeps
  it in the job files, instead of the application's stdout.

taskflow's own ``run`` options (``--workers``, ``--cluster``, ``--run-dir``...)
still apply and may be mixed in.
"""
from __future__ import annotations

import logging
import os
import runpy
import subprocess
import sys
import time
import traceback
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..runtime.runtime import Runtime

import click

DASHES = "-" * 60
ERROR = "Error running application"
_LEVELS = {"off": "warning", "info": "info", "debug": "debug", "trace": "debug"}
_VALUE = ("project", "resources", "wall_clock_limit", "env_script", "log_level", "lang",
          "pythonpath", "graph", "tracing", "monitoring")
_FLAGS = ("summary", "debug")
_OPTIONAL_VALUE = ("graph", "tracing", "monitoring")      # -g / --graph / --graph=true
# The Java runtime's options: no meaning for taskflow (accepted so scripts run unchanged).
_IGNORED = ("comm", "conn", "scheduler", "scheduler_config", "master_name", "master_port",
            "jvm_master_opts", "jvm_workers_opts", "cpu_affinity", "gpu_affinity",
            "fpga_affinity", "task_count", "uuid", "base_log_dir", "specific_log_dir",
            "extrae_config_file", "trace_label", "appdir", "classpath", "library_path",
            "python_interpreter", "python_propagate_virtual_environment",
            "python_mpi_worker", "python_memory_profile", "persistent_worker_c",
            "enable_external_adaptation", "gen_coredump", "keep_workingdir", "streaming",
            "input_profile", "output_profile", "PyObject_serialize", "worker_in_master_cpus",
            "worker_in_master_memory", "checkpoint", "checkpoint_params", "checkpoint_folder",
            "external_debugger", "disable_nesting", "agents", "cpu_count",
            "provenance", "tracing_task_dependencies", "python_worker_cache")
_REFUSED = {"storage_conf": "persistent storage", "task_execution": "storage task execution",
            "storage_impl": "persistent storage"}


def wants_compat(args: list[str], takes_value: set[str]) -> bool:
    """``--compat pycompss`` among the options before the application."""
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--compat" and i + 1 < len(args) and args[i + 1] == "pycompss":
            return True
        if a == "--compat=pycompss":
            return True
        if a == "--" or not a.startswith("-"):
            return False
        i += 2 if a in takes_value else 1
    return False


def translate(args: list[str], takes_value: set[str]) -> tuple[list[str], dict[str, Any]]:
    """Split runcompss options off the arguments before the application.

    Returns (the arguments for taskflow's own ``run`` parser, the runcompss
    options as a dict). An unknown option is left for click, which names it.
    """
    out: list[str] = []
    opts: dict[str, Any] = {"ignored": []}
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--" or not a.startswith("-"):
            out += args[i:]
            break
        if a in takes_value:                      # taskflow's own option with its value
            out += args[i:i + 2]
            i += 2
            continue
        if a in ("-g", "-t", "-m", "-d") or (len(a) > 2 and a[0] == "-" and a[1] != "-"
                                              and set(a[1:]) <= set("gtmd")):
            for ch in a[1:]:
                opts[{"g": "graph", "t": "tracing", "m": "monitoring", "d": "debug"}[ch]] = True
            i += 1
            continue
        name, eq, value = a[2:].partition("=")
        key = name.replace("-", "_")
        if key in _FLAGS and not eq:
            opts[key] = True
        elif key in ("graph", "tracing", "monitoring") and not eq:
            opts[key] = True
        elif key in _VALUE and a.startswith("--") and (eq or key not in _OPTIONAL_VALUE):
            if not eq:                            # --project FILE (runcompss writes '=')
                if i + 1 >= len(args):
                    raise click.UsageError(f"{a} needs a value")
                value = args[i + 1]
                i += 1
            opts[key] = value
        elif key in _IGNORED and a.startswith("--") and name not in ("log-level",):
            opts["ignored"].append(a)
        elif key in _REFUSED and a.startswith("--"):
            raise click.UsageError(
                f"{a}: {_REFUSED[key]} is not supported by taskflow's PyCOMPSs layer "
                f"(docs/compat-pycompss.md)")
        else:
            out.append(a)
        i += 1
    return out, opts


def _truthy(v: Any) -> bool:
    if isinstance(v, bool):
        return v
    return str(v).strip().lower() not in ("false", "0", "no", "off", "")


def source_env(script: str) -> dict[str, str]:
    """The environment after ``source script`` in bash (no shell string is built: the
    path is bash's positional parameter)."""
    path = os.path.abspath(script)
    if not os.path.isfile(path):
        raise click.UsageError(f"--env_script: {path} does not exist")
    proc = subprocess.run(["bash", "-c", 'set -a; . "$1" >&2 || exit $?; env -0', "env_script",
                           path], capture_output=True, timeout=120)
    if proc.returncode != 0:
        raise click.UsageError(f"--env_script: sourcing {path} failed with exit code "
                               f"{proc.returncode}: {proc.stderr.decode(errors='replace')[-500:]}")
    env = {}
    for item in proc.stdout.split(b"\0"):
        k, sep, v = item.decode(errors="surrogateescape").partition("=")
        if sep and k and k not in ("_", "SHLVL", "PWD", "OLDPWD"):
            env[k] = v
    return env


def run_compat(p: dict[str, Any], meta: dict[str, Any]) -> None:
    """The body of ``taskflow run`` under ``--compat pycompss`` (``p``: run's parameters)."""
    from .. import diagnostics
    from ..errors import ClusterConfigError, UsageError
    from ..providers.cluster import cli_runtime_options
    from ..runtime.console import summary
    from ..runtime.failreport import end_of_run
    from ..runtime.runtime import Runtime
    from . import importhook, services, wallclock
    opts = meta.get("tf_runcompss") or {"ignored": []}
    script = p["script"]
    app = os.path.basename(script)
    lang = opts.get("lang")
    if lang and lang.lower() not in ("python", "py"):
        _fail(f"--lang={lang}: taskflow runs Python applications only")
    level = p["log_level"]
    if opts.get("debug"):
        level = "debug"
    if opts.get("log_level"):
        lv = opts["log_level"].lower()
        if lv not in _LEVELS:
            _fail(f"--log_level={opts['log_level']}: use off, info, debug or trace")
        level = _LEVELS[lv]
    diagnostics.setup(level)
    for ign in opts["ignored"]:
        logging.getLogger("taskflow.compat").info("%s: a COMPSs runtime option with no effect "
                                                  "here", ign)
    try:
        importhook.install(force=p["compat_force"])
    except importhook.RealPyCOMPSsInstalled as exc:
        _fail(str(exc))
    if opts.get("env_script"):
        os.environ.update(source_env(opts["env_script"]))
    rt_opts = cli_runtime_options(meta.get("tf_cluster"), p["placement"])
    if opts.get("project") or opts.get("resources"):
        if meta.get("tf_cluster") or meta.get("tf_slurm"):
            _fail("--project/--resources describe the nodes already; leave out --cluster "
                  "and --slurm")
        from .xmlconfig import load
        try:
            xml = load(opts.get("project"), opts.get("resources"))
            providers = xml.providers()
        except ClusterConfigError as exc:
            _fail(str(exc))
        services.set_services(xml.http)
        if providers:
            rt_opts["providers"] = providers
    if meta.get("tf_slurm"):
        from ..providers.cluster import slurm_cli_provider
        rt_opts["providers"] = [slurm_cli_provider(meta["tf_slurm"], meta["tf_slurm_nodes"],
                                                   meta.get("tf_slurm_opts") or ())]
    for d in (opts.get("pythonpath") or "").split(":"):
        if d:
            sys.path.insert(0, os.path.abspath(d))
    path = os.path.abspath(script)
    sys.path.insert(0, os.path.dirname(path))   # before the nodes start: they get sys.path
    from ..cli.resuming import run_to_resume
    resume = p["resume"]
    try:
        rt = Runtime(workers=p["workers"], nodes=p["nodes"], retries=p["retries"],
                     run_dir=p["run_dir"], echo_logs=False, crash_limit=p["crash_limit"],
                     resumable=p["resumable"], resume_check=p["resume_check"],
                     checkpoint=p.get("checkpoint"),
                     resume=run_to_resume(resume, script, p["run_dir"]) if resume is not None
                     else None, **rt_opts)
    except UsageError as exc:
        _fail(str(exc))
    print(f"----------------- Executing {app} --------------------------", flush=True)
    t0 = time.time()
    try:
        rt.start()
    except Exception as exc:  # noqa: BLE001 - report why, then the closing line
        click.echo(f"taskflow: could not start the runtime: {exc}", err=True)
        print(f"\n{ERROR}\n{DASHES}", flush=True)
        sys.exit(2)
    from ..cli.observe import run_finished, run_started
    mon = run_started(rt, 0 if opts.get("monitoring") and p["monitor"] is None else p["monitor"])
    if opts.get("wall_clock_limit"):
        try:
            wallclock.arm(float(opts["wall_clock_limit"]))
        except ValueError:
            _fail(f"--wall_clock_limit={opts['wall_clock_limit']}: give seconds")
    from .pycompss.api.api import compss_start, compss_stop
    sys.argv = [script, *p["script_args"]]
    status = 0
    interrupted = False
    try:
        runpy.run_path(path, run_name="__main__", init_globals={
            "sys": sys, "os": os, "logging": logging, "traceback": traceback,
            "compss_start": compss_start, "compss_stop": compss_stop, "app_path": path})
    except SystemExit as exc:
        code = exc.code
        status = code if isinstance(code, int) else (0 if code is None else 1)
        if code not in (None, 0) and not isinstance(code, int):
            print(code, file=sys.stderr)
    except wallclock.WallClockLimit as exc:
        interrupted = True
        status = 1
        click.echo(f"taskflow: {exc}: every task was cancelled and the application stopped",
                   err=True)
    except KeyboardInterrupt:
        interrupted = True
        status = 1
        click.echo("taskflow: interrupted; stopping without waiting for running tasks", err=True)
    except BaseException:  # noqa: BLE001 - the application's error, as runcompss shows it
        status = 1
        click.echo(traceback.format_exc().rstrip(), err=True)
    finally:
        wallclock.disarm()
    if interrupted:
        rt.cancel_all("the application was stopped")
    if not rt.stopped:
        rt.stop(wait=not interrupted)
    if opts.get("summary"):
        print(task_summary(rt), flush=True)
    # every failed task once (name, node, error, own frames), then the summary line
    click.echo(end_of_run(rt, None, summary(rt, time.time() - t0)), err=True)
    graph = p["graph_"] or _truthy(opts.get("graph", False))
    trace = p["trace_"] or _truthy(opts.get("tracing", False))
    run_finished(rt, graph, trace, mon)
    if rt.exit_code:
        status = rt.exit_code
    elif status == 0 and rt.failed:
        status = 1
    if status:
        print(f"\n{ERROR}", flush=True)
    print(DASHES, flush=True)
    sys.exit(status)


def task_summary(rt: Runtime) -> str:
    """``--summary``: per task name, how many ran and for how long (from the journal)."""
    from ..journal.reader import Journal
    lines = ["------------ Task summary ------------"]
    try:
        with Journal(rt.run_dir) as j:
            rows = j.tasks(limit=1_000_000)
    except Exception as exc:  # noqa: BLE001 - no journal: say so
        return "\n".join(lines + [f"(no journal: {exc})"])
    per: dict[str, list[float]] = {}
    states: dict[str, dict[str, int]] = {}
    for r in rows:
        st = states.setdefault(r["name"], {})
        st[r["state"]] = st.get(r["state"], 0) + 1
        if r.get("t_start") and r.get("t_end"):
            per.setdefault(r["name"], []).append(r["t_end"] - r["t_start"])
    for name in sorted(states):
        d = per.get(name, [])
        mean = sum(d) / len(d) if d else 0.0
        counts = ", ".join(f"{n} {s.lower()}" for s, n in sorted(states[name].items()))
        lines.append(f"{name}: {counts}; mean {mean:.3f} s, max {max(d, default=0):.3f} s")
    return "\n".join(lines)


def _fail(msg: str) -> None:
    click.echo(f"taskflow: {msg}", err=True)
    print(f"\n{ERROR}\n{DASHES}", flush=True)
    sys.exit(2)
