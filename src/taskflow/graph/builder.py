"""Turn one call of a task function into a :class:`Task` and its dependencies.

This is the first half of the hot path, so the common case (plain values and
futures as positional arguments) is a short loop over the arguments. Mutable
IN arguments are pickled here, at call time: that is the snapshot the
contract promises, and it is where an unpicklable argument is reported.
Futures nested anywhere inside an argument become dependencies through the
pickler's persistent ids.
"""
from __future__ import annotations

import io
import os
import pickle
import time
from collections import ChainMap
from typing import TYPE_CHECKING, Any

import cloudpickle

from ..wire import messages as M
from ..wire import values
from ..wire.argpath import set_path
from ..wire.streams import Stream
from .recorded import snapshot_ref
from .param import COLLECTION_KIND, DIRECTORY_KIND, FILE_KIND, OBJECT_KIND, STREAM_KIND, Param
from ..errors import UsageError
from ..future import Future
from .registry import DIR, FILE, GraphHost
from .task import Inout, Task

if TYPE_CHECKING:
    from ..wire.messages import ArgPath
    from .registry import DataItem
    from .spec import TaskSpec
    from .task import TaskRef

SCALARS = frozenset({int, float, str, bool, type(None), bytes, complex})


class _SnapshotPickler(pickle.Pickler):
    def __init__(self, buf: io.BytesIO, found: list[Future], objects: dict[int, DataItem]) -> None:
        super().__init__(buf, pickle.HIGHEST_PROTOCOL)
        self.found = found
        self.objects = objects

    def persistent_id(self, obj: Any) -> Any:
        if type(obj) is Future:
            self.found.append(obj)
            return obj._did
        if self.objects:
            item = self.objects.get(id(obj))
            if item is not None and item.obj is obj:
                self.found.append(item.latest)
                return item.latest._did
        return None


class _OpenFile(TypeError):
    pass


def _refuse_file(f: Any) -> Any:
    std = values.std_stream(f)          # (the worker's own stream in its place)
    if std is not None:
        return std
    raise _OpenFile(f"{f!r} would reach the task as a copy of its text (a StringIO), "
                    f"detached from the file; pass its path instead (a parameter declared "
                    f"FILE_IN, or FILE_OUT to write it)")


class _CloudSnapshotPickler(cloudpickle.Pickler):  # type: ignore[misc]  # cloudpickle: no types
    # cloudpickle would send an open text file as a StringIO of its rest: said instead
    dispatch_table = ChainMap({io.TextIOWrapper: _refuse_file}, cloudpickle.Pickler.dispatch_table)

    def __init__(self, buf: io.BytesIO, found: list[Future], objects: dict[int, DataItem]) -> None:
        super().__init__(buf, pickle.HIGHEST_PROTOCOL)
        self.found = found
        self.objects = objects

    persistent_id = _SnapshotPickler.persistent_id


def snapshot(value: Any, objects: dict[int, DataItem], where: str) -> tuple[bytes, list[Future]]:
    """Pickle ``value`` now; return the bytes and the futures found inside."""
    found: list[Future] = []
    buf = io.BytesIO()
    try:
        _SnapshotPickler(buf, found, objects).dump(value)
        blob = buf.getvalue()
        if b"__main__" not in blob:
            return blob, found
        # a class or function of the script: plain pickle refers to it by name, which a
        # worker (whose __main__ is the agent) cannot look up; cloudpickle sends it by value
        raise pickle.PicklingError("refers to __main__")
    except Exception:
        found.clear()
        buf = io.BytesIO()
        try:
            _CloudSnapshotPickler(buf, found, objects).dump(value)
        except _OpenFile as exc:
            raise UsageError(f"{where}: the argument holds an open file: {exc}.") from None
        except Exception as exc:
            raise UsageError(
                f"{where}: the argument (a {type(value).__name__}) cannot be pickled, so it "
                f"cannot be sent to a worker: {type(exc).__name__}: {exc}. Pass a picklable "
                f"value, or create the object inside the task.") from None
    return buf.getvalue(), found


