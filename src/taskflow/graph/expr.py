"""Values of a task's declaration that are decided when the task is *called*.

``@constraint`` and the external-program decorators accept, besides plain
numbers and strings, ``"$ENV"`` strings and small expressions of the task's
parameters (``computing_units="2 * nthreads"``, ``processes="$NP"``). An
:class:`Expr` is such a value, checked and compiled once when the task is
declared; :meth:`Expr.value` evaluates it for one call. An environment
variable or a parameter value that does not make sense is a ``UsageError``
naming the task, the decorator argument and the fix, before anything runs.
The call-time resolution that uses them is :mod:`taskflow.runtime.calltime`.
"""
from __future__ import annotations

import ast
import os
import re
from typing import TYPE_CHECKING, Any, Mapping

from ..errors import UsageError

if TYPE_CHECKING:
    from .spec import TaskSpec

_VAR = re.compile(r"\$(\w+)|\$\{(\w+)\}")
_CALLS = {"min": min, "max": max, "len": len, "int": int, "abs": abs, "round": round}
_NODES = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Constant, ast.Name, ast.Load,
          ast.Call, ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow,
          ast.USub, ast.UAdd, ast.IfExp, ast.Compare, ast.Gt, ast.GtE, ast.Lt, ast.LtE,
          ast.Eq, ast.NotEq, ast.BoolOp, ast.And, ast.Or, ast.Subscript)


def expand_env(value: str, where: str, env: Mapping[str, str] | None = None) -> str:
    """Replace ``$VAR`` / ``${VAR}``; an unset variable is an error (not silently kept)."""
    env = os.environ if env is None else env

    def sub(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        if name not in env:
            raise UsageError(f"{where}: ${name} is not set in the environment when the task "
                             f"is called; export {name}=... before running, or give a value.")
        return env[name]

    return _VAR.sub(sub, value) if "$" in value else value


def expand_all(value: Any, where: str) -> Any:
    """``expand_env`` over strings inside lists/tuples/dicts (decorator values)."""
    if isinstance(value, str):
        return expand_env(value, where)
    if isinstance(value, (list, tuple)):
        return type(value)(expand_all(v, where) for v in value)
    if isinstance(value, dict):
        return {k: expand_all(v, where) for k, v in value.items()}
    return value


class Expr:
    """A decorator value that is a number, a ``$ENV`` string or an expression."""

    __slots__ = ("raw", "where", "code", "names", "const")

    def __init__(self, raw: Any, where: str, params: list[str]) -> None:
        self.raw = raw
        self.where = where
        self.code = None
        self.names: tuple[str, ...] = ()
        self.const = None
        if not isinstance(raw, str):
            self.const = raw
            return
        text = _VAR.sub(lambda m: f"__env_{m.group(1) or m.group(2)}", raw.strip())
        try:
            tree = ast.parse(text, mode="eval")
        except SyntaxError:
            raise UsageError(f"{where}: {raw!r} is neither a number, a $ENV variable nor an "
                             f"expression of the parameters ({', '.join(params)}).") from None
        names = set()
        for node in ast.walk(tree):
            if not isinstance(node, _NODES) or (isinstance(node, ast.Call) and not (
                    isinstance(node.func, ast.Name) and node.func.id in _CALLS)):
                raise UsageError(f"{where}: {raw!r} uses {type(node).__name__}, which a "
                                 f"constraint expression may not; use arithmetic on parameters.")
            if isinstance(node, ast.Name) and not node.id.startswith("__env_") \
                    and node.id not in _CALLS:
                if node.id not in params:
                    raise UsageError(f"{where}: {raw!r} names '{node.id}', which is not a "
                                     f"parameter of the task ({', '.join(params) or 'none'}).")
                names.add(node.id)
        self.names = tuple(sorted(names))
        self.code = compile(tree, f"<{where}>", "eval")

    @property
    def dynamic(self) -> bool:
        return self.code is not None

    def value(self, bound: dict[str, Any] | None) -> Any:
        if self.code is None:
            return self.const
        ns: dict[str, Any] = dict(_CALLS)
        for m in _VAR.finditer(self.raw):
            name = m.group(1) or m.group(2)
            if name not in os.environ:
                raise UsageError(f"{self.where}: ${name} is not set in the environment when "
                                 f"the task is called; export {name}=... or give a number.")
            ns[f"__env_{name}"] = number(os.environ[name])
        if self.names:
            # any future (taskflow's is a concurrent.futures.Future): the graph's expressions
            # need not know the master's futures, which know the graph
            from concurrent.futures import Future   # (not at import: an executor unpickling
            for n in self.names:                    # a task function imports this module)
                v = (bound or {}).get(n)
                if isinstance(v, Future):
                    raise UsageError(f"{self.where}: parameter '{n}' is a future; a constraint "
                                     f"is decided at call time, so wait_on() it first.")
                ns[n] = v
        try:
            return eval(self.code, {"__builtins__": {}}, ns)  # noqa: S307 - ast-checked above
        except Exception as exc:
            raise UsageError(f"{self.where}: evaluating {self.raw!r} failed: "
                             f"{type(exc).__name__}: {exc}") from None


def number(s: str) -> Any:
    """A number from text (int, else float), else the text itself."""
    try:
        return int(s)
    except ValueError:
        try:
            return float(s)
        except ValueError:
            return s


def as_int(v: Any, where: str, minimum: int = 1) -> int:
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if isinstance(v, str):
        v = number(v.strip())
    if not isinstance(v, int) or isinstance(v, bool) or v < minimum:
        raise UsageError(f"{where} must be an int >= {minimum}, got {v!r}.")
    return v


def bind(spec: TaskSpec, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """Parameter name -> value of one call, defaults applied (``Signature.bind_partial``).

    A call giving every parameter by position, of a function with no ``*args``,
    ``**kwargs`` or keyword-only ones, binds without ``inspect`` (what it would
    return: the names in order; ~10 us a call of a program task with a stream)."""
    if not kwargs and len(args) == len(spec.names) and spec.varargs is None \
            and spec.varkw is None and not spec.kwonly:
        return dict(zip(spec.names, args))
    try:
        b = spec.signature.bind_partial(*args, **kwargs)
    except TypeError as exc:
        raise UsageError(f"task {spec.name}: {exc} (signature {spec.name}{spec.signature})") \
            from None
    b.apply_defaults()
    return dict(b.arguments)


def gpus_wanted(processors: Any, where: str) -> int:
    """Number of GPU computing units in ``processors=[{processorType: GPU, ...}]``."""
    n = 0
    for p in processors or []:
        if not isinstance(p, dict):
            raise UsageError(f"{where}: processors must be a list of dicts like "
                             f"{{'processorType': 'GPU', 'computingUnits': 1}}, not {p!r}.")
        kind = str(p.get("processorType", p.get("processor_type", "CPU"))).upper()
        if kind == "GPU":
            n += as_int(expand_all(p.get("computingUnits", p.get("computing_units", 1)), where),
                        f"{where}: GPU computingUnits")
    return n
