"""``taskflow run --plan wf.py ARGS``: what a run would do, without doing it.

The script runs for real on an inline runtime (:mod:`.inline`) whose node runs
nothing that leaves the process:

* a program task (``@binary``, ``@mpi``, ``@ompss``, a container) is never
  spawned: its invoker builds the command line as it would (the same code), the
  spawn is replaced by a record of that argv, and its file outputs are made
  empty in the plan's own directory;
* a Python task runs only when the script needs its value (``wait_on`` of one of
  its results or of a value computed from them): its producers run first, lazily.
  Every other Python task is recorded, not run. This is the rule the plan follows
  for "results that decide the graph": a script that branches on a value reads it.

Files are never put in place and the plan's run directory (a temporary one)
is removed at the end, so nothing is written outside it. With ``--resume``,
the earlier run's records say which calls would be reused, and the explain
machinery of the resume (:func:`.resuming_reasons`) why the others would run.

:func:`plan_script` is the entry (a function over a script run, for other
commands); :func:`format_plan` the text ``taskflow run --plan`` prints.
"""
from __future__ import annotations

import os
import runpy
import shlex
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Callable, NoReturn

from ..agent.executor import invokers
from ..agent.executor.invokers import process
from ..agent.executor.inputs import resolve_refs
from ..graph.spec import TaskSpec
from ..wire import messages as M
from ..wire import protocol as P
from ..wire.argpath import get_path
from .inline import InlineRuntime
from .node import HereNode, Runner, as_task

SHOWN_ARGV = 3          # command lines shown per task name


@dataclass
class NamePlan:
    """What the plan found for one task name."""

    calls: int = 0
    program: bool = False
    sent: int = 0                     # calls that would run (not reused by --resume)
    ran: int = 0                      # Python calls run because the script read their values
    argvs: list[list[str]] = field(default_factory=list)
    reads: list[str] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class Plan:
    """The plan of one script run."""

    script: str
    names: dict[str, NamePlan] = field(default_factory=dict)
    resumed: str | None = None        # the earlier run's directory (--resume)
    reasons: list[str] = field(default_factory=list)     # why calls would run again
    error: str | None = None          # what the script raised
    seconds: float = 0.0

    @property
    def calls(self) -> int:
        return sum(p.calls for p in self.names.values())


class _Lazy(dict):  # type: ignore[type-arg]
    """The node's values: one a deferred Python task makes is made when first read."""

    def __init__(self, runner: PlanRunner) -> None:
        super().__init__()
        self.runner = runner

    def get(self, did: int, default: Any = None) -> Any:
        if not dict.__contains__(self, did):
            self.runner.make(did)
        return dict.get(self, did, default)


