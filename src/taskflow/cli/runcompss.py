"""``taskflow run --compat pycompss [runcompss options] app.py [args]``: the runcompss launcher.

runcompss's options and its ways (:class:`Runcompss`) on the one run driver
of ``taskflow run`` (:mod:`.driver`), so interrupts, ``--grace`` and exit
statuses are those of ``taskflow run``. The PyCOMPSs layer it runs the
application with is :mod:`taskflow.compat`.

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
  ``--resources=FILE`` (:mod:`taskflow.compat.xmlconfig`), ``--wall_clock_limit=S``
  (:mod:`taskflow.compat.wall_clock_limit`),
  ``--env_script=FILE`` (sourced with bash as runcompss does, without ``set -e``: its
  variables reach the application and every node; an error is printed and the run goes
  on), ``--pythonpath=DIRS``, ``--lang=python``, ``--io_executors=N``,
  ``--agents[=plain|tree]`` (as PyCOMPSs's agents deployment: a task called inside a
  running task is submitted as its child task instead of running inline in it, which is
  runcompss's way), ``--walltime_margin=S`` (in a Slurm job: stop gracefully S s before its end,
  :mod:`taskflow.compat.slurm_job_end`), ``-p``/``--provenance[=YAML]`` (a Workflow
  Run Crate of the run in ``COMPSs_RO-Crate_<run id>/`` here, as ``taskflow run
  --crate`` makes it; PyCOMPSs's ``ro-crate-info.yaml`` is not read); the
  Java runtime's own tuning options (``--jvm_*``, ``--comm``, ``--scheduler``,
  ...) are accepted and have no effect; storage options are refused;
- task output stays in the tasks' logs (``taskflow logs``), as runcompss keeps
  it in the job files, instead of the application's stdout.

taskflow's own ``run`` options (``--workers``, ``--cluster``, ``--run-dir``,
``--grace``...) still apply and may be mixed in. Ctrl-C and SIGTERM stop the
run as they stop ``taskflow run`` (running tasks get ``--grace`` seconds, the
exit status is 130 or 143), and the closing lines follow.
"""
from __future__ import annotations

import logging
import os
import runpy
import subprocess
import sys
import traceback
from typing import TYPE_CHECKING, Any, NoReturn

import click

from ..compat import importhook, services, slurm_job_end, wall_clock_limit, xmlconfig
from ..errors import ClusterConfigError
from .driver import Launcher, RunPlan, ScriptEnd

if TYPE_CHECKING:
    from ..console.view import RunView

