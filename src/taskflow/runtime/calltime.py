"""One call of a task resolved into what its node runs: computing units, memory, options.

A task whose declaration has call-time parts (``spec.call_time``: an
expression or ``$ENV`` in ``@constraint``, an external program, a container,
GPUs) goes through :meth:`CallTimes.prepare` when it is called; every other
call takes the declaration as it is (the hot path). For one call this

- evaluates ``computing_units`` / ``memory_size`` (:mod:`taskflow.graph.expr`);
- expands ``$VAR`` in the program's declared values and evaluates
  ``processes`` / ``computing_nodes`` expressions (the declaration's own
  :meth:`~taskflow.graph.decl.ProgramDecl.for_call`);
- checks the binary exists (where the nodes share the master's files), the
  stream parameters are paths and the cluster can ever give the processes,
  naming the task and the fix (:class:`~taskflow.errors.UsageError`);
- builds the typed :class:`~taskflow.wire.invocation.Options` the node reads.

A program whose options cannot change from call to call (no ``$VAR``, no
expression, no container, one node) gets one :class:`Options` shared by all
its calls (pickled once per frame, no work per call but the checks).
"""
from __future__ import annotations

import os
import re
import shutil
import time
import weakref
from typing import TYPE_CHECKING, Any

from ..errors import UsageError
from ..graph.expr import as_int, bind, expand_env, number
from ..wire.invocation import (CommandLine, Container, Gang, HookProgram, Hooks, Http,
                               Invocation, Limits, MpmdProgram, Mpi, Options, Program, Workflow)
from ..wire.template import ShellSyntax, UnsetVariable, template_words
from .scheduling import gang, resources

if TYPE_CHECKING:
    from ..graph.decl import Counts, ProgramDecl
    from ..graph.spec import TaskSpec
    from ..providers.handle import NodeHandle


class CallTimes:
    """The call-time resolution of each spec a runtime saw (made at its first call)."""

    def __init__(self) -> None:
        self._of: weakref.WeakKeyDictionary[TaskSpec, CallTime] = weakref.WeakKeyDictionary()

    def prepare(self, nodes: list[NodeHandle], run_dir: str, run_id: str, spec: TaskSpec,
                args: tuple[Any, ...], kwargs: dict[str, Any]
                ) -> tuple[int, float, Options | None]:
        """(computing units, memory GB, options) of one call on the run ``run_id`` (its
        ``nodes``, its directory ``run_dir``); raises UsageError."""
        ct = self._of.get(spec)
        if ct is None:
            ct = self._of[spec] = CallTime(spec)
        return ct.prepare(nodes, run_dir, run_id, args, kwargs)