class PlanRunner(Runner):
    """Stubs programs, defers Python tasks until their values are read (module docstring)."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.deferred: dict[int, M.TaskWire] = {}       # task id -> its message
        self.producer: dict[Any, int] = {}              # data id or file path -> task id
        self.versions: dict[str, str] = {}              # version path -> the user's path
        self.node: HereNode | None = None

    def attach(self, node: HereNode) -> None:
        self.node = node
        node.store = _Lazy(self)

    def name_of(self, msg: M.TaskWire) -> NamePlan:
        node = self.node
        assert node is not None
        return self.plan.names.setdefault(node.names.get(msg[1], "?"), NamePlan())

    def run(self, node: HereNode, msg: M.TaskWire) -> M.ResultWire:
        tmsg = M.TaskMsg(*msg)
        entry = self.name_of(msg)
        entry.sent += 1
        self._files(tmsg, entry)
        inv = tmsg.options.invocation if tmsg.options is not None else None
        if inv is not None and (inv.action is not None or inv.container is not None):
            entry.program = True
            return self._stub(node, tmsg, entry)
        self.deferred[tmsg.task_id] = msg
        for did in tmsg.outputs:
            self.producer[did] = tmsg.task_id
        for path, kind, _ in tmsg.inouts or ():
            if kind != M.OUT_OBJECT:
                self.producer[_out_path(tmsg, path)] = tmsg.task_id
        outs: list[M.Output] = []
        kinds: list[str] = [M.OUT_OBJECT] * tmsg.nout + [k for _, k, _ in tmsg.inouts or ()]
        for did, out_kind in zip(tmsg.outputs, kinds):
            outs.append(M.Held(did, 0) if out_kind == M.OUT_OBJECT else None)
        self._touch(tmsg)
        now = time.time()
        return (tmsg.task_id, M.OK, outs, None, (now, now))

    def make(self, did: int) -> None:
        """Run the deferred task that makes ``did`` (its own producers first)."""
        tid = self.producer.get(did)
        if tid is not None:
            self._run_deferred(tid)

    def _run_deferred(self, tid: int) -> None:
        msg = self.deferred.pop(tid, None)
        node = self.node
        if msg is None or node is None:
            return
        tmsg = M.TaskMsg(*msg)
        for _, kind, payload in tmsg.refs or ():    # files a deferred task writes, first
            for path in _read_paths(kind, payload):
                if path in self.producer:
                    self._run_deferred(self.producer[path])
        res = as_task(Runner.run, self, node, msg)
        _, status, outputs, error, _ = res
        if status != M.OK or outputs is None:
            raise PlanTaskFailed(f"task {_name(node, msg)} was run because "
                                 f"the script reads its value, and failed: "
                                 f"{error.type_name if error else '?'}: "
                                 f"{error.message if error else ''}")
        self.name_of(msg).ran += 1
        for d, out in zip(tmsg.outputs, outputs):
            if out is not None and type(out) is not M.Held:
                dict.__setitem__(node.store, d, out)

    def _stub(self, node: HereNode, tmsg: M.TaskMsg, entry: NamePlan) -> M.ResultWire:
        """A program task: its command line, built as its invoker builds it; no spawn."""
        func = node.funcs[tmsg.digest]
        args = list(tmsg.argv) if tmsg.refs else tmsg.argv
        kw = dict(tmsg.kwargs) if tmsg.kwargs else {}
        seen: list[list[str]] = []

        def record(argv: list[str], *rest: Any, **kws: Any) -> int:
            seen.append([self._user_paths(str(a)) for a in argv])
            return 0

        real = process.run
        process.run = record
        now = time.time()
        try:
            if tmsg.refs:
                resolve_refs(args, kw, tmsg.refs, node.store)
            assert tmsg.options is not None and tmsg.options.invocation is not None
            invokers.run(tmsg.options.invocation, func, args, kw, [], tmsg.task_id)
        except PlanTaskFailed:
            raise
        except Exception as exc:  # noqa: BLE001 - the plan says it, the run goes on
            if len(entry.notes) < SHOWN_ARGV:
                entry.notes.append(f"{type(exc).__name__}: {exc}")
        finally:
            process.run = real
        if len(entry.argvs) < SHOWN_ARGV:
            entry.argvs.extend(seen[:SHOWN_ARGV - len(entry.argvs)])
        self._touch(tmsg)
        outs: list[M.Output] = [P_ZERO] * tmsg.nout
        for path, kind, _ in tmsg.inouts or ():
            outs.append(_dump(get_path(args, kw, path)) if kind == M.OUT_OBJECT else None)
        return (tmsg.task_id, M.OK, outs, None, (now, time.time()))

    def _user_paths(self, arg: str) -> str:
        """An argument with the run's file versions written as the script's paths."""
        if "/data/" in arg:         # (the run's store: <run dir>/data/<folder>/<name>)
            for version, user in self.versions.items():
                if version in arg:
                    arg = arg.replace(version, user)
        return arg

    def _touch(self, tmsg: M.TaskMsg) -> None:
        """A stand-in for each file or directory the task writes (in the plan's directory)."""
        for path, kind, _ in tmsg.inouts or ():
            if kind == M.OUT_OBJECT:
                continue
            p = _out_path(tmsg, path)
            if os.path.exists(p):
                continue
            if kind == M.OUT_DIR:
                os.makedirs(p, exist_ok=True)
            else:
                os.makedirs(os.path.dirname(p), exist_ok=True)
                open(p, "wb").close()

    def _files(self, tmsg: M.TaskMsg, entry: NamePlan) -> None:
        for _, kind, payload in tmsg.refs or ():
            user = self.versions.get    # (version path -> the script's path)
            if kind == M.REF_FILE:
                _add(entry.reads, user(payload) or payload)
            elif kind in (M.REF_FILE_OUT, M.REF_DIR_OUT):
                _add(entry.writes, user(payload) or payload)
            elif kind in (M.REF_FILE_INOUT, M.REF_DIR_INOUT):
                _add(entry.reads, user(payload[1]) or payload[1])
                _add(entry.writes, user(payload[1]) or payload[1])

    def fetch(self, node: HereNode, did: int) -> M.Payload | None:
        return node.store.get(did)

    def drop(self, node: HereNode, dids: list[int]) -> None:
        """Kept: a deferred task may still read them (a plan's values are the script's)."""


class PlanTaskFailed(RuntimeError):
    """A Python task the plan had to run (the script reads its value) failed."""


def _dump(value: Any) -> bytes:
    import pickle
    return pickle.dumps(value, P.PROTOCOL)


P_ZERO = _dump(0)                       # a stubbed program's exit code


def _name(node: HereNode, msg: M.TaskWire) -> str:
    return node.names.get(msg[1], "?")


def _out_path(tmsg: M.TaskMsg, path: M.ArgPath) -> str:
    """Where a task writes a file output: its ref's version path (the argument)."""
    for rpath, kind, payload in tmsg.refs or ():
        if tuple(rpath) == tuple(path):
            return str(payload[1] if kind in (M.REF_FILE_INOUT, M.REF_DIR_INOUT) else payload)
    return str(get_path(list(tmsg.argv or ()), dict(tmsg.kwargs or {}), path))


def _read_paths(kind: str, payload: Any) -> list[str]:
    if kind == M.REF_FILE:
        return [payload]
    if kind in (M.REF_FILE_INOUT, M.REF_DIR_INOUT):
        return [payload[0]]
    return []


def _add(paths: list[str], path: str) -> None:
    if path not in paths:
        paths.append(path)


class PlanRuntime(InlineRuntime):
    """The inline runtime of a plan: its node is a :class:`PlanRunner`'s; files stay put."""

    mode = "plan"

    def __init__(self, plan: Plan, **kwargs: Any) -> None:
        self.planner = PlanRunner(plan)
        super().__init__(runner=self.planner, journal=False, resumable=False, **kwargs)
        self.registry.puts_in_place = False
        versions = self.planner.versions
        new_version = self.registry.new_file_version

        def remembered(item: Any, fut: Any, private: bool = False) -> str:
            path = new_version(item, fut, private)
            versions[path] = item.path
            return path
        self.registry.new_file_version = remembered     # type: ignore[method-assign]

    def start(self) -> PlanRuntime:
        # a plan adopts nothing: no lock on the earlier run's agents, no look for them
        self.recovery.before_nodes = lambda providers: None     # type: ignore[method-assign]
        super().start()
        assert self.here.node is not None
        self.planner.attach(self.here.node)
        return self

    def submit(self, spec: TaskSpec, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        self.planner.plan.names.setdefault(spec.name, NamePlan()).calls += 1
        return super().submit(spec, args, kwargs)

    def put_in_place(self, idle: bool = False) -> None:
        """A plan writes nothing at the user's paths."""


def plan_script(script: str, args: tuple[str, ...] | list[str],
                runtime: dict[str, Any] | None = None) -> Plan:
    """Run ``script`` with ``args`` as a plan (module docstring) and return what it found.

    ``runtime``: ``Runtime`` keywords (``workers``, ``resume`` and ``resume_check`` are
    used; nodes and providers are not: a plan runs here)."""
    def body() -> None:
        saved = sys.argv
        sys.argv = [script, *args]
        try:
            runpy.run_path(script, run_name="__main__")
        finally:
            sys.argv = saved
    return plan_calls(script, body, runtime, os.path.dirname(os.path.abspath(script)))


def plan_calls(label: str, body: Callable[[], None], runtime: dict[str, Any] | None = None,
               path: str | None = None) -> Plan:
    """:func:`plan_script` of whatever ``body`` calls (``taskflow map --plan``: its items);
    ``label`` names it in the plan, ``path`` goes first on ``sys.path`` meanwhile."""
    opts = {k: v for k, v in (runtime or {}).items()
            if k in ("workers", "resume", "resume_check", "retries")}
    plan = Plan(label)
    root = tempfile.mkdtemp(prefix="taskflow-plan-")
    t0 = time.time()
    saved_path = list(sys.path)
    rt = PlanRuntime(plan, run_dir=root, **opts)
    try:
        if path is not None:
            sys.path.insert(0, path)
        rt.start()
        try:
            body()
        except SystemExit as exc:
            if exc.code not in (None, 0):
                plan.error = f"the script exited with {exc.code}"
        except Exception as exc:  # noqa: BLE001 - the plan says what the script raised
            plan.error = f"the script raised {type(exc).__name__}: {exc}"
        rt.stop()
        resumer = rt.recovery.resumer
        if resumer is not None:
            plan.resumed = resumer.store.run_dir
            plan.reasons = resuming_reasons(resumer)
    finally:
        sys.path[:] = saved_path
        if not rt.stopped:
            rt.stop(wait=False)
        shutil.rmtree(root, ignore_errors=True)
    plan.seconds = time.time() - t0
    return plan


def resuming_reasons(resumer: Any) -> list[str]:
    """Why calls would run again: the resume's own explain lines (the one call to them)."""
    lines: list[str] = resumer.lines(would=True)
    return lines


def format_plan(plan: Plan) -> str:
    """The plan as ``taskflow run --plan`` prints it."""
    lines = [f"taskflow plan of {plan.script}: {plan.calls} call(s) of {len(plan.names)} "
             f"task(s); no program started, nothing written ({plan.seconds:.2f} s)"]
    if plan.resumed is not None:
        sent = sum(p.sent for p in plan.names.values())
        lines.append(f"  resuming {os.path.basename(plan.resumed)}: {plan.calls - sent} of "
                     f"{plan.calls} call(s) would be reused, {sent} would run")
        lines += [f"    {r}" for r in plan.reasons]
    for name, p in plan.names.items():
        kind = "program" if p.program else "python"
        extra = ""
        if plan.resumed is not None:
            extra = f", {p.calls - p.sent} reused"
        if not p.program:
            extra += f", {p.ran} run to read their values" if p.ran else ", not run"
        lines.append(f"  {name}: {p.calls} call(s) [{kind}{extra}]")
        for argv in p.argvs:
            lines.append(f"    $ {shlex.join(argv)}")
        if p.reads:
            lines.append(f"    reads:  {_few(p.reads)}")
        if p.writes:
            lines.append(f"    writes: {_few(p.writes)}")
        for note in p.notes:
            lines.append(f"    note: {note}")
    if plan.error:
        lines.append(f"  the script stopped: {plan.error}")
    return "\n".join(lines)


def _few(paths: list[str], n: int = 4) -> str:
    shown = " ".join(paths[:n])
    return shown + (f" (+{len(paths) - n} more)" if len(paths) > n else "")


def plan_cli(script: str, args: tuple[str, ...], runtime: dict[str, Any]) -> NoReturn:
    """``taskflow run --plan``: print the plan, exit 1 if the script stopped with an error."""
    plan = plan_script(script, args, runtime)
    print(format_plan(plan))
    sys.exit(1 if plan.error else 0)