DASHES = "-" * 60
# PyCOMPSs's own default for a failed task (on_failure="RETRY"): COMPSs runs it again once on
# the same worker, then once on another (taskflow's own default is none: runtime.state)
RETRIES = 2
ERROR = "Error running application"
_LEVELS = {"off": "warning", "info": "info", "debug": "debug", "trace": "debug"}
_VALUE = ("project", "resources", "wall_clock_limit", "env_script", "log_level", "lang",
          "pythonpath", "graph", "tracing", "monitoring", "io_executors", "walltime_margin")
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
            "external_debugger", "disable_nesting", "cpu_count",
            "tracing_task_dependencies", "python_worker_cache")
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
        if a in ("-g", "-t", "-m", "-d", "-p") or (len(a) > 2 and a[0] == "-" and a[1] != "-"
                                                    and set(a[1:]) <= set("gtmdp")):
            for ch in a[1:]:
                opts[{"g": "graph", "t": "tracing", "m": "monitoring", "d": "debug",
                      "p": "provenance"}[ch]] = True
            i += 1
            continue
        name, eq, value = a[2:].partition("=")
        key = name.replace("-", "_")
        if key in _FLAGS and not eq:
            opts[key] = True
        elif key in ("graph", "tracing", "monitoring") and not eq:
            opts[key] = True
        elif key == "agents" and a.startswith("--"):
            if value not in ("", "plain", "tree"):
                raise click.UsageError(f"{a}: the agents' hierarchy is plain or tree (both run "
                                       f"the same under taskflow: docs/compat-pycompss.md)")
            opts[key] = value or "plain"
        elif key == "provenance" and a.startswith("--"):
            opts[key] = value or True     # (=ro-crate-info.yaml: PyCOMPSs's authors' file)
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
    """The environment after ``source script`` in bash, as runcompss sources it: without
    ``set -e``, so a missing file or a failing line prints the shell's error on stderr and
    the application runs anyway, with what the script did export (no shell string is
    built: the path is bash's positional parameter)."""
    path = os.path.abspath(script)
    proc = subprocess.run(["bash", "-c", 'set -a; . "$1"; env -0', "env_script", path],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    err = proc.stderr.decode(errors="replace")
    if err:
        sys.stderr.write(err if err.endswith("\n") else err + "\n")
    env = {}
    for item in proc.stdout.split(b"\0"):
        k, sep, v = item.decode(errors="surrogateescape").partition("=")
        if sep and k and k not in ("_", "SHLVL", "PWD", "OLDPWD"):
            env[k] = v
    return env


def launch_directory() -> None:
    """``$PWD`` is the launch directory, as runcompss's bash sets it (whatever ``PWD``
    the process that started this one left in the environment): decorator strings
    expand it on the master (runtime.calltime)."""
    here = os.getcwd()
    pwd = os.environ.get("PWD")
    try:
        same = pwd is not None and os.path.samefile(pwd, here)
    except OSError:
        same = False
    if not same:
        os.environ["PWD"] = here


class Runcompss(Launcher):
    """runcompss's launcher on the one run driver (:func:`.driver.drive`).

    ``opts``: the runcompss options :func:`translate` took off the command line.
    """

    resume_options = ("--compat", "pycompss")

    def __init__(self, opts: dict[str, Any] | None, script: str, force: bool) -> None:
        self.opts = opts or {"ignored": []}
        self.path = os.path.abspath(script)
        self.app = os.path.basename(script)
        self.force = force              # --compat-force: shadow a real PyCOMPSs

    # -- the options --------------------------------------------------------------------
    def log_level(self, level: str) -> str:
        opts = self.opts
        lang = opts.get("lang")
        if lang and lang.lower() not in ("python", "py"):
            _fail(f"--lang={lang}: taskflow runs Python applications only")
        if opts.get("debug"):
            level = "debug"
        if opts.get("log_level"):
            lv = opts["log_level"].lower()
            if lv not in _LEVELS:
                _fail(f"--log_level={opts['log_level']}: use off, info, debug or trace")
            level = _LEVELS[lv]
        return level

    def prepare(self) -> None:
        for ign in self.opts["ignored"]:
            logging.getLogger("taskflow.compat").info("%s: a COMPSs runtime option with no "
                                                      "effect here", ign)
        try:
            importhook.install(force=self.force)
        except importhook.RealPyCOMPSsInstalled as exc:
            _fail(str(exc))
        launch_directory()
        if self.opts.get("env_script"):
            os.environ.update(source_env(self.opts["env_script"]))

    def nodes(self, rt_opts: dict[str, Any], other_nodes: bool) -> None:
        """``--project`` / ``--resources``: the nodes of COMPSs's XML files."""
        project, resources = self.opts.get("project"), self.opts.get("resources")
        if not (project or resources):
            return
        if other_nodes:
            _fail("--project/--resources describe the nodes already; leave out --cluster "
                  "and --slurm")
        try:
            xml = xmlconfig.load(project, resources)
            providers = xml.providers()
        except ClusterConfigError as exc:
            _fail(str(exc))
        services.set_services(xml.http)
        if providers:
            rt_opts["providers"] = providers

    def adjust(self, plan: RunPlan) -> None:
        opts = self.opts
        for d in (opts.get("pythonpath") or "").split(":"):
            if d:
                sys.path.insert(0, os.path.abspath(d))
        plan.runtime["echo_logs"] = False       # task output stays in the tasks' logs
        plan.runtime["compss_env"] = True       # every task sees COMPSS_NUM_THREADS & co.
        plan.runtime["caught_failures_fail"] = True     # a failed task fails the app, caught
        if opts.get("agents"):                  # PyCOMPSs's agents: a call in a task is
            plan.runtime["compss_nesting"] = True       # submitted (a child task)
        if opts.get("io_executors") is not None:
            try:
                n = int(opts["io_executors"])
                if n < 0:
                    raise ValueError
            except ValueError:
                _fail(f"--io_executors={opts['io_executors']}: give the number of I/O "
                      f"executors per node (an int >= 0)")
            plan.runtime["io_executors"] = n
        plan.runtime.setdefault("retries", RETRIES)     # (--retries N: N)
        if plan.progress is None:               # runcompss shows none; --progress asks
            plan.progress = False
        if opts.get("monitoring") and plan.monitor is None:
            plan.monitor = 0
        plan.graph = plan.graph or _truthy(opts.get("graph", False))
        plan.trace = plan.trace or _truthy(opts.get("tracing", False))
        if opts.get("provenance") and plan.crate is None:     # where PyCOMPSs puts its crate
            plan.crate = os.path.abspath("COMPSs_RO-Crate_{run_id}")

    def refuse(self, message: str) -> NoReturn:
        _fail(message)

    # -- the run ------------------------------------------------------------------------
    def starting(self) -> None:
        print(f"----------------- Executing {self.app} --------------------------", flush=True)

    def start_failed(self) -> None:
        print(f"\n{ERROR}\n{DASHES}", flush=True)

    def started(self, rt: RunView) -> None:
        limit = self.opts.get("wall_clock_limit")
        if limit:
            try:
                wall_clock_limit.arm(float(limit))
            except ValueError:
                _fail(f"--wall_clock_limit={limit}: give seconds")
        margin = self.opts.get("walltime_margin", slurm_job_end.DEFAULT_MARGIN)
        try:
            slurm_job_end.arm(float(margin))       # inside a Slurm job: stop before its end
        except ValueError:
            _fail(f"--walltime_margin={margin}: give seconds")

    def run_script(self, script: str) -> None:
        from ..compat.pycompss.api.api import compss_start, compss_stop
        try:
            runpy.run_path(self.path, run_name="__main__", init_globals={
                "sys": sys, "os": os, "logging": logging, "traceback": traceback,
                "compss_start": compss_start, "compss_stop": compss_stop,
                "app_path": self.path})
        except KeyboardInterrupt:
            if wall_clock_limit.reached.is_set():  # the limit, armed from another thread than this
                raise wall_clock_limit.limit_reached() from None
            raise
        finally:
            wall_clock_limit.disarm()

    def script_ended(self, exc: BaseException) -> ScriptEnd:
        if isinstance(exc, SystemExit):         # the application's own status
            code = exc.code
            if code not in (None, 0) and not isinstance(code, int):
                print(code, file=sys.stderr)
            from ..runtime.verdict import exit_status
            return ScriptEnd(exit_status(exc))
        if isinstance(exc, wall_clock_limit.WallClockLimit):
            click.echo(f"taskflow: {exc}: every task was cancelled and the application "
                       f"stopped", err=True)
            return ScriptEnd(1, cancel="the application was stopped")
        # the application's error, as runcompss shows it
        click.echo(traceback.format_exc().rstrip(), err=True)
        return ScriptEnd(1)

    def ending(self, rt: RunView) -> None:
        if self.opts.get("summary"):
            print(task_summary(rt.run_dir), flush=True)

    def closing(self, status: int) -> None:
        if status:
            print(f"\n{ERROR}", flush=True)
        print(DASHES, flush=True)


def task_summary(run_dir: str) -> str:
    """``--summary``: per task name, how many ran and for how long (from the journal)."""
    from ..journal.reader import Journal
    lines = ["------------ Task summary ------------"]
    try:
        with Journal(run_dir) as j:
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


def _fail(msg: str) -> NoReturn:
    click.echo(f"taskflow: {msg}", err=True)
    print(f"\n{ERROR}\n{DASHES}", flush=True)
    sys.exit(2)