class CallTime:
    """What one spec decides per call (see the module docstring)."""

    __slots__ = ("spec", "where", "ext", "needs_bind", "line", "static", "shared", "bash",
                 "checked")

    def __init__(self, spec: TaskSpec) -> None:
        self.spec = spec
        self.where = f"@{spec.invoker} on {spec.name}" if spec.invoker != "python" else \
            f"@constraint on {spec.name}"
        self.ext = spec.invoker != "python" or spec.container is not None
        program = spec.program
        self.needs_bind = bool(spec.cu_expr.names or spec.mem_expr.names) or (
            self.ext and program is not None and program.reads_arguments)
        self.line: CommandLine | None = None
        # PyCOMPSs's command line (wire.template)
        self.bash = program is not None and program.bash_words
        if program is not None:
            self.line = line = program.line
            if self.bash and isinstance(line.args, str) and "$" not in line.args:
                self.line = line._replace(words=bash_words(line.args, self.where))
        # nothing in the call's options depends on the call or on the environment at call
        # time (no container: its image and options are expanded per call)
        self.static = program is not None and spec.container is None \
            and not program.varies_per_call
        # the options all calls share when static: (cus, mem, gpus) they were made for
        self.shared: tuple[tuple[int, float, int], Options] | None = None
        # the nodes (list, length) and the call's (units, memory) its named resources were
        # last found possible for (resources.check: once, not per call)
        self.checked: tuple[int, int, int, float] | None = None

    def prepare(self, nodes: list[NodeHandle], run_dir: str, run_id: str,
                args: tuple[Any, ...], kwargs: dict[str, Any]
                ) -> tuple[int, float, Options | None]:
        spec = self.spec
        where = f"@constraint on {spec.name}"
        bound = bind(spec, args, kwargs) if self.needs_bind else None
        cus = as_int(spec.cu_expr.value(bound), f"{where}: computing_units",
                     0 if spec.io else 1)
        m = spec.mem_expr.value(bound)
        if isinstance(m, str):
            m = number(m)
        if not isinstance(m, (int, float)) or isinstance(m, bool) or m < 0:
            raise UsageError(f"{where}: memory_size (GB) must be a number >= 0, got {m!r}.")
        mem = float(m)
        static = spec.options
        limits = static.limits if static is not None else None
        if spec.memory_limit and m:         # this call's memory_size (agent.executor.limits)
            limits = Limits(limits.time_out if limits is not None else None, mem)
        if not (self.ext or spec.gpus or spec.need):
            inv = static.invocation if static is not None else None
            if inv is not None and inv.hooks is not None:
                inv = inv._replace(hooks=resolved_hooks(inv.hooks, spec.name))
            return cus, mem, (Options(limits, inv) if limits or inv else None)
        opts = self.options(nodes, run_dir, run_id, bound, cus, mem, limits)
        inv = opts.invocation
        if inv is not None and inv.gang is not None:
            return 1, mem, opts             # the scheduler decides the real share
        return cus, mem, opts

    def options(self, nodes: list[NodeHandle], run_dir: str, run_id: str,
                bound: dict[str, Any] | None, cus: int, mem: float,
                limits: Limits | None) -> Options:
        """The options of an external program, a container or a GPU task for one call."""
        spec = self.spec
        where = self.where
        gpus = spec.gpus
        shared = self.shared
        if shared is not None and shared[0] == (cus, mem, gpus):
            opts = shared[1]
            known = opts.invocation.action if opts.invocation is not None else None
            if isinstance(known, (Program, Mpi)):
                _check_programs(known, where, nodes)
            _check_streams(self.line, bound, where)
            return opts
        action: Program | Mpi | Http | Workflow | None = None
        log_dir = None
        from ..graph.decl import RUNNERS, BinaryDecl, Counts, MpiDecl   # (program tasks only)
        decl: ProgramDecl | None = None     # the program's declaration for this call
        counts = Counts()
        program = spec.program
        if program is not None:
            decl, counts = program.for_call(bound, where)
            if isinstance(decl, MpiDecl) and decl.runner not in RUNNERS:
                raise UsageError(f"{where}: unknown runner {decl.runner!r}; use one of "
                                 f"{', '.join(RUNNERS)}.")
            if isinstance(decl, (BinaryDecl, MpiDecl)):
                if decl.binary and spec.container is None:   # in a container: the image's
                    _check_binary(decl.binary, decl.working_dir, where, nodes)
            if isinstance(decl, MpiDecl):
                for prog in decl.programs:
                    _check_binary(prog.binary, decl.working_dir, where, nodes)
                # PyCOMPSs: one rank per computing unit (an @IO task's: the units declared,
                # though it holds none; each rank takes an I/O executor)
                units = cus if not spec.io or spec.io_units is None else \
                    as_int(spec.io_units, f"{where}: computing_units")
                if decl.scale_by_cu and units > 1:
                    counts = counts._replace(processes=(counts.processes or 1) * units)
                    cus = min(cus, 1)
            _check_streams(self.line, bound, where)
            assert self.line is not None
            action = _action(decl, counts, self.line, run_dir, run_id, self.bash, where)
            log_dir = os.path.join(run_dir, "jobs")
        container = None
        if spec.container is not None:
            container = container_options(spec, cus, mem)
            log_dir = os.path.join(run_dir, "jobs")
        req = gang_request(decl, counts, cus, gpus, where) if decl is not None \
            else Gang(1, 1, cus, gpus)
        if spec.need is not None:     # named resources, variants: on one node
            req = Gang(1, 1, cus)
            key = (id(nodes), len(nodes), cus, mem)
            if self.checked != key:
                resources.check(spec.need, cus, mem, nodes, spec.name)
                self.checked = key
        elif req is not None and gang.place(nodes, req, free=False) is None:
            raise UsageError(f"{where}: it needs {gang.describe(req)}, but the cluster "
                             f"({gang.describe_nodes(nodes)}) can never give that. Lower "
                             f"processes / computing_nodes / the @constraint, or add nodes "
                             f"(Runtime(workers=..., nodes=...)).")
        hooks = resolved_hooks(spec.hooks, spec.name) if spec.hooks is not None else None
        opts = Options(limits, Invocation(action, cus, log_dir, container, hooks, req))
        if req is None and self.static:
            self.shared = ((cus, mem, gpus), opts)   # nothing above depends on this call
        return opts