class Builder:
    """Builds tasks for one runtime (holds no per-call state)."""

    def __init__(self, rt: GraphHost) -> None:
        self.rt = rt
        self.registry = rt.registry

    def plain(self, spec: TaskSpec, args: tuple[Any, ...]) -> tuple[Task, Any] | None:
        """The most common call, scalars only, nothing to track: (task, value), else None.

        Touches no state of the builder, so callers need not hold the submit lock.
        """
        if len(args) != len(spec.names) or not spec.plain:
            return None
        for a in args:
            if type(a) not in SCALARS:
                return None
        rt = self.rt
        did = next(rt.dids)
        task = Task(next(rt.tids), spec, args, None, None, (), None, None, time.time())
        out = Future(rt, task, did)         # (the task first: its future names it as producer)
        task.outputs = [out]
        return task, ((out,) if spec.returns_tuple else out)

    def build(self, spec: TaskSpec, args: tuple[Any, ...], kwargs: dict[str, Any]
              ) -> tuple[Task, list[Future], Any]:
        """Return (task, dependencies, value to give back to the caller).

        The caller has tried :meth:`plain` first (the runtime does, outside the
        submit lock).
        """
        rt = self.rt
        names = spec.names
        nargs = len(args)
        self._v0: list[DataItem] = []
        self._streams: list[tuple[Stream, bool, str]] | None = None
        self._deleted: list[Any] | None = None       # IN_DELETE objects the call forgets
        self._slots: list[tuple[Any, Any, Future]] | None = None  # (_slot_write)
        if kwargs or nargs != len(names) or spec.varargs:
            self._check_binding(spec, args, kwargs)
        refs: list[TaskRef] | None = None
        deps: list[Future] = []
        inouts: list[Inout] | None = None
        objects = self.registry.objects
        special = spec.special
        skip = {pos for pos, _, _ in special if pos is not None} if special else ()
        argv: Any = args
        for i in range(nargs):
            a = args[i]
            t = type(a)
            if t in SCALARS or i in skip:
                continue
            ref = self._in_value(a, t, (i,), spec, objects, deps, i)
            if ref is not None:
                if refs is None:
                    refs = []
                    argv = list(args)
                refs.append(ref)
                argv[i] = None
        kw = kwargs
        if kwargs:
            kw = dict(kwargs)
            for k, a in kwargs.items():
                t = type(a)
                if t in SCALARS or (special and k in spec.params):
                    continue
                ref = self._in_value(a, t, (k,), spec, objects, deps, k)
                if ref is not None:
                    if refs is None:
                        refs = []
                    refs.append(ref)
                    kw[k] = None
        if special:
            if argv is args:
                argv = list(args)
            if kw is kwargs:
                kw = dict(kwargs) if kwargs else {}
            if refs is None:
                refs = []
            inouts = []
            path: ArgPath
            for pos, pname, param in special:
                if pos is not None and pos < nargs:
                    value, path = args[pos], (pos,)
                elif pname in kwargs:
                    value, path = kwargs[pname], (pname,)
                elif pname in spec.defaults:
                    value, path = spec.defaults[pname], (pname,)
                    kw[pname] = value
                else:
                    continue
                self._access(value, param, path, spec, pname, refs, deps, inouts, argv, kw)
        tid = next(rt.tids)
        nout = spec.nout
        dids = rt.dids
        task = Task(tid, spec, argv, kw or None, refs or None, (), inouts or None,
                    deps or None, time.time())
        # (the task first: its futures name it as their producer)
        if nout == 1:
            outputs = [Future(rt, task, next(dids))]
        else:
            outputs = [Future(rt, task, next(dids)) for _ in range(nout)]
        task.outputs = outputs
        for item in self._v0:
            item.readers_v0.append(task)
        if self._streams is not None:   # (no dependency: the task and the stream meet there)
            rt.stream_attach(task, self._streams)
        if self._deleted:                   # IN_DELETE: this task has read it, then it is gone
            for obj in self._deleted:
                self.registry.forget_object(obj)
        if inouts:
            for entry in inouts:
                entry.version.made_by(task)
        if self._slots is not None:         # (now that nothing can refuse the call)
            for container, key, fut in self._slots:
                container[key] = fut
        value = tuple(outputs) if spec.returns_tuple else outputs[0]
        return task, deps, value

    # -- plain IN values ----------------------------------------------------------
    def _in_value(self, a: Any, t: type, path: ArgPath, spec: TaskSpec, objects: dict[int, DataItem],
                  deps: list[Future], pname: Any) -> TaskRef | None:
        if t is Future:
            item = objects.get(id(a)) if objects else None
            v = item.latest if item is not None and item.obj is a else a
            deps.append(v)
            return (path, M.REF_VALUE, v)
        if objects:
            item = objects.get(id(a))
            if item is not None and item.obj is a:
                v = item.latest
                deps.append(v)
                self._join_concurrent(item, deps)
                return (path, M.REF_VALUE, v)
        if (t is tuple or t is frozenset) and all(type(x) in SCALARS for x in a):
            return None
        if isinstance(a, Stream):
            where = self._where(spec, pname)
            name = where.split("'")[1]
            raise UsageError(
                f"{where}: {a!r} is a stream given as an ordinary (IN) argument; declare "
                f"the parameter STREAM_IN to poll it (@task({name}=STREAM_IN)) or "
                f"STREAM_OUT to publish to it")
        blob, found = snapshot(a, objects, self._where(spec, pname))
        deps.extend(found)
        return (path, M.REF_PICKLED, snapshot_ref(a, blob, found))

    @staticmethod
    def _join_concurrent(item: DataItem, deps: list[Future]) -> None:
        if item.concurrent is not None:
            deps.extend(item.concurrent[1])
            item.concurrent = None

    @staticmethod
    def _where(spec: TaskSpec, pname: Any) -> str:
        if isinstance(pname, int):
            pname = spec.names[pname] if pname < len(spec.names) else f"*{spec.varargs}[{pname}]"
        return f"task {spec.name}, parameter '{pname}'"

    @staticmethod
    def _check_binding(spec: TaskSpec, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        try:
            spec.signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise UsageError(f"task {spec.name}: {exc} (signature {spec.name}{spec.signature})") \
                from None

    # -- declared parameters ---------------------------------------------------
    def _access(self, value: Any, param: Param, path: ArgPath, spec: TaskSpec,
                pname: str, refs: list[TaskRef], deps: list[Future], inouts: list[Inout],
                argv: list[Any], kw: dict[str, Any]) -> None:
        kind = param.kind
        if kind == OBJECT_KIND:
            if param.direction == "IN" or param.direction == "IN_DELETE":
                ref = self._in_value(value, type(value), path, spec, self.registry.objects,
                                     deps, pname)
                if ref is not None:
                    refs.append(ref)
                    set_path(argv, kw, path, None)
                if param.direction == "IN_DELETE" and self.registry.object_item(value) is not None:
                    if self._deleted is None:
                        self._deleted = []
                    self._deleted.append(value)
                return
            self._object_write(value, param, path, spec, pname, refs, deps, inouts, argv, kw)
        elif kind == FILE_KIND or kind == DIRECTORY_KIND:
            self._file(value, param, path, spec, pname, refs, deps, inouts, argv, kw)
        elif kind == COLLECTION_KIND:
            self._collection(value, param, path, spec, pname, refs, deps, inouts, argv, kw,
                             param.depth)
        elif kind == STREAM_KIND:
            if not isinstance(value, Stream):
                raise UsageError(
                    f"task {spec.name}, parameter '{pname}' is {param!r} but got a "
                    f"{type(value).__name__}: pass a taskflow.Stream (objects) or "
                    f"taskflow.FileStream(base_dir) (files), or declare the parameter "
                    f"otherwise (IN, FILE_IN, ...)")
            if self._streams is None:
                self._streams = []
            self.rt.stream_known(value)      # (the program's: numbered first)
            self._streams.append((value, param.direction == "OUT", pname))
            set_path(argv, kw, path, value.bound(pname))     # (its errors name pname)

    def _object_write(self, value: Any, param: Param, path: ArgPath, spec: TaskSpec,
                      pname: str, refs: list[TaskRef], deps: list[Future], inouts: list[Inout],
                      argv: list[Any], kw: dict[str, Any]) -> None:
        where = f"task {spec.name}, parameter '{pname}'"
        if type(value) in SCALARS or isinstance(value, (tuple, frozenset)):
            file = ""
            if isinstance(value, str):
                file = (f" If {value!r} is a file the task writes, declare it "
                        f"{pname}=FILE_{param.direction} (a directory: "
                        f"DIRECTORY_{param.direction}).")
            raise UsageError(
                f"{where} is {param.direction} but got a {type(value).__name__}, which cannot "
                f"change in place; return the new value instead (returns=...), or pass a "
                f"mutable object (list, dict, class instance).{file}")
        reg = self.registry
        rt = self.rt
        item = reg.object_item(value)
        if item is None or item.obj is not value:
            if type(value) is Future:
                first = value
            else:
                blob, found = snapshot(value, reg.objects, where)
                if found:
                    raise UsageError(f"{where}: an {param.direction} object may not contain "
                                     f"futures; wait_on() them first.")
                first = Future(rt, None, rt.new_did())
                first.finish(blob, [])       # (new: nobody waits on it)
            item = reg.track_object(value, first)
        direction = param.direction
        if direction == "CONCURRENT":
            if item.concurrent is None:
                item.concurrent = (item.latest, [])
            read = item.concurrent[0]
        else:
            self._join_concurrent(item, deps)
            read = item.latest
        if direction == "OUT":
            blob, _ = snapshot(value, {}, where)
            refs.append((path, M.REF_PICKLED, snapshot_ref(value, blob, [])))
        else:
            deps.append(read)
            refs.append((path, M.REF_VALUE, read))
        set_path(argv, kw, path, None)
        new = Future(rt, None, rt.new_did())
        new.version_of(item)
        item.latest = new
        if direction == "CONCURRENT":
            assert item.concurrent is not None      # set above
            item.concurrent[1].append(new)
        inouts.append(Inout(path, M.OUT_OBJECT, pname, new))

    def _file(self, value: Any, param: Param, path: ArgPath, spec: TaskSpec,
              pname: str, refs: list[TaskRef], deps: list[Future], inouts: list[Inout],
              argv: list[Any], kw: dict[str, Any]) -> None:
        is_dir = param.kind == DIRECTORY_KIND
        what = "directory" if is_dir else "file"
        where = f"task {spec.name}, parameter '{pname}'"
        if not isinstance(value, (str, os.PathLike)):
            raise UsageError(f"{where} is {param!r} ({what}) but got {value!r} (a "
                             f"{type(value).__name__}); pass a path (str or os.PathLike).")
        upath = os.path.abspath(os.fspath(value))
        reg = self.registry
        item = reg.file_item(upath)
        direction = param.direction
        reads = direction != "OUT"
        if item is None:
            if reads:
                ok = os.path.isdir(upath) if is_dir else os.path.isfile(upath)
                if not ok:
                    state = "does not exist" if not os.path.exists(upath) else \
                        f"is not a {what}"
                    raise UsageError(
                        f"{where} is {param!r} but {upath} {state} when the task is called, and "
                        f"no earlier task writes it. Create it first, fix the path, or declare "
                        f"the parameter as {'DIRECTORY' if is_dir else 'FILE'}_OUT.")
            else:
                _check_out_target(upath, is_dir, where, param)
            item = reg.track_file(upath, DIR if is_dir else FILE, self.rt)
        elif item.kind != (DIR if is_dir else FILE):
            raise UsageError(f"{where}: {upath} was used as a {item.kind} before and now as a {what}.")
        read = item.latest
        if reads:
            deps.append(read)
            if read._path == upath:
                self._v0.append(item)
        if direction == "IN":
            refs.append((path, M.REF_FILE, read))
        else:
            new = Future(self.rt, None, self.rt.new_did())
            # (a container gets its output's folder mounted: that folder is the version's own)
            reg.new_file_version(item, new, spec.container is not None)
            if direction == "OUT":
                refs.append((path, M.REF_DIR_OUT if is_dir else M.REF_FILE_OUT, new))
            else:
                refs.append((path, M.REF_DIR_INOUT if is_dir else M.REF_FILE_INOUT, (read, new)))
            inouts.append(Inout(path, M.OUT_DIR if is_dir else M.OUT_FILE, pname, new))
        set_path(argv, kw, path, None)

    def _collection(self, value: Any, param: Param, path: ArgPath, spec: TaskSpec,
                    pname: str, refs: list[TaskRef], deps: list[Future], inouts: list[Inout],
                    argv: list[Any], kw: dict[str, Any],
                    depth: int) -> None:
        where = f"task {spec.name}, parameter '{pname}'"
        copy: list[Any] | dict[Any, Any]
        if isinstance(value, (list, tuple)):
            copy = list(value)
            items: Any = enumerate(value)
        elif isinstance(value, dict):       # a dictionary collection: its values
            copy = dict(value)
            items = value.items()
        elif type(value) is Future:         # (its elements are not known until it is done)
            raise UsageError(f"{where} is {param!r} but got a Future (a task's result), "
                             f"whose elements cannot be followed before it is done; "
                             f"wait_on() it first, or declare the parameter IN (the task "
                             f"gets the value, a dependency like any future).")
        else:
            raise UsageError(f"{where} is {param!r} but got a {type(value).__name__}; "
                             f"pass a list (or tuple) of values, or a dict.")
        set_path(argv, kw, path, copy)
        leaf = Param(kind=param.elem_kind, direction=param.direction)
        objects = self.registry.objects
        slots = param.elem_kind == OBJECT_KIND and (param.direction == "OUT"
                                                    or param.direction == "INOUT")
        for j, elem in items:
            epath = path + (j,)
            # (a list the runtime follows, e.g. one a task wrote INOUT, is one object: its
            # newest version, not the master's old items; an empty one has no items to
            # follow: it is one object, whatever the task puts in it or in its place)
            if depth > 1 and isinstance(elem, (list, tuple, dict)) and elem and not (
                    objects and getattr(objects.get(id(elem)), "obj", None) is elem):
                self._collection(elem, param, epath, spec, f"{pname}[{j}]", refs, deps, inouts,
                                 argv, kw, depth - 1)
            elif slots and (type(elem) in SCALARS or isinstance(elem, (tuple, frozenset))):
                self._slot_write(value, j, elem, epath, spec, f"{pname}[{j}]", refs, deps,
                                 inouts, argv, kw, param.direction)
            else:
                self._access(elem, leaf, epath, spec, f"{pname}[{j}]", refs, deps, inouts,
                             argv, kw)

    def _slot_write(self, container: Any, key: Any, elem: Any, path: ArgPath, spec: TaskSpec,
                    pname: str, refs: list[TaskRef], deps: list[Future], inouts: list[Inout],
                    argv: list[Any], kw: dict[str, Any], direction: str) -> None:
        """An element of a written collection that cannot change in place (None, a number,
        a tuple...): the task's value for it (``out[i] = x``) takes its place in the
        collection, as a future, once the call is built (waited for like any other)."""
        if not isinstance(container, (list, dict)):
            raise UsageError(
                f"task {spec.name}, parameter '{pname}' is {direction} but is a "
                f"{type(elem).__name__} inside a {type(container).__name__}, which cannot "
                f"take the task's value in its place; pass a list (or a dict).")
        ref = self._in_value(elem, type(elem), path, spec, self.registry.objects, deps, pname)
        if ref is not None:
            refs.append(ref)
            set_path(argv, kw, path, None)
        new = Future(self.rt, None, self.rt.new_did())
        if self._slots is None:
            self._slots = []
        self._slots.append((container, key, new))
        inouts.append(Inout(path, M.OUT_OBJECT, pname, new))


def _check_out_target(upath: str, is_dir: bool, where: str, param: Param) -> None:
    """A FILE_OUT path that is a directory (or a DIRECTORY_OUT that is a file) would lose
    the task's output at the end of the run: say so when the task is called."""
    if is_dir:
        if os.path.exists(upath) and not os.path.isdir(upath):
            raise UsageError(
                f"{where} is {param!r} but {upath} is a file, not a directory: the task's "
                f"directory could not be put there. Remove the file, choose another path, or "
                f"declare the parameter as FILE_OUT.")
    elif os.path.isdir(upath):
        raise UsageError(
            f"{where} is {param!r} but {upath} is a directory: the file the task writes "
            f"could not be put there. Give the path of a file inside it (e.g. "
            f"{os.path.join(upath, 'out.txt')}), or declare the parameter as DIRECTORY_OUT.")
