"""What a decorated function declares, computed once for all of its calls.

:class:`TaskSpec` is the graph's description of a task function: its
parameters and their directions, outputs, priority, time-out, failure policy,
constraints and, for external programs, the invoker and its declaration
(:mod:`taskflow.graph.decl`).
``@task`` (:mod:`taskflow.api.task`) builds it; the builder, the scheduler,
the dispatcher and the journal read it. What a run derives from it (its calls'
durations, its pickle and digest, its keys) is the run's, not the spec's:
:mod:`taskflow.runtime.specruns` and :class:`taskflow.graph.keys.Keys`.
"""
from __future__ import annotations

import ast
import builtins
import inspect
import typing
import weakref
from typing import TYPE_CHECKING, Any, Callable

from ..errors import UsageError
from ..wire.invocation import Container, HookProgram, Hooks, Invocation, Limits, Options
from .expr import Expr, gpus_wanted
from .param import OBJECT_KIND, Param
from .resources import Variant, request

if TYPE_CHECKING:       # (loaded by the program decorators: its frozen dataclasses cost ~5 ms)
    from .decl import ProgramDecl

ON_FAILURE = ("RETRY", "FAIL", "IGNORE", "CANCEL_SUCCESSORS")
# what @constraint sets (TaskSpec.set_constraints puts them back if the new ones are refused)
_CONSTRAINTS = ("computing_units", "memory_size", "memory_limit", "processors", "resources",
                "variants")


# Every task function declared in this process, by ``module:qualname``: what a running
# task's call names (runtime.nesting calls the one it finds here).
DECLARED: "weakref.WeakValueDictionary[str, Any]" = weakref.WeakValueDictionary()


def declared_key(spec: "TaskSpec") -> str:
    """The name a running task's call gives a task function by (``module:qualname``)."""
    return f"{spec.module}:{spec.name}"


