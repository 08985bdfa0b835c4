"""The modules the script imports, sent to the nodes so that executors import them early.

A fresh executor pays the application's imports when it loads the first task's
function (numpy, scipy, scikit-learn: seconds). :class:`Preload` learns the
modules the script (``__main__``: a script run by ``taskflow run`` or by
``python``, a notebook's cells) imports, and the loop sends each node the names
it has not had yet (a PRELOAD frame before the round's work); the node's
executors import them in the background (:mod:`taskflow.agent.executor.preload`).
Under ``taskflow run`` the runtime starts before the script's first line, so
the executors import while the script itself does.

Two sources: the modules ``__main__`` already refers to when the run starts (a
script that imported them before ``taskflow.start()`` or before its first
call), and a finder at the front of ``sys.meta_path`` that notes each import
made by ``__main__``'s own code while the run goes on; it answers nothing (the
import goes on as it would) and is removed when the run stops. Left out: the
standard library, taskflow itself, private top-level names; at most
:data:`MAX_MODULES` names a run. ``TASKFLOW_PRELOAD=0`` turns it off.
"""
from __future__ import annotations

import os
import sys
import types
from typing import TYPE_CHECKING, Any, Callable

from ...wire import messages as M

if TYPE_CHECKING:
    from ...providers.handle import NodeHandle

MAX_MODULES = 64        # names a run sends at most
# (pycompss: under --compat pycompss, taskflow's own layer, which a worker aliases only when
# a compat task's function loads there (compat.importhook); before that, the name is not
# the layer, or is a real PyCOMPSs installed on the node)
_STDLIB = frozenset(sys.stdlib_module_names) | {"__main__", "taskflow", "pycompss"}


def wanted(name: str) -> bool:
    """A module worth importing ahead on the nodes (not the standard library, not ours)."""
    top = name.partition(".")[0]
    return bool(top) and top not in _STDLIB and not top.startswith("_")


class Preload:
    """The names learned, and how many of them each node was sent (loop thread)."""

    def __init__(self, wake: Callable[[], None]) -> None:
        self.names: list[str] = []
        self._known: set[str] = set()
        self.changed = False        # names (or nodes) the nodes have not had: a round sends
        self._wake = wake
        self._sent: dict[NodeHandle, int] = {}
        self._finder: _MainImports | None = None

    # -- any thread ------------------------------------------------------------------------
    def begin(self) -> None:
        """The run starts: the modules ``__main__`` has already, then its imports as made."""
        if os.environ.get("TASKFLOW_PRELOAD", "1") == "0":
            return
        for name in main_modules():
            self.add(name, wake=False)
        if self.changed:
            self._wake()
        self._finder = _MainImports(self.add)
        sys.meta_path.insert(0, self._finder)

    def end(self) -> None:
        finder, self._finder = self._finder, None
        if finder is not None:
            try:
                sys.meta_path.remove(finder)
            except ValueError:
                pass

    def add(self, name: str, wake: bool = True) -> None:
        if name in self._known or len(self.names) >= MAX_MODULES or not wanted(name):
            return
        self._known.add(name)
        self.names.append(name)
        self.changed = True
        if wake:
            self._wake()

    # -- loop thread -----------------------------------------------------------------------
    def frames(self, nodes: list[NodeHandle]) -> list[tuple[NodeHandle, M.Preload]]:
        """What each live node has not been sent yet."""
        self.changed = False            # (first: a name added meanwhile makes another round)
        names = self.names[:]
        out = []
        sent = self._sent
        for node in nodes:
            if node.alive:
                n = sent.get(node, 0)
                if n < len(names):
                    sent[node] = len(names)
                    out.append((node, M.Preload(names[n:])))
        return out

    def node_joined(self) -> None:
        if self.names:
            self.changed = True


def main_modules() -> list[str]:
    """The modules a script run as ``__main__`` refers to now: its imported modules, and
    those of the classes and functions it imported from them (``from m import f``)."""
    main = sys.modules.get("__main__")
    if main is None or getattr(main, "__spec__", None) is not None:
        return []           # (``python -m tool``: a tool's module, not a script)
    names: list[str] = []
    for value in list(vars(main).values()):
        if isinstance(value, types.ModuleType):
            name = value.__name__
        elif isinstance(value, (type, types.FunctionType, types.BuiltinFunctionType)):
            name = getattr(value, "__module__", None) or ""
        else:
            continue
        if name and name not in names and sys.modules.get(name) is not None:
            names.append(name)
    return names


class _MainImports:
    """A ``sys.meta_path`` finder that finds nothing: it notes the modules that
    ``__main__``'s own code imports (not those the imported modules import in turn)."""

    def __init__(self, note: Callable[[str], None]) -> None:
        self.note = note

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> None:
        if wanted(fullname):
            f = sys._getframe(1)
            while f is not None and f.f_code.co_filename.startswith("<frozen importlib"):
                f = f.f_back        # type: ignore[assignment]
            if f is not None and f.f_globals.get("__name__") == "__main__":
                self.note(fullname)
        return None

    def invalidate_caches(self) -> None:
        pass
