"""The data registry: user objects, files and directories -> their versions.

Only data that tasks *write* needs an entry: an object passed INOUT, a file
passed as FILE_IN/OUT/INOUT. Plain IN values are snapshots and never enter
the registry. Each entry keeps its latest version (a :class:`Future`); a
read depends on that version, a write makes a new one, so WAR and WAW never
order tasks. File versions live under the run's data directory and keep their
names (:meth:`Registry.new_file_version`); the last version is copied to the
user's path on ``wait_on_file`` and ``taskflow.open``, and moved there (a
rename: no task reads it any more) on ``barrier`` and at the end of the run.
"""
from __future__ import annotations

import errno
import itertools
import os
from typing import TYPE_CHECKING, Any, Iterator, Protocol

from ..future import FINISHED, Future, FutureHost

if TYPE_CHECKING:
    from .task import Task

OBJ, FILE, DIR = "object", "file", "directory"


class GraphHost(FutureHost, Protocol):
    """The runtime, as the graph builds on it: ids, and the registry of written data."""

    tids: Iterator[int]         # task ids
    dids: Iterator[int]         # data (version) ids
    registry: Registry

    def new_did(self) -> int:
        """The next data id."""

    def stream_known(self, handle: Any) -> None:
        """A stream given to a call, before the task's copy of it is made (numbered)."""

    def stream_attach(self, task: Task, uses: list[tuple[Any, bool, str]]) -> None:
        """``task`` was called with streams: (handle, produces, parameter)."""


class DataItem:
    __slots__ = ("kind", "key", "obj", "path", "latest", "nversions", "readers_v0",
                 "concurrent", "materialized", "last_done")

    def __init__(self, kind: str, key: Any, latest: Future, obj: Any = None,
                 path: str | None = None) -> None:
        self.kind = kind
        self.key = key
        self.obj = obj              # objects: keeps the user's object alive (stable id)
        self.path = path            # files/dirs: the user's absolute path
        self.latest = latest        # the newest version
        self.nversions = 0
        self.readers_v0: list[Task] = []  # tasks reading the user's own file in place
        # (base version, [futures]) of a CONCURRENT run
        self.concurrent: tuple[Future, list[Future]] | None = None
        self.materialized: Future | None = None
        self.last_done: Future | None = None     # the newest version a task finished writing


class Registry:
    # False for a plan (taskflow.debugging.planning): files stay where they are, the
    # program's waits and deletes do not touch the user's paths
    puts_in_place = True

    def __init__(self, data_dir: str) -> None:
        self.data_dir = data_dir
        self.objects: dict[int, DataItem] = {}
        self.files: dict[str, DataItem] = {}
        # the user's folders that versions were written for -> their number in the store
        # (new_file_version); one entry per folder, not per file
        self.folders: dict[str, int] = {}
        self._numbers = itertools.count()      # (a folder forgotten keeps its number used)

    # -- objects -------------------------------------------------------------
    def object_item(self, obj: Any) -> DataItem | None:
        return self.objects.get(id(obj)) if self.objects else None

    def track_object(self, obj: Any, first: Future) -> DataItem:
        item = DataItem(OBJ, id(obj), first, obj=obj)
        first.version_of(item)
        self.objects[id(obj)] = item
        return item

    def forget_object(self, obj: Any) -> DataItem | None:
        item = self.objects.pop(id(obj), None)
        if item is not None:        # the item and its versions refer to each other: untie
            item.latest.untie()
            if item.concurrent is not None:
                for f in item.concurrent[1]:
                    f.untie()
                item.concurrent = None
        return item

    # -- files ---------------------------------------------------------------
    def file_item(self, path: str) -> DataItem | None:
        return self.files.get(path)

    def track_file(self, path: str, kind: str, rt: GraphHost) -> DataItem:
        """Enter a user path; version 0 is the file as it is now (may not exist)."""
        v0 = Future(rt, None, rt.new_did())
        item = DataItem(kind, path, v0, path=path)
        v0.user_version(item)
        item.materialized = v0
        self.files[path] = item
        return item

    def new_file_version(self, item: DataItem, fut: Future, private: bool = False) -> str:
        """The path of ``fut``, a new version of the file or directory ``item``, where its
        task writes it: under the store, with the name it has at the user's path.

        Version ``n`` of every file of one of the user's folders goes to the store's
        folder ``f<k>v<n>`` (``k`` numbers the user's folders): files that sit together
        at the user's paths sit together there, and a run writing thousands of files
        makes one folder, not one each (a folder costs the node several times a file's
        creation on ext4). A path is used once: (folder, version, name) is a version of
        one item, and an item forgotten (``delete_file``) gets its folder a new number
        before its versions count from 1 again. ``private``: a folder of its own,
        ``d<data id>v<n>``, for a task whose output folder is mounted into a container
        (it sees nothing else of the store)."""
        assert item.path is not None        # a file's or directory's item
        item.nversions += 1
        name = os.path.basename(item.path)
        if private:
            folder = f"d{fut._did}v{item.nversions}"
        else:
            key = _folder_key(item.path)
            k = self.folders.get(key)
            if k is None:
                k = self.folders[key] = next(self._numbers)
            folder = f"f{k}v{item.nversions}"
        path = os.path.join(self.data_dir, folder, name or "data")
        fut.version_of(item, path)
        item.latest = fut
        return path

    def forget_file(self, path: str) -> DataItem | None:
        item = self.files.pop(path, None)
        if item is not None:        # untie the item from the versions it refers to
            if item.nversions:      # its next item's versions count from 1: a new folder
                self.folders.pop(_folder_key(path), None)
            item.latest.untie()
            if item.materialized is not None:
                item.materialized.untie()
            item.readers_v0 = []
        return item