class TaskSpec:
    """What a decorated function declares; shared by all of its calls."""

    def __init__(self, func: Callable[..., Any], params: dict[str, Param], returns: Any,
                 priority: Any, time_out: Any, on_failure: str, retries: int | None) -> None:
        self.func = func
        self.name = getattr(func, "__qualname__", getattr(func, "__name__", "task"))
        self.module = getattr(func, "__module__", "")
        sig = inspect.signature(func)
        self.signature = sig
        self.names: list[str] = []
        self.defaults: dict[str, Any] = {}
        self.varargs: str | None = None
        self.varkw: str | None = None
        for p in sig.parameters.values():
            if p.kind is p.VAR_POSITIONAL:
                self.varargs = p.name
            elif p.kind is p.VAR_KEYWORD:
                self.varkw = p.name
            elif p.kind is not p.KEYWORD_ONLY:
                self.names.append(p.name)
            if p.default is not p.empty:
                self.defaults[p.name] = p.default
        self.kwonly = [p.name for p in sig.parameters.values() if p.kind is p.KEYWORD_ONLY]
        self.params = params
        self.index = {n: i for i, n in enumerate(self.names)}
        # (position or None, name, Param) of every parameter that is not a plain IN object
        self.special = [(self.index.get(n), n, p) for n, p in params.items()
                        if not (p.kind == OBJECT_KIND and p.direction == "IN")]
        self.nout, self.returns_tuple = _parse_returns(func, returns, self.name)
        # one output, no special parameter, no *args: calls with scalars take the fast path
        # (graph.builder)
        self.plain = not self.special and self.varargs is None and self.nout == 1
        self.priority = _parse_priority(priority, self.name)
        # Ready tasks are ordered by priority, then, within one priority, tasks that read
        # values go before tasks that read none (runtime.scheduling.readyqueue): Task.prio = rank + 1
        # for a reader, rank for a source.
        self.rank = 2 * self.priority
        self.time_out = _parse_timeout(time_out, self.name)
        if on_failure not in ON_FAILURE:
            import difflib
            close = difflib.get_close_matches(str(on_failure).upper(), ON_FAILURE, n=1)
            hint = f" Did you mean on_failure=\"{close[0]}\"?" if close else ""
            raise UsageError(f"@task on {self.name}: on_failure={on_failure!r} is not one of "
                             f"{', '.join(ON_FAILURE)}.{hint}")
        self.on_failure = on_failure
        if retries is not None and (not isinstance(retries, int) or retries < 0):
            raise UsageError(f"@task on {self.name}: retries must be an int >= 0, not {retries!r}.")
        self.retries = retries
        self.computing_units = 1
        self.memory_size = 0.0
        self.memory_limit: bool | None = None    # memory_size is a limit (None: the run's)
        self.processors: list[Any] = []
        self.resources: dict[str, Any] | None = None   # @constraint(resources=) as given
        self.variants: list[dict[str, Any]] | None = None   # @constraint(variants=) as given
        self.invoker = "python"       # external-program decorators change this
        # the program decorator's declaration (graph.decl; $VAR and expressions are resolved
        # per call: runtime.calltime); None: the task is its Python function
        self.program: ProgramDecl | None = None
        self.container: Container | None = None   # @container (image expanded per call)
        # node-side steps around the call (prolog, epilog, DIRECTORY_OUT left to the task):
        # agent.executor.invokers.hooks
        self.hooks: Hooks | None = None
        self.recorded: dict[str, Any] | None = None   # accepted hints with no effect here
        # IGNORE / CANCEL_SUCCESSORS: the values a failed task's outputs take instead of None
        # ("returns" or a parameter name -> value; a file parameter's value is a file to copy)
        self.failure_defaults: dict[str, Any] | None = None
        self.pin: str | None = None   # the node its calls run on (a replicated task's copies)
        self.io = False               # holds no computing unit: an I/O executor's (PyCOMPSs)
        self.io_units: Any = None     # @IO: the computing_units declared (scale_by_cu's ranks)
        self.wrapper: Any = None      # the TaskFunction users call (api.task)
        # derived from the declaration by _declared(), whenever it changes:
        self.cu_expr = Expr(1, "", [])     # computing_units and memory_size as expressions
        self.mem_expr = Expr(0.0, "", [])
        self.gpus = 0                 # GPU computing units (processors=) of a gang task
        # named / fractional resources and variants (graph.resources; processors= GPUs of a
        # task on one node are its "gpu"): placed by runtime.scheduling.resources
        self.need: tuple[Variant, ...] | None = None
        self.gang = False             # placed by runtime.scheduling.gang (several nodes, GPUs)
        # something is decided per call (runtime.calltime); False: the hot path
        self.call_time = False
        # what every call sends to its node, unless decided per call (None: a plain call)
        self.options: Options | None = Options(Limits(self.time_out)) if self.time_out else None

    def where(self, pname: str) -> str:
        return f"task {self.name}, parameter '{pname}'"

    def set_constraints(self, computing_units: Any = None, memory_size: Any = None,
                        processors: Any = None, memory_limit: bool | None = None,
                        resources: dict[str, Any] | None = None,
                        variants: list[dict[str, Any]] | None = None) -> None:
        """Record a ``@constraint`` (values may be expressions: graph.expr; ``resources``
        and ``variants``: graph.resources). A bad value raises UsageError and leaves the
        spec as it was."""
        before = {k: getattr(self, k) for k in _CONSTRAINTS}
        if resources is not None:
            self.resources = dict(resources)
        if variants is not None:
            self.variants = list(variants)
        if computing_units is not None:
            self.computing_units = computing_units
        if memory_size is not None:
            self.memory_size = memory_size
        if memory_limit is not None:
            self.memory_limit = memory_limit
        if processors is not None:
            self.processors = processors
        try:
            self._declared()
        except UsageError:
            for k, v in before.items():
                setattr(self, k, v)
            self._declared()
            raise

    def declare_io(self) -> None:
        """The task only reads and writes (PyCOMPSs's ``@IO`` with I/O executors): it holds
        no computing unit and runs on a node's I/O executors (runtime.scheduling.scheduler)."""
        self.io = True
        self.io_units = self.computing_units
        self.set_constraints(computing_units=0)

    def set_failure_policy(self, on_failure: str, defaults: dict[str, Any] | None) -> None:
        """A later ``@on_failure`` (PyCOMPSs's): the policy, and for IGNORE and
        CANCEL_SUCCESSORS the values its outputs take instead of None (checked by the
        decorator)."""
        self.on_failure = on_failure
        self.failure_defaults = dict(defaults) if defaults else None

    def record_hints(self, **hints: Any) -> None:
        """Declarations accepted with no effect here, kept to be shown (PyCOMPSs's)."""
        self.recorded = dict(self.recorded or {}, **hints)

    def declare_program(self, program: ProgramDecl) -> None:
        """The task runs ``program`` (@binary, @mpi, ...: api.external) through its kind's
        invoker."""
        self.invoker = program.kind
        self.program = program
        self._declared()

    def override_program(self, values: dict[str, Any]) -> None:
        """Program values decided for a copy of the spec (compat: a module global, a URL)."""
        assert self.program is not None
        self.program = self.program.overridden(values)
        self._declared()

    def declare_container(self, container: Container) -> None:
        """The task runs in a container (api.container)."""
        self.container = container
        self._declared()

    def add_hooks(self, prolog: HookProgram | None = None, epilog: HookProgram | None = None,
                  fresh_dirs: tuple[str, ...] | None = None,
                  renamed: tuple[str, ...] | None = None) -> None:
        """Programs before / after the call, directories the task makes, files it sees
        under COMPSs's version names (compat)."""
        h = self.hooks or Hooks()
        self.hooks = Hooks(prolog or h.prolog, epilog or h.epilog,
                           h.fresh_dirs if fresh_dirs is None else fresh_dirs,
                           h.renamed if renamed is None else renamed)
        self._declared()

    def wrapped_by(self, wrapper: Any) -> None:
        """The TaskFunction users call (shipped to nodes instead of the bare function)."""
        self.wrapper = wrapper
        DECLARED[declared_key(self)] = wrapper

    def _declared(self) -> None:
        """Derive, once per change of the declaration, what its calls read: the expressions
        (a bad one is an error now, at declaration), whether calls are resolved one by one,
        gang placement, and the options every call sends."""
        params = list(self.signature.parameters)
        where = f"@constraint on {self.name}"
        self.cu_expr = Expr(self.computing_units, f"{where}: computing_units", params)
        self.mem_expr = Expr(self.memory_size, f"{where}: memory_size", params)
        gpus = gpus_wanted(self.processors, where)
        self.gpus = gpus if self._multinode() else 0
        self.need = self._resources(where, gpus - self.gpus)
        self.gang = self._is_gang()
        ext = self.invoker != "python" or self.container is not None
        h = self.hooks        # PyCOMPSs's prolog / epilog naming $VAR: read per call
        hooks_per_call = h is not None and any(p is not None and p.bash and p.words is None
                                               for p in (h.prolog, h.epilog))
        self.call_time = bool(self.cu_expr.dynamic or self.mem_expr.dynamic or ext or self.gpus
                              or self.need or hooks_per_call)
        mem = None
        if self.memory_limit and isinstance(self.memory_size, (int, float)) and self.memory_size:
            mem = float(self.memory_size)       # GB (agent.executor.limits)
        limits = Limits(self.time_out, mem) if (self.time_out or mem) else None
        inv = None
        if self.hooks and not ext:      # a Python task with hooks: its function, hooks around
            cu = self.computing_units
            inv = Invocation(None, threads=cu if isinstance(cu, int) and cu > 0 else 1,
                             hooks=self.hooks)
        self.options = Options(limits, inv) if (limits or inv) else None

    def _multinode(self) -> bool:
        """Its calls may hold several nodes (MPI, @multinode, computing_nodes > 1)."""
        if self.invoker in ("mpi", "multinode"):
            return True
        if self.invoker in ("ompss", "workflow") and self.program is not None:
            n = self.program.computing_nodes
            return not (n is None or n.const == 1)
        return False

    def _resources(self, where: str, gpus: int) -> tuple[Variant, ...] | None:
        """The request of named resources and variants, with the GPUs of ``processors=``
        as ``gpu`` (a task on one node)."""
        resources = self.resources
        if gpus:
            if resources is not None and any(k in ("gpu", "gpus") for k in resources):
                raise UsageError(f"{where}: GPUs are asked for twice, by processors= and by "
                                 f"resources=; keep one.")
            resources = {**(resources or {}), "gpu": gpus}
        need = request(resources, self.variants, where)
        if need is not None and self._multinode() and (self.resources or self.variants):
            raise UsageError(f"{where}: resources= and variants= are for tasks that run on "
                             f"one node; an @{self.invoker} task asks for GPUs per node with "
                             f"processors=[{{'processorType': 'GPU', ...}}].")
        return need

    def _is_gang(self) -> bool:
        """Whether the scheduler must place calls through runtime.scheduling.gang (which
        hands tasks with named resources to runtime.scheduling.resources)."""
        return self._multinode() or self.gpus > 0 or self.need is not None

    @property
    def exclusive(self) -> bool:
        """Tasks the node must start on an idle slot (timeouts, several units, several
        nodes or GPUs, MPI). A program on one unit is not: like a Python task, it may wait
        in an executor's queue behind a short task, or behind its producer (chained)."""
        return bool(self.time_out) or not isinstance(self.computing_units, int) \
            or self.computing_units != 1 or self.gang \
            or self.invoker not in ("python", "binary", "ompss") \
            or self.container is not None


