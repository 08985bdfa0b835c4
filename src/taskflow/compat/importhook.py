"""Make ``import pycompss...`` load :mod:`taskflow.compat.pycompss` (and only when asked).

:func:`install` puts a finder first on ``sys.meta_path`` that answers for
``pycompss`` and every ``pycompss.X``: it imports
``taskflow.compat.pycompss.X`` and hands back *that same module object*, so
``pycompss.api.parameter.FILE_IN is taskflow.compat.pycompss.api.parameter.FILE_IN``.
A name the layer does not provide (the COMPSs runtime's internals) is an
``ImportError`` that says so, never a module that half works.

The name ``pycompss`` belongs to the real project: when a real PyCOMPSs is
importable, :func:`install` refuses (:class:`RealPyCOMPSsInstalled`) unless
``force=True`` (``taskflow run --compat pycompss --compat-force``).

Worker processes get the same finder before a compat task's function is
unpickled there (:func:`load_task_function`), so the modules of the
application that say ``from pycompss.api.task import task`` import there too.

The finder imports nothing itself: Python calls ``find_spec`` holding its global
import lock, and an import made there waits for a module's lock that another
thread, itself waiting for the global lock, may hold (a deadlock: an executor
unpickling a stream while another of its threads imported ``pycompss`` hung so).
It only locates the layer's file; the loader imports the layer's module, as any
loader does, holding the lock of the one name being imported.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from types import ModuleType
from typing import Any, Sequence

from ..errors import UsageError

PREFIX = "pycompss"
TARGET = "taskflow.compat.pycompss"


class RealPyCOMPSsInstalled(UsageError):
    """A package named ``pycompss`` is installed; the layer will not shadow it unasked."""


class NotProvided(ImportError):
    """A ``pycompss.*`` module that the compatibility layer does not provide."""


class _AliasLoader(importlib.abc.Loader):
    """Loads ``pycompss.X`` as the module ``taskflow.compat.pycompss.X`` (imported here)."""

    def __init__(self, real: str) -> None:
        self.real = real

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return importlib.import_module(self.real)

    def exec_module(self, module: ModuleType) -> None:
        """Nothing: the module ran when it was imported under its own name."""


class PyCOMPSsAlias(importlib.abc.MetaPathFinder):
    """``pycompss[.X]`` -> ``taskflow.compat.pycompss[.X]`` (the same module objects)."""

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != PREFIX and not fullname.startswith(PREFIX + "."):
            return None
        real = TARGET + fullname[len(PREFIX):]
        # (the directory of the name's parent in the layer: no import, the name says it)
        where = [os.path.join(_COMPAT_DIR, *real.split(".")[2:-1])]
        found = importlib.machinery.PathFinder.find_spec(real, where)
        if found is None:
            raise NotProvided(
                f"{fullname} is part of the COMPSs runtime that taskflow's PyCOMPSs layer does "
                f"not provide (see docs/compat-pycompss.md for the supported surface)",
                name=fullname)
        return importlib.machinery.ModuleSpec(
            fullname, _AliasLoader(real),
            is_package=found.submodule_search_locations is not None)


_COMPAT_DIR = os.path.dirname(os.path.abspath(__file__))     # taskflow/compat


_FINDER = PyCOMPSsAlias()


def installed() -> bool:
    return _FINDER in sys.meta_path


def real_pycompss() -> str | None:
    """Where a real ``pycompss`` package is (None when there is none)."""
    if installed():
        return None
    existing = sys.modules.get(PREFIX)
    if existing is not None and not getattr(existing, "__name__", "").startswith(TARGET):
        return getattr(existing, "__file__", None) or "<already imported>"
    spec = importlib.machinery.PathFinder.find_spec(PREFIX)
    if spec is None:
        return None
    return spec.origin or (list(spec.submodule_search_locations or []) or ["?"])[0]


def install(force: bool = False) -> None:
    """Alias ``pycompss.*`` to taskflow's layer (idempotent); see the module docstring."""
    if installed():
        return
    where = real_pycompss()
    if where is not None:
        if not force:
            raise RealPyCOMPSsInstalled(
                f"a real PyCOMPSs is installed ({where}); taskflow will not shadow it. Run the "
                f"application with runcompss, uninstall pycompss from this environment, or add "
                f"--compat-force to run it under taskflow anyway.")
        for name in [n for n in sys.modules if n == PREFIX or n.startswith(PREFIX + ".")]:
            del sys.modules[name]
    sys.meta_path.insert(0, _FINDER)
    from .generators import register
    register()                  # generators travel as PyCOMPSs sends them


def uninstall() -> None:
    """Remove the finder and the ``pycompss`` aliases (tests)."""
    while _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
    for name in [n for n in sys.modules if n == PREFIX or n.startswith(PREFIX + ".")]:
        if getattr(sys.modules[name], "__name__", "").startswith(TARGET):
            del sys.modules[name]


def load_task_function(payload: bytes) -> Any:
    """Worker side: install the alias, then unpickle a compat task's function.

    The function travels as cloudpickle bytes inside the task function's
    pickle so that nothing of it (its module, the globals it names) is
    imported before the finder is in place. On a worker the master has
    decided already: the alias is installed even over a real PyCOMPSs there.
    """
    if not installed():
        install(force=True)
    import cloudpickle
    loader, args = cloudpickle.loads(payload)
    return loader(*args)