def _folder_key(path: str) -> str:
    """The user's folder whose files' versions share store folders with ``path``'s (the
    root's items, named "data" in the store, have a key of their own)."""
    return os.path.dirname(path) if os.path.basename(path) else path + "\0"


def materialize(item: DataItem, finished: bool = False, move: bool = False) -> str | None:
    """Put the latest version of a file/dir at the user's path (atomically); the version's
    path when it was moved there (else None).

    ``finished``: the newest version a task finished writing, when newer
    writers never ran (an interrupted run).
    ``move``: no task will read the version any more (the run is idle and the
    file goes back to the program), so a file is renamed into place instead of
    copied (one system call instead of a dozen and the data; a copy when the
    two paths are on different filesystems). A resumable run's log names the
    version in the run's store: it is told where the version went (runtime).
    """
    v: Future | None = item.latest
    if finished and v is not None and v._state != FINISHED:
        v = item.last_done
    if v is None or v is item.materialized or v._path is None or v._path == item.path:
        return None
    if v._exception is not None:
        return None     # a failed writer: leave the user's file as it was
    target = item.path
    assert target is not None           # a file's or directory's item
    parent = os.path.dirname(target) or "."
    was = v._path
    if move and item.kind != DIR:
        # the rename first: both ends are nearly always there (one call instead of three)
        try:
            try:
                os.replace(was, target)
            except FileNotFoundError:
                if not os.path.exists(was):
                    return None         # an ignored writer: the user's file stays as it was
                os.makedirs(parent, exist_ok=True)  # a new folder (or the user's went away)
                os.replace(was, target)
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                raise
        else:
            v.moved_to(target)
            item.materialized = v
            return was
    if not os.path.exists(was):
        return None     # an ignored writer: leave the user's file as it was
    import shutil       # (here: a copy across filesystems is rare; their imports are not cheap)
    import tempfile
    os.makedirs(parent, exist_ok=True)
    if item.kind == DIR:
        tmp = tempfile.mkdtemp(prefix=".taskflow-", dir=parent)
        os.rmdir(tmp)
        shutil.copytree(v._path, tmp, symlinks=True)
        if os.path.isdir(target):
            old = tempfile.mkdtemp(prefix=".taskflow-old-", dir=parent)
            os.rmdir(old)
            os.replace(target, old)
            os.replace(tmp, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, target)
    else:
        fd, tmp = tempfile.mkstemp(prefix=".taskflow-", dir=parent)
        os.close(fd)
        try:
            shutil.copy2(v._path, tmp)
            os.replace(tmp, target)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
    item.materialized = v
    return None