def _action(decl: ProgramDecl, counts: Counts, line: CommandLine, run_dir: str, run_id: str,
            bash: bool, where: str) -> Program | Mpi | Http | Workflow | None:
    """The typed record of what the node runs, from the declaration for a call
    (``line``: its command line as the spec's calls share it)."""
    fail = decl.fail_by_exit_value
    args = decl.line.args
    if bash:                                # PyCOMPSs: the template's words, $VAR expanded
        if line.words is None and isinstance(args, str):
            line = line._replace(words=bash_words(args, where))
    elif args != line.args:                 # $VAR expanded in the template for this call
        line = line._replace(args=args)
    from ..graph.decl import BinaryDecl, HttpDecl, MpiDecl, WorkflowDecl
    if isinstance(decl, BinaryDecl):        # @binary, @ompss
        return Program(decl.binary, line, decl.working_dir, fail, decl.kind == "ompss",
                       decl.keep_background)
    if isinstance(decl, MpiDecl):
        programs = tuple(MpmdProgram(p.binary, p.args, p.processes or 1,
                                     bash_words(p.args or "", f"{where}: programs[{i}]")
                                     if bash else None)
                         for i, p in enumerate(decl.programs))
        return Mpi(decl.runner, counts.processes or 1, decl.flags, decl.binary, line,
                   decl.working_dir, fail, programs, decl.rank_values, decl.layouts)
    if isinstance(decl, HttpDecl):
        return Http(decl.url or "", decl.request or "GET", decl.resource or "", decl.payload,
                    decl.payload_type, decl.produces, decl.updates, tuple(decl.file_params),
                    decl.timeout, line.order)
    if isinstance(decl, WorkflowDecl):      # a nested run: where it keeps its journal
        script = decl.script
        if "{{" not in script and not os.path.isabs(script):
            script = os.path.abspath(os.path.join(decl.working_dir or "", script))
        return Workflow(script, line, decl.working_dir, decl.flags, fail, decl.compat,
                        os.path.join(run_dir, "nested"), run_id)
    return None                         # multinode: the function itself


# (template, the values of the variables it names) -> its words: a template that names $VAR
# is read again only when one of them changed
_WORDS: dict[tuple[str, tuple[str | None, ...]], tuple[str, ...]] = {}
_VARREF = re.compile(r"\$\{?([A-Za-z_]\w*)")


def bash_words(text: str, where: str) -> tuple[str, ...]:
    """PyCOMPSs's ``args`` template read as runcompss's bash reads it, ``$VAR`` from this
    process's environment (:func:`taskflow.wire.template.template_words`)."""
    key = (text, tuple(os.environ.get(n) for n in _VARREF.findall(text)))
    words = _WORDS.get(key)
    if words is not None:
        return words
    try:
        words = template_words(text, os.environ)
    except UnsetVariable as exc:
        raise UsageError(f"{where}: ${exc.name} in {text!r} is not set in the environment when "
                         f"the task is called; export {exc.name}=..., or write \\$ (or put it "
                         f"in single quotes) for a literal $.") from None
    except ShellSyntax as exc:
        raise UsageError(f"{where}: {exc}.") from None
    if len(_WORDS) > 1024:
        _WORDS.clear()
    _WORDS[key] = words
    return words