def _parse_returns(func: Callable[..., Any], returns: Any, name: str) -> tuple[int, bool]:
    """Return (number of futures, whether the call returns a tuple of them)."""
    if returns is None:
        try:
            hint = typing.get_type_hints(func).get("return")
        except Exception:
            hint = None
        if hint is not None and typing.get_origin(hint) is tuple:
            args = typing.get_args(hint)
            if args and args[-1] is not Ellipsis and len(args) > 1:
                return len(args), True
        return 1, False
    if isinstance(returns, bool):
        raise UsageError(f"@task on {name}: returns={returns!r}: give a type, a count or a tuple of types.")
    if isinstance(returns, int):
        if returns < 0:
            raise UsageError(f"@task on {name}: returns={returns} must be >= 0.")
        return (returns, True) if returns > 1 else (1, False)
    if isinstance(returns, (tuple, list)):
        if len(returns) == 0:
            return 1, False
        return (len(returns), True) if len(returns) > 1 else (1, False)
    if isinstance(returns, str):
        return _string_returns(func, returns, name)
    if isinstance(returns, type) or typing.get_origin(returns) is not None:
        if typing.get_origin(returns) is tuple:
            args = typing.get_args(returns)
            if len(args) > 1 and args[-1] is not Ellipsis:
                return len(args), True
        return 1, False
    raise UsageError(f"@task on {name}: returns={returns!r}: give a type (returns=int), "
                     f"a count (returns=2) or a tuple of types (returns=(int, str)).")


