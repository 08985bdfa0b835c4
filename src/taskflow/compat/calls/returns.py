"""How many values a PyCOMPSs task gives back, and of which kind.

``returns`` may be a type, a tuple or list of types, a count, a string
holding an int, the name of a module global (read at each call),
``"value_of(param.attr)"`` (read from the call's arguments), ``"{{param}}"`` (the
call gives that argument object back, and the task's value becomes its next version), a
class (the
call gives an instance standing for the value), ``FILE`` (one value: the
path the task returns) or nothing: then type hints decide, else the
function's ``return`` statements (the most values any ``return a, b``
gives; no ``return`` with a value means no outputs and the call gives None).
"""
from __future__ import annotations

import ast
import builtins
import inspect
import re
import textwrap
import typing
from typing import Any, Callable

from ...errors import UsageError

UNSET = object()
_PARAM = re.compile(r"\{\{\s*(\w+)\s*\}\}")
_BUILTIN_TYPES = frozenset(v for v in vars(builtins).values() if isinstance(v, type))


def is_user_class(t: Any) -> bool:
    """A class the application defines (``returns=MyClass``), not int/list/... ."""
    return isinstance(t, type) and t not in _BUILTIN_TYPES \
        and not issubclass(t, BaseException) and t.__module__ not in ("typing", "builtins")


class Returns:
    """A parsed ``returns``: a fixed count, or a rule read at each call."""

    __slots__ = ("fixed", "dynamic", "types", "param")

    def __init__(self, fixed: int, dynamic: Callable[..., int] | None = None,
                 types: tuple[Any, ...] = (), param: str | None = None) -> None:
        self.fixed = fixed
        self.dynamic = dynamic
        self.types = types          # per output, when classes were given (stand-in objects)
        self.param = param          # returns="{{param}}": the value is that argument's next

    def count(self, bound: dict[str, Any] | None, func: Callable[..., Any], name: str) -> int:
        if self.dynamic is None:
            return self.fixed
        return self.dynamic(bound or {}, func, name)


def parse(returns: Any, func: Callable[..., Any], name: str, call_time: bool = False) -> Returns:
    """``returns`` as given to ``@task`` (or to the call) -> :class:`Returns`."""
    where = f"task {name}: returns={returns!r}" + (" (given at the call)" if call_time else "")
    if returns is None or returns is False:
        return infer(func, name) if not call_time else Returns(0)
    if isinstance(returns, bool):
        return Returns(1)
    if isinstance(returns, int):
        if returns < 0:
            raise UsageError(f"{where}: a count must be >= 0.")
        return Returns(returns)
    if isinstance(returns, str):
        return _from_string(returns, where)
    if isinstance(returns, (tuple, list)):
        types = tuple(returns)
        return Returns(len(types), types=types if any(is_user_class(t) for t in types) else ())
    if is_user_class(returns):
        return Returns(1, types=(returns,))
    return Returns(1)       # a type (int, list, ...), FILE or any other marker: one value


def _from_string(text: str, where: str) -> Returns:
    s = text.strip()
    try:
        return Returns(int(s))
    except ValueError:
        pass
    m = _PARAM.fullmatch(s)
    if m:                   # the argument object itself comes back, its next version
        return Returns(1, param=m.group(1))
    if s.startswith("value_of"):
        inner = s[len("value_of"):].strip()
        if not (inner.startswith("(") and inner.endswith(")")):
            raise UsageError(f"{where}: write value_of(param) or value_of(param.attribute).")
        ref = [p.strip() for p in inner[1:-1].split(".")]
        if not ref or not all(p.isidentifier() for p in ref):
            raise UsageError(f"{where}: write value_of(param) or value_of(param.attribute).")

        def from_param(bound: dict[str, Any], func: Callable[..., Any], name: str) -> int:
            if ref[0] not in bound:
                raise UsageError(f"task {name}: returns={text!r} names parameter "
                                 f"'{ref[0]}', which this call does not give.")
            v = bound[ref[0]]
            for attr in ref[1:]:
                v = v[attr] if isinstance(v, dict) else getattr(v, attr)
            return _as_count(v, f"task {name}: returns={text!r}")
        return Returns(0, dynamic=from_param)
    if s.isidentifier():
        def from_global(bound: dict[str, Any], func: Callable[..., Any], name: str) -> int:
            g = getattr(func, "__globals__", {})
            if s not in g:
                raise UsageError(f"task {name}: returns={text!r} names no module global of "
                                 f"{getattr(func, '__module__', '?')} (nor a number); define "
                                 f"{s} before calling the task or give returns=N.")
            return _as_count(g[s], f"task {name}: returns={text!r}")
        return Returns(0, dynamic=from_global)
    raise UsageError(f"{where}: a string must hold a number, the name of a module global "
                     f"or value_of(param.attribute).")


def _as_count(v: Any, where: str) -> int:
    from ...future import Future
    if isinstance(v, Future):
        raise UsageError(f"{where} is a future: the number of outputs is decided when the task "
                         f"is called; compss_wait_on() it first.")
    try:
        n = int(v)
    except (TypeError, ValueError):
        raise UsageError(f"{where} gives {v!r}, not a number of outputs.") from None
    if n < 0:
        raise UsageError(f"{where} gives {n}: the number of outputs must be >= 0.")
    return n


def infer(func: Callable[..., Any], name: str) -> Returns:
    """No ``returns``: type hints, else the function's ``return`` statements (a generator
    function gives one value: its generator)."""
    if inspect.isgeneratorfunction(inspect.unwrap(func)):
        return Returns(1)
    try:
        hint = typing.get_type_hints(func).get("return")
    except Exception:  # noqa: BLE001 - unresolvable hints: read the source instead
        hint = None
    if hint is not None and hint is not type(None):
        if typing.get_origin(hint) is tuple:
            args = [a for a in typing.get_args(hint) if a is not Ellipsis]
            return Returns(max(1, len(args)))
        if isinstance(hint, tuple):          # -> (int, list): PyCOMPSs accepts a tuple
            return Returns(max(1, len(hint)))
        return Returns(1, types=(hint,) if is_user_class(hint) else ())
    return Returns(count_returns(func))


def count_returns(func: Callable[..., Any]) -> int:
    """0 without ``return <value>``; else the most values one ``return`` gives."""
    target = inspect.unwrap(func)
    try:
        src = textwrap.dedent(inspect.getsource(target))
    except (OSError, TypeError):
        return 1            # no source (built in, interactive): one value, as PyCOMPSs assumes
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return 1
    fdef = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))),
                None)
    if fdef is None:
        return 1
    most = 0
    for node in _own_nodes(fdef):
        if isinstance(node, ast.Return) and node.value is not None:
            v = node.value
            n = len(v.elts) if isinstance(v, ast.Tuple) else 1
            if isinstance(v, ast.Constant) and v.value is None:
                n = max(n, 1)
            most = max(most, n)
    return most


def _own_nodes(fdef: ast.AST) -> list[ast.AST]:
    """The nodes of a function's body, not those of the functions and classes inside it."""
    out: list[ast.AST] = []
    stack = list(ast.iter_child_nodes(fdef))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        out.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return out