def resolved_hooks(hooks: Hooks, name: str) -> Hooks:
    """PyCOMPSs's prolog / epilog for one call: ``$VAR`` expanded, args read as words."""
    pro, epi = hooks.prolog, hooks.epilog
    if not ((pro is not None and pro.bash and pro.words is None)
            or (epi is not None and epi.bash and epi.words is None)):
        return hooks
    return hooks._replace(prolog=_hook(pro, f"@prolog on {name}"),
                          epilog=_hook(epi, f"@epilog on {name}"))


def _hook(hook: HookProgram | None, where: str) -> HookProgram | None:
    if hook is None or not hook.bash or hook.words is not None:
        return hook
    return hook._replace(binary=expand_env(hook.binary, f"{where}: binary"),
                         working_dir=expand_env(hook.working_dir, f"{where}: working_dir")
                         if hook.working_dir else hook.working_dir,
                         words=bash_words(hook.args or "", where))


def _check_programs(action: Program | Mpi, where: str, nodes: list[NodeHandle]) -> None:
    if action.binary:
        _check_binary(action.binary, action.working_dir, where, nodes)
    if type(action) is Mpi:
        for prog in action.programs:
            _check_binary(prog.binary, action.working_dir, where, nodes)


# binary -> (PATH, where it was found, when it was last seen executable there): a PATH
# search is ~30 us of stat calls per call; a program found is looked at again after RECHECK s
# (the node checks again before it starts it, and says so if it is gone)
_FOUND: dict[str, tuple[str | None, str, float]] = {}
RECHECK = 1.0
_SHARED: list[Any] = [None, 0, True]     # the runtime's node list, its length, the answer


def _shared_fs(nodes: list[NodeHandle]) -> bool:
    """Every node sees the master's files (looked at again only when nodes join)."""
    if _SHARED[0] is not nodes or _SHARED[1] != len(nodes):
        _SHARED[:] = [nodes, len(nodes), all(getattr(n, "shared_fs", True) for n in nodes)]
    return bool(_SHARED[2])


def _check_binary(binary: str, working_dir: str | None, where: str, nodes: list[NodeHandle]) -> None:
    if not _shared_fs(nodes):
        return                      # only the node can tell; it reports the same way
    if working_dir and "{{" in working_dir and not os.path.isabs(binary):
        return                      # a working directory made of parameters: the node checks
    if os.sep in binary:
        path = binary if os.path.isabs(binary) else \
            os.path.abspath(os.path.join(working_dir or os.getcwd(), binary))
        if not os.path.exists(path):
            raise UsageError(f"{where}: binary {path} does not exist. Fix the path (relative "
                             f"paths are taken from working_dir, else the current directory).")
        if os.path.isdir(path) or not os.access(path, os.X_OK):
            raise UsageError(f"{where}: binary {path} is not executable; chmod +x it or fix "
                             f"the path.")
        return
    env_path = os.environ.get("PATH")
    found = _FOUND.get(binary)
    if found is not None and found[0] == env_path:
        now = time.monotonic()
        if now - found[2] < RECHECK or os.access(found[1], os.X_OK):
            if now - found[2] >= RECHECK:
                _FOUND[binary] = (env_path, found[1], now)
            return              # found on the same PATH, executable when last looked at
    on_path = shutil.which(binary)
    if on_path is not None:
        if len(_FOUND) > 1024:
            _FOUND.clear()
        _FOUND[binary] = (env_path, on_path, time.monotonic())
        return
    raise UsageError(f"{where}: binary '{binary}' was not found on PATH "
                     f"({os.environ.get('PATH', '')}); give an absolute path or install it.")