ALLOWED = "give a type (returns=int), a count (returns=2) or a tuple of types " \
    "(returns=(int, str))"
_NUMBER_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve".split())}


def _string_returns(func: Callable[..., Any], text: str, name: str) -> tuple[int, bool]:
    """``returns`` as a string: a count (``"2"``, PyCOMPSs's form) or a type written as text
    (``"int"``, ``"tuple[int, str]"``, a class defined further down); anything else is
    refused now, naming what it seems to mean, rather than read as one value."""
    s = text.strip()
    where = f"@task on {name}: returns={text!r}"
    if s.isdigit():
        n = int(s)
        return (n, True) if n > 1 else (1, False)
    if s.startswith("{{") or s.startswith("value_of"):
        raise UsageError(f"{where} is a form of PyCOMPSs's @task, which this @task does not "
                         f"read; {ALLOWED}, or run the "
                         f"application with taskflow run --compat pycompss, whose @task "
                         f"(pycompss.api.task) does.")
    if s.lower() in _NUMBER_WORDS:
        n = _NUMBER_WORDS[s.lower()]
        raise UsageError(f"{where} is a word, not a count nor a type: write returns={n} "
                         f"(or {ALLOWED}).")
    try:
        expr = ast.parse(s, mode="eval").body
    except SyntaxError:
        raise UsageError(f"{where} is neither a count nor a type written as text; "
                         f"{ALLOWED}.") from None
    if isinstance(expr, ast.Name):
        g = getattr(func, "__globals__", {})
        bound = g[s] if s in g else getattr(builtins, s, None)
        if isinstance(bound, int) and not isinstance(bound, bool):
            raise UsageError(f"{where} names the module global {s} (= {bound}), read at each "
                             f"call by PyCOMPSs's @task only (taskflow run --compat pycompss): "
                             f"write returns={s}, the number itself.")
        return 1, False     # a type's name (perhaps of a class defined further down)
    typed = isinstance(expr, (ast.Attribute, ast.Subscript)) or \
        isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.BitOr) or \
        isinstance(expr, ast.Constant) and expr.value is None
    if not typed:
        raise UsageError(f"{where} is neither a count nor a type written as text; "
                         f"{ALLOWED}.")
    if isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.Name) \
            and expr.value.id in ("tuple", "Tuple") and isinstance(expr.slice, ast.Tuple):
        items = expr.slice.elts
        if len(items) > 1 and not (isinstance(items[-1], ast.Constant)
                                   and items[-1].value is Ellipsis):
            return len(items), True
    return 1, False


def _parse_priority(priority: Any, name: str) -> int:
    if priority is None or priority is False:
        return 0
    if priority is True:
        return 1
    if isinstance(priority, int):
        return priority
    raise UsageError(f"@task on {name}: priority must be a bool or an int, not {priority!r}.")


def _parse_timeout(time_out: Any, name: str) -> float | None:
    if time_out is None or time_out == 0:
        return None
    if isinstance(time_out, (int, float)) and not isinstance(time_out, bool) and time_out > 0:
        return float(time_out)
    raise UsageError(f"@task on {name}: time_out must be a number of seconds > 0, not {time_out!r}.")
