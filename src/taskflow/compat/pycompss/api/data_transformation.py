"""``pycompss.api.data_transformation``: ``@data_transformation`` / ``@dt`` and ``dto``.

Above ``@task`` (or ``@software``)::

    @dt("data", normalise, scale=2)          # data = normalise(data, scale=2) first
    @task(returns=1)
    def train(data): ...

When the task is called, the parameter's value goes through the function
first, in a task of its own whose value the task then reads (with
``is_workflow=True`` the function is called as it is, on the master: it may
call tasks itself). Several ``@dt`` apply from the top one down; an empty
``@dt()`` takes the transformations from the call (``train(x, dt=dto("data",
normalise))`` or a list of ``dto``). Typed forms convert between files,
objects and collections: ``@dt(target="data", function=f, type=FILE_TO_OBJECT)``
(the file's path goes to ``f``, which gives the object), ``OBJECT_TO_FILE`` /
``COLLECTION_TO_FILE`` (``f(value, destination)`` writes the file, whose path
the task gets; ``destination=`` names it, else one in the run's directory),
``FILE_TO_COLLECTION`` / ``OBJECT_TO_COLLECTION`` (the task gets a list of
``size=N`` values: the first N that ``f`` gives, as PyCOMPSs's transformation
task with N outputs keeps them; fewer is an error), ``COLLECTION_TO_OBJECT``.
"""
from __future__ import annotations

import functools
import os
import tempfile
from typing import Any, Callable

from ....errors import UsageError
from ...calls.taskfn import CompatTaskFunction
from .parameter import COLLECTION_IN, FILE_IN, FILE_OUT
from .task import task

FILE_TO_OBJECT = "FILE_TO_OBJECT"
OBJECT_TO_FILE = "OBJECT_TO_FILE"
FILE_TO_COLLECTION = "FILE_TO_COLLECTION"
COLLECTION_TO_FILE = "COLLECTION_TO_FILE"
OBJECT_TO_COLLECTION = "OBJECT_TO_COLLECTION"
COLLECTION_TO_OBJECT = "COLLECTION_TO_OBJECT"
TYPES = (FILE_TO_OBJECT, OBJECT_TO_FILE, FILE_TO_COLLECTION, COLLECTION_TO_FILE,
         OBJECT_TO_COLLECTION, COLLECTION_TO_OBJECT)


