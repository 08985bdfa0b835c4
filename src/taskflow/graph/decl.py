"""What a program decorator declares, as one typed record per kind.

``@binary``, ``@ompss``, ``@mpi``, ``@multinode``, ``@http`` and ``@workflow``
(and PyCOMPSs's spellings of them, :mod:`taskflow.compat`) check their
arguments and make one of these records when the task is declared
(:func:`taskflow.api.external.attach`); ``TaskSpec.program`` holds it
(``None``: the task is its Python function). Each record keeps the values as
declared: ``$VAR`` in its strings and ``processes`` / ``processes_per_node``
/ ``computing_nodes`` (:class:`~taskflow.graph.expr.Expr`: a number, ``$ENV``
or an expression of the parameters) are decided per call, by
:meth:`ProgramDecl.for_call`, in the order the decorators declare them (so
the first error a call meets is always the same). What a call's values
become, the typed records the node reads (:mod:`taskflow.wire.invocation`:
``Program``, ``Mpi``, ``Http``, ``Workflow``), is
:mod:`taskflow.runtime.calltime`'s.

Every record carries the program's command line as the wire's
:class:`~taskflow.wire.invocation.CommandLine`: its ``args`` template and how
the program sees the parameters that are files, streams or prefixed.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar, Mapping, NamedTuple, TypeVar

from ..wire.invocation import CommandLine, Param
from .expr import Expr, as_int, expand_all, expand_env
from .param import OBJECT_KIND
from .param import Param as TaskParam

RUNNERS = ("mpirun", "mpiexec", "srun")
# the values that are numbers decided per call (Expr); every other value is as declared
COUNTS = ("processes", "processes_per_node", "computing_nodes")

_D = TypeVar("_D", bound="ProgramDecl")


class Counts(NamedTuple):
    """A call's ``processes`` / ``processes_per_node`` / ``computing_nodes``, evaluated
    (None: not declared)."""

    processes: int | None = None
    processes_per_node: int | None = None
    computing_nodes: int | None = None


NO_COUNTS = Counts()


def command_line(args: str | None, params: Mapping[str, TaskParam], order: list[str],
                 varargs: str | None, varkw: str | None) -> CommandLine:
    """The program's command line: the ``args`` template and the parameters it sees other
    than plain objects (files, streams, prefixed values), in the signature's ``order``."""
    seen = {name: Param(p.kind, p.direction, p.stream, p.prefix) for name, p in params.items()
            if p.kind != OBJECT_KIND or p.prefix is not None}
    return CommandLine(args, seen, tuple(order), varargs, varkw)


@dataclass(frozen=True, kw_only=True)
class ProgramDecl:
    """What every program decorator declares; the kinds below add theirs."""

    kind: ClassVar[str] = ""          # the invoker's name: TaskSpec.invoker
    line: CommandLine                 # the args template and the parameters it sees
    fail_by_exit_value: bool          # a non-zero exit code fails the task
    computing_nodes: Expr | None = None
    bash_words: bool = False          # PyCOMPSs: args read as bash reads them (wire.template)

    def overridden(self: _D, values: Mapping[str, Any]) -> _D:
        """This declaration with ``values`` decided for a copy of the spec (compat: a module
        global's value, a service's URL); a count becomes a constant expression."""
        changes: dict[str, Any] = {k: Expr(v, k, []) if k in COUNTS else v
                                   for k, v in values.items()}
        return replace(self, **changes)

    @property
    def varies_per_call(self) -> bool:
        """Its values may differ from call to call: a count (an Expr, even a constant one)
        or a ``$VAR`` in a value expanded per call."""
        return any(c is not None for c in self._counts()) or any(
            isinstance(t, str) and "$" in t for t in self._texts())

    @property
    def reads_arguments(self) -> bool:
        """A call's values depend on its arguments: a count names a parameter, or a
        parameter is a stream (checked to be a path)."""
        return any(c is not None and c.names for c in self._counts()) or any(
            p.stream is not None for p in self.line.params.values())

    def for_call(self, bound: dict[str, Any] | None, where: str
                 ) -> tuple[ProgramDecl, Counts]:
        """This declaration for one call (``bound``: its arguments by name): ``$VAR``
        expanded in its strings, its counts evaluated (a UsageError names ``where``)."""
        nodes = _count(self.computing_nodes, bound, where, "computing_nodes")
        line = self._line_for_call(where)
        return (self if line is self.line else self._with(line=line)), \
            Counts(computing_nodes=nodes)

    def _with(self: _D, **changes: Any) -> _D:
        """A copy with ``changes``, for one call (dataclasses.replace runs the frozen
        ``__init__`` again, 4x slower per call; the values were checked when declared)."""
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__, **changes)
        return new

    def _counts(self) -> tuple[Expr | None, ...]:
        return (self.computing_nodes,)

    def _texts(self) -> tuple[str | None, ...]:
        """The strings in which ``$VAR`` is expanded per call."""
        return (self.line.args,)

    def _line_for_call(self, where: str) -> CommandLine:
        """The command line with ``$VAR`` expanded in the template (PyCOMPSs's is read as
        bash reads it when the action is made: runtime.calltime)."""
        args = self.line.args
        if args is None or self.bash_words:
            return self.line
        expanded = expand_env(args, f"{where}: args")
        return self.line if expanded == args else self.line._replace(args=expanded)