def gang_request(decl: ProgramDecl, counts: Counts, cus: int, gpus: int, where: str
                 ) -> Gang | None:
    """How many slots on how many nodes (``counts``: the call's); None when an ordinary
    placement does."""
    from ..graph.decl import MpiDecl, MultinodeDecl
    kind = decl.kind
    if kind == "mpi":
        procs = counts.processes or 1
        ppn, nnodes = counts.processes_per_node, counts.computing_nodes
        if ppn and nnodes and ppn * nnodes != procs:
            raise UsageError(f"{where}: processes={procs} is not processes_per_node={ppn} x "
                             f"computing_nodes={nnodes}; give two of them.")
        if ppn and procs % ppn:
            raise UsageError(f"{where}: processes={procs} is not a multiple of "
                             f"processes_per_node={ppn}.")
        if nnodes and not ppn:
            if procs % nnodes:
                raise UsageError(f"{where}: processes={procs} does not split evenly over "
                                 f"computing_nodes={nnodes}; give processes_per_node.")
            ppn = procs // nnodes
        # PyCOMPSs: groups of ppn ranks, several on a node with room
        if ppn and isinstance(decl, MpiDecl) and decl.groups:
            return Gang(procs, None, cus, gpus, ppn)
        return Gang(procs, ppn, cus, gpus)
    nnodes = counts.computing_nodes or 1
    if kind in ("multinode", "ompss", "workflow") and (nnodes > 1 or kind == "multinode") \
            or gpus:
        # PyCOMPSs's @multinode asks for N groups of the units, several on a node with room
        groups = isinstance(decl, MultinodeDecl) and decl.groups
        return Gang(nnodes, None if groups else 1, cus, gpus)
    return None


def _check_streams(line: CommandLine | None, bound: dict[str, Any] | None, where: str) -> None:
    if bound is None or line is None:
        return
    for pname, p in line.params.items():
        if p.stream is not None and pname in bound \
                and not isinstance(bound[pname], (str, os.PathLike)):
            raise UsageError(f"{where}, parameter '{pname}': a {p.stream} stream parameter "
                             f"must be a file path (str or os.PathLike), not "
                             f"{type(bound[pname]).__name__}.")


def container_options(spec: TaskSpec, cus: int, mem: float) -> Container:
    """The @container values for one call: ``$VAR`` expanded, the limits."""
    where = f"@container on {spec.name}"
    c = spec.container
    assert c is not None
    image = expand_env(c.image, f"{where}: image")
    if not image.strip():
        raise UsageError(f"{where}: image is empty after expanding $VAR; set it.")
    return c._replace(image=image, options=tuple(expand_env(o, f"{where}: options")
                                                 for o in c.options), cpus=cus, memory_gb=mem)


def cannot_fit(spec: TaskSpec, cus: int, mem: float, max_cus: int, max_mem: float,
               nodes: list[NodeHandle]) -> None:
    """A call no node can take (``cus`` or ``mem`` above the largest node's, or no computing
    unit at all): raise naming the task and the fix; an ``@IO`` task with an I/O executor
    to go to passes."""
    if not cus and mem <= max_mem:        # an @IO task: an I/O executor's
        if any(n.io_slots for n in nodes if n.usable):
            return
        raise UsageError(
            f"task {spec.name} holds no computing unit (an @IO task), but no node of "
            f"this run has I/O executors: run with --io_executors=N (runcompss), or "
            f"Runtime(io_executors=N).")
    raise UsageError(
        f"task {spec.name} needs computing_units={cus}, memory_size={mem} GB, but the "
        f"largest node has {max_cus} computing units and {max_mem:.1f} GB: no "
        f"node can ever run it. Lower the @constraint or add a bigger node "
        f"(taskflow.start(workers=...) or the cluster file).")


def outlasts_every_node(spec: TaskSpec, opts: Options | None, longest: float,
                        nodes: list[NodeHandle]) -> None:
    """A call whose ``time_out`` is longer than any node of the run can ever give one task
    (every provider's jobs end: the Slurm walltime less the drain margin) would wait for
    ever, pilot after pilot: raise naming the task and the fix. A job given a later end
    (``scontrol update ... TimeLimit=``) counts."""
    limit = opts.time_out if opts is not None else None
    if not limit or limit <= longest:
        return
    now = time.time()
    for n in nodes:
        end = n.walltime_end
        if n.usable and end is not None and end - now - n.drain_margin >= limit:
            return
    raise UsageError(
        f"task {spec.name} has time_out={limit:g} s, but no node of this run can ever start "
        f"a task that long: its Slurm jobs give a task at most {longest:g} s (time_limit "
        f"less drain_margin), so it would wait for ever. Raise the jobs' time limit "
        f"(SlurmProvider(time_limit=...), `time:` in the cluster file, --slurm-opt time=MIN) "
        f"or lower drain_margin or the task's time_out.")