@task(returns=1)
def _transform(data: Any, function: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    return function(data, **kwargs)


@task(returns=1, data=FILE_IN)
def _from_file(data: str, function: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    return function(data, **kwargs)


@task(returns=1, data=COLLECTION_IN)
def _from_collection(data: list[Any], function: Callable[..., Any],
                     kwargs: dict[str, Any]) -> Any:
    return function(data, **kwargs)


@task(destination=FILE_OUT)
def _to_file(data: Any, function: Callable[..., Any], destination: str,
             kwargs: dict[str, Any]) -> None:
    function(data, destination, **kwargs)


@task(data=COLLECTION_IN, destination=FILE_OUT)
def _collection_to_file(data: list[Any], function: Callable[..., Any], destination: str,
                        kwargs: dict[str, Any]) -> None:
    function(data, destination, **kwargs)


def _first(size: int, function: Callable[..., Any], data: Any, **kwargs: Any) -> Any:
    """The first ``size`` values ``function`` gives (a FILE/OBJECT_TO_COLLECTION of size N)."""
    values = list(function(data, **kwargs))
    if len(values) < size:
        raise ValueError(f"@data_transformation: {getattr(function, '__name__', function)} gave "
                         f"{len(values)} value(s) for a collection of size={size}; give at "
                         f"least {size}, or declare size={len(values)}.")
    return tuple(values[:size])


class DTObject:
    """A transformation given at the call: ``dto("param", function, **kwargs)``."""

    def __init__(self, param_name: str, func: Callable[..., Any], **func_kwargs: Any) -> None:
        self.param_name = param_name
        self.func = func
        self.func_kwargs = func_kwargs

    def extract(self) -> tuple[str, Callable[..., Any], dict[str, Any]]:
        return self.param_name, self.func, dict(self.func_kwargs)


class DataTransformation:
    """``@data_transformation`` / ``@dt`` (see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.dts: list[tuple[str, Callable[..., Any], dict[str, Any]]] = []
        if args or "target" in kwargs:
            kw = dict(kwargs)
            name = args[0] if args else kw.pop("target")
            func = args[1] if len(args) > 1 else kw.pop("function", None)
            if not isinstance(name, str) or not callable(func):
                raise UsageError("@data_transformation: give the parameter's name and the "
                                 "function, @dt(\"param\", function, **its_kwargs) or "
                                 "@dt(target=\"param\", function=f, type=FILE_TO_OBJECT).")
            self.dts.append((name, func, kw))
        elif kwargs:
            raise UsageError("@data_transformation: give the parameter's name and the "
                             "function first (or nothing, and dt= at the call).")

    def __call__(self, target: Any) -> Callable[..., Any]:
        inner = target
        tf = target
        while not isinstance(tf, CompatTaskFunction) and hasattr(tf, "__wrapped__"):
            tf = tf.__wrapped__
        if not isinstance(tf, CompatTaskFunction):
            raise UsageError("@data_transformation goes above @task (or @software).")
        names = list(tf.spec.signature.parameters)
        for name, _, _ in self.dts:
            if name not in names:
                raise UsageError(f"@data_transformation on {tf.spec.name}: '{name}' is not a "
                                 f"parameter of {tf.spec.name}({', '.join(names)}).")
        dts = self.dts

        @functools.wraps(inner)
        def transformed(*args: Any, **kwargs: Any) -> Any:
            from ....context import in_worker
            if in_worker():
                return inner(*args, **kwargs)
            todo = list(dts)
            given = kwargs.pop("dt", None)
            if given is not None:
                todo += [d.extract() for d in (given if isinstance(given, list) else [given])]
            args_l = list(args)
            for name, func, fkw in todo:
                _apply(tf, name, func, dict(fkw), args_l, kwargs)
            return inner(*args_l, **kwargs)

        transformed.__wrapped__ = inner
        return transformed


def _apply(tf: CompatTaskFunction, name: str, func: Callable[..., Any], fkw: dict[str, Any],
           args: list[Any], kwargs: dict[str, Any]) -> None:
    """Replace the argument ``name`` in ``args``/``kwargs`` by its transformation."""
    spec = tf.spec
    pos = spec.index.get(name)
    if name in kwargs:
        value = kwargs[name]
    elif pos is not None and pos < len(args):
        value = args[pos]
    elif name in spec.defaults:
        value = spec.defaults[name]
    else:
        raise UsageError(f"@data_transformation on {spec.name}: the call gives no "
                         f"'{name}' to transform.")
    workflow = str(fkw.pop("is_workflow", False)).lower() in ("true", "1")
    kind = fkw.pop("type", None)
    new = func(value, **fkw) if workflow else _typed(spec.name, kind, value, func, fkw)
    if pos is not None and pos < len(args) and name not in kwargs:
        args[pos] = new
    else:
        kwargs[name] = new


def _typed(where: str, kind: Any, value: Any, func: Callable[..., Any],
           fkw: dict[str, Any]) -> Any:
    if kind is None:
        return _transform(value, func, fkw)
    kind = str(kind).upper()
    if kind not in TYPES:
        raise UsageError(f"@data_transformation on {where}: type={kind!r} is not one of "
                         f"{', '.join(TYPES)}.")
    destination = fkw.pop("destination", None)
    size = fkw.pop("size", None)
    src, _, dst = kind.partition("_TO_")
    if dst == "FILE":
        path = os.path.abspath(destination) if destination else _fresh_path()
        (_collection_to_file if src == "COLLECTION" else _to_file)(value, func, path, fkw)
        return path
    reader = {"FILE": _from_file, "COLLECTION": _from_collection}.get(src, _transform)
    if dst == "COLLECTION":
        if not isinstance(size, int) or size < 1:
            raise UsageError(f"@data_transformation on {where}: type={kind} needs size=N, "
                             f"the number of values the function gives.")
        if size > 1:
            func = functools.partial(_first, size, func)
        out = reader(value, func, fkw, returns=size)
        return out if isinstance(out, list) else [out]
    return reader(value, func, fkw)


def _fresh_path() -> str:
    from ....runtime import embedded
    d = os.path.join(embedded.get_or_start().run_dir, "dt")
    os.makedirs(d, exist_ok=True)
    fd, path = tempfile.mkstemp(prefix="dt-", dir=d)
    os.close(fd)
    os.unlink(path)
    return path


dt = DataTransformation
data_transformation = DataTransformation
dto = DTObject

__all__ = ["dt", "data_transformation", "dto", "DataTransformation", "DTObject", *TYPES]