@dataclass(frozen=True, kw_only=True)
class BinaryDecl(ProgramDecl):
    """``@binary``: one program; its exit code is the task's value."""

    kind: ClassVar[str] = "binary"
    binary: str
    working_dir: str | None = None
    keep_background: bool = False     # its background processes outlive it

    def for_call(self, bound: dict[str, Any] | None, where: str
                 ) -> tuple[BinaryDecl, Counts]:
        binary = expand_env(self.binary, f"{where}: binary")
        line = self._line_for_call(where)
        working_dir = _expanded(self.working_dir, where, "working_dir")
        return self._with(binary=binary, line=line, working_dir=working_dir), NO_COUNTS

    def _texts(self) -> tuple[str | None, ...]:
        return (self.binary, self.line.args, self.working_dir)


@dataclass(frozen=True, kw_only=True)
class OmpssDecl(BinaryDecl):
    """``@ompss``: a threaded program on ``computing_nodes`` nodes."""

    kind: ClassVar[str] = "ompss"

    def for_call(self, bound: dict[str, Any] | None, where: str
                 ) -> tuple[OmpssDecl, Counts]:
        binary = expand_env(self.binary, f"{where}: binary")
        nodes = _count(self.computing_nodes, bound, where, "computing_nodes")
        line = self._line_for_call(where)
        working_dir = _expanded(self.working_dir, where, "working_dir")
        return self._with(binary=binary, line=line, working_dir=working_dir), \
            Counts(computing_nodes=nodes)


@dataclass(frozen=True, kw_only=True)
class MpmdDecl:
    """One program of PyCOMPSs's ``@mpmd_mpi``."""

    binary: str
    processes: int
    args: str | None = None

    def for_call(self, where: str, bash_words: bool) -> MpmdDecl:
        """This program for one call: ``$VAR`` expanded (not in PyCOMPSs's args: bash
        reads them when the action is made)."""
        binary, args = self.binary, self.args
        if isinstance(binary, str):
            binary = expand_env(binary, f"{where}.binary")
        if isinstance(args, str) and not bash_words:
            args = expand_env(args, f"{where}.args")
        return replace(self, binary=binary, args=args)


@dataclass(frozen=True, kw_only=True)
class MpiDecl(ProgramDecl):
    """``@mpi`` (and ``@mpmd_mpi``): ``runner`` launches ``binary`` (or the programs, or
    the Python function under mpi4py) over the slots the task holds."""

    kind: ClassVar[str] = "mpi"
    runner: str                       # RUNNERS, or "$VAR" naming one
    binary: str | None = None         # None: the Python function on every rank
    processes: Expr | None = None
    processes_per_node: Expr | None = None
    flags: str | None = None
    working_dir: str | None = None
    programs: tuple[MpmdDecl, ...] = ()     # @mpmd_mpi
    scale_by_cu: bool = False         # PyCOMPSs: one rank per computing unit
    rank_values: bool = False         # mpi4py: the value is every rank's (PyCOMPSs)
    layouts: tuple[tuple[str, int, int, int], ...] = ()    # wire.invocation.Mpi.layouts
    groups: bool = False              # PyCOMPSs: processes_per_node groups, several on a node

    def for_call(self, bound: dict[str, Any] | None, where: str
                 ) -> tuple[MpiDecl, Counts]:
        runner = expand_env(self.runner, f"{where}: runner")
        binary = _expanded(self.binary, where, "binary")
        programs = tuple(p.for_call(f"{where}: programs[{i}]", self.bash_words)
                         for i, p in enumerate(self.programs))
        counts = Counts(_count(self.processes, bound, where, "processes"),
                        _count(self.processes_per_node, bound, where, "processes_per_node"),
                        _count(self.computing_nodes, bound, where, "computing_nodes"))
        flags = _expanded(self.flags, where, "flags")
        line = self._line_for_call(where)
        working_dir = _expanded(self.working_dir, where, "working_dir")
        return self._with(runner=runner, binary=binary, programs=programs, flags=flags,
                          line=line, working_dir=working_dir), counts

    def _counts(self) -> tuple[Expr | None, ...]:
        return (self.processes, self.processes_per_node, self.computing_nodes)

    def _texts(self) -> tuple[str | None, ...]:
        return (self.runner, self.binary, self.flags, self.line.args, self.working_dir) + \
            tuple(t for p in self.programs for t in (p.binary, p.args))


@dataclass(frozen=True, kw_only=True)
class MultinodeDecl(ProgramDecl):
    """``@multinode``: the Python function given ``computing_nodes`` nodes."""

    kind: ClassVar[str] = "multinode"
    groups: bool = False              # PyCOMPSs: node groups, several on a node with room


@dataclass(frozen=True, kw_only=True)
class HttpDecl(ProgramDecl):
    """PyCOMPSs's ``@http``: one REST call (wire.invocation.Http)."""

    kind: ClassVar[str] = "http"
    url: str = ""                     # the service's base URL, chosen per call (compat)
    request: str = "GET"
    resource: str = ""
    payload: Any = None
    payload_type: str | None = None
    produces: str | None = None
    updates: str | None = None
    file_params: tuple[str, ...] = ()
    timeout: float | None = None


@dataclass(frozen=True, kw_only=True)
class WorkflowDecl(ProgramDecl):
    """``@workflow`` (PyCOMPSs's ``@compss``): a nested run of ``script``."""

    kind: ClassVar[str] = "workflow"
    script: str
    working_dir: str | None = None
    flags: str | None = None          # more ``taskflow run`` options
    compat: bool = False              # run it with --compat pycompss

    def for_call(self, bound: dict[str, Any] | None, where: str
                 ) -> tuple[WorkflowDecl, Counts]:
        script = expand_env(self.script, f"{where}: script")
        line = self._line_for_call(where)
        nodes = _count(self.computing_nodes, bound, where, "computing_nodes")
        working_dir = _expanded(self.working_dir, where, "working_dir")
        flags = _expanded(self.flags, where, "flags")
        return self._with(script=script, line=line, working_dir=working_dir,
                          flags=flags), Counts(computing_nodes=nodes)

    def _texts(self) -> tuple[str | None, ...]:
        return (self.script, self.line.args, self.working_dir, self.flags)


KINDS: dict[str, type[ProgramDecl]] = {
    d.kind: d for d in (BinaryDecl, OmpssDecl, MpiDecl, MultinodeDecl, HttpDecl, WorkflowDecl)}


def _expanded(value: str | None, where: str, name: str) -> str | None:
    return expand_env(value, f"{where}: {name}") if value is not None else None


def _count(value: Expr | None, bound: dict[str, Any] | None, where: str,
           name: str) -> int | None:
    if value is None:
        return None
    return as_int(expand_all(value.value(bound), where), f"{where}: {name}")
