"""File staging for nodes that do not share the master's filesystem.

A node with ``shared_fs: false`` keeps file versions under its own data
directory (``<working_dir>/taskflow-data/<run id>/``): a master path below
the run's data directory maps to the same relative path there, and a user's
own file (version 0) maps to ``in/<hash>/<name>``. The dispatcher hands such
a node's file references to :meth:`Stager.wire_refs`, which translates them.

Policy (documented in docs/guide/ssh.md):
- **in**: a FILE_IN / FILE_INOUT / DIRECTORY_IN version the node does not
  have yet is uploaded over SFTP *before* the task is sent; meanwhile the
  task goes back to the ready queue and the loop never blocks.
- **out**: FILE_OUT / FILE_INOUT versions a task wrote are brought back to
  the master eagerly, as soon as the task ends and before its successors are
  released. So the master always holds every finished file version: other
  nodes, ``wait_on_file`` and the end of the run find it locally, and losing
  the node later loses no file. The node keeps its copy too, so successors
  placed there (locality prefers them) need no upload.
All transfers run on one thread per node, over the node's own SSH connection.
"""
from __future__ import annotations

import functools
import hashlib
import logging
import os
import queue
import stat
import threading
from typing import TYPE_CHECKING, Any, Callable, Protocol

from ..wire import messages as M

if TYPE_CHECKING:
    from ..future import Future
    from ..graph.task import Task, TaskRef
    from .handle import NodeHandle

log = logging.getLogger(__name__)


class StageHost(Protocol):
    """The runtime's side of staging (the dispatcher): it owns the tasks' fate."""

    def ensure(self, node: NodeHandle, fut: Future, push: list[Future], task: Task) -> bool:
        """Make sure ``node`` gets value ``fut`` (pushed along, or fetched first: False)."""

    def send_values(self, node: NodeHandle, push: list[Future], frames: list[Any]) -> None:
        """Send ``push`` with this round's work (the node holds them from then on)."""

    def staged_in(self, task: Task, node: NodeHandle, futs: list[Future],
                  err: M.ErrorInfo | None) -> None:
        """Inputs of ``task`` are on ``node`` now (or could not be put there: ``err``)."""

    def brought_back(self, task: Task, node: NodeHandle, outputs: list[M.Output],
                     files: list[Future], err: M.ErrorInfo | None) -> None:
        """The files ``task`` wrote on ``node`` are on the master now (or lost: ``err``)."""


class Stager:
    def __init__(self, node: NodeHandle, client: Any, local_root: str, remote_root: str) -> None:
        self.node = node
        self.client = client
        self.local_root = local_root.rstrip("/")
        self.remote_root = remote_root.rstrip("/")
        self.present: set[int] = set()      # data ids of the versions the node has
        self.host: StageHost | None = None
        self.sftp: Any = None
        self.dirs: set[str] = set()
        self.q: queue.Queue[Callable[[], None] | None] = queue.Queue()
        self.n_in = self.n_out = 0
        self.bytes_in = self.bytes_out = 0
        self.thread = threading.Thread(target=self._work, daemon=True,
                                       name=f"taskflow-stage-{node.name}")
        self.thread.start()

    def remote(self, path: str) -> str:
        lr = self.local_root
        if lr and path.startswith(lr + "/"):
            return self.remote_root + path[len(lr):]
        h = hashlib.blake2b(path.encode(), digest_size=6).hexdigest()
        return f"{self.remote_root}/in/{h}/{os.path.basename(path.rstrip('/')) or 'data'}"

    # -- loop thread, runtime lock held ------------------------------------------
    def wire_refs(self, host: StageHost, node: NodeHandle, task: Task, refs: list[TaskRef],
                  frames: list[Any]) -> list[M.RefWire] | None:
        """The dispatcher's ``_wire_refs`` for this node: paths translated, inputs staged."""
        self.host = host
        need: list[tuple[Future, str, str]] = []
        out: list[Any] = []     # RefWire, or None where a value goes (filled in below)
        for path, kind, obj in refs:
            if kind == M.REF_FILE:
                out.append((path, kind, self._need(obj, need)))
            elif kind == M.REF_FILE_OUT or kind == M.REF_DIR_OUT:
                out.append((path, kind, self.remote(obj._path)))
            elif kind == M.REF_FILE_INOUT or kind == M.REF_DIR_INOUT:
                old, new = obj
                out.append((path, kind, (self._need(old, need), self.remote(new._path))))
            elif kind == M.REF_VALUE or kind == M.REF_PICKLED:
                out.append(None)
            else:
                out.append((path, kind, self.remote(obj._path)))
        if need:                # the task waits (the dispatcher keeps it ready) for the upload
            self.q.put(functools.partial(self._stage_in, task, need))
            return None
        push: list[Future] = []
        for i, (path, kind, obj) in enumerate(refs):
            if kind == M.REF_VALUE:
                if not host.ensure(node, obj, push, task):
                    return None
                out[i] = (path, kind, obj._did)
            elif kind == M.REF_PICKLED:
                blob, futs = obj
                for f in futs:
                    if not host.ensure(node, f, push, task):
                        return None
                out[i] = (path, kind, (blob, [f._did for f in futs]))
        if push:
            host.send_values(node, push, frames)
        return out

    def _need(self, fut: Future, need: list[tuple[Future, str, str]]) -> str:
        lp = fut._path
        assert lp is not None           # a file version
        rp = self.remote(lp)
        if fut._did not in self.present:
            need.append((fut, lp, rp))
        return rp

    def defer(self, task: Task, outputs: list[M.Output]) -> bool:
        """A task ended OK here: bring its file outputs back first (True if it has any)."""
        files = [e.version for e in task.inouts if e.kind != M.OUT_OBJECT] if task.inouts else None
        if not files:
            return False
        self.q.put(functools.partial(self._bring_back, task, outputs, files))
        return True

    # -- the staging thread ------------------------------------------------------------
    def _work(self) -> None:
        while True:
            job = self.q.get()
            if job is None:
                return
            try:
                job()
            except Exception:  # noqa: BLE001 - never kill the thread
                log.exception("staging on node %s failed", self.node.name)

    def _sftp(self) -> Any:
        if self.sftp is None:
            self.sftp = self.client.open_sftp()
        return self.sftp

    def _stage_in(self, task: Task, need: list[tuple[Future, str, str]]) -> None:
        err = None
        try:
            for fut, lp, rp in need:
                if fut._did in self.present:
                    continue
                if not os.path.exists(lp):
                    raise FileNotFoundError(f"{lp} (version of {fut._item.path if fut._item else lp})"
                                            f" is not on the master")
                self._put(lp, rp)
                self.present.add(fut._did)
                self.n_in += 1
        except FileNotFoundError as exc:
            err = M.ErrorInfo("StagingError",
                              f"cannot stage a file to node {self.node.name}: {exc}", "", None)
        except OSError as exc:
            err = _disk_full(exc, f"staging {lp} to node {self.node.name}", rp) or \
                M.ErrorInfo("NodeLost", f"staging a file to node {self.node.name} failed: "
                                        f"{exc!r}", "", None)
        except Exception as exc:  # noqa: BLE001 - the node is probably gone
            err = M.ErrorInfo("NodeLost", f"staging a file to node {self.node.name} failed: "
                              f"{exc!r}", "", None)
        assert self.host is not None
        self.host.staged_in(task, self.node, [fut for fut, _, _ in need], err)

    def _bring_back(self, task: Task, outputs: list[M.Output], files: list[Future]) -> None:
        err = None
        try:
            for fut in files:
                assert fut._path is not None    # a file version
                self._get(self.remote(fut._path), fut._path)
                self.present.add(fut._did)
                self.n_out += 1
        except Exception as exc:  # noqa: BLE001
            err = (_disk_full(exc, f"bringing {fut._path} back from node {self.node.name}",
                              fut._path) if isinstance(exc, OSError) else None) or \
                M.ErrorInfo("NodeLost", f"could not bring back {fut._path} from node "
                                        f"{self.node.name}: {exc!r}", "", None)
        assert self.host is not None
        self.host.brought_back(task, self.node, outputs, files, err)

    # -- SFTP ------------------------------------------------------------------------
    def _mkdirs(self, rdir: str) -> None:
        sftp = self._sftp()
        parts = rdir.strip("/").split("/")
        cur = ""
        for p in parts:
            cur += "/" + p
            if cur in self.dirs:
                continue
            try:
                sftp.stat(cur)
            except OSError:
                try:
                    sftp.mkdir(cur, 0o700)
                    sftp.chmod(cur, 0o700)      # user-only, whatever the remote umask
                except OSError:
                    sftp.stat(cur)   # made concurrently: fine; else raise
            self.dirs.add(cur)

    def _put(self, lp: str, rp: str) -> None:
        sftp = self._sftp()
        if os.path.isdir(lp):
            for root, _dirs, files in os.walk(lp):
                rel = os.path.relpath(root, lp)
                rroot = rp if rel == "." else f"{rp}/{rel}"
                self._mkdirs(rroot)
                for f in files:
                    sftp.put(os.path.join(root, f), f"{rroot}/{f}")
                    self.bytes_in += os.path.getsize(os.path.join(root, f))
            return
        self._mkdirs(os.path.dirname(rp))
        sftp.put(lp, rp)
        self.bytes_in += os.path.getsize(lp)

    def _get(self, rp: str, lp: str) -> None:
        sftp = self._sftp()
        st = sftp.stat(rp)
        if stat.S_ISDIR(st.st_mode):
            os.makedirs(lp, exist_ok=True)
            for a in sftp.listdir_attr(rp):
                self._get(f"{rp}/{a.filename}", os.path.join(lp, a.filename))
            return
        os.makedirs(os.path.dirname(lp), exist_ok=True)
        sftp.get(rp, lp)
        self.bytes_out += st.st_size or 0

    def close(self, cleanup: bool = True) -> None:
        """Stop the thread; remove the node's data directory of this run."""
        self.q.put(None)
        self.thread.join(10)
        try:
            if cleanup and self.client.get_transport() and self.client.get_transport().is_active():
                chan = self.client.get_transport().open_session(timeout=5)
                chan.exec_command(f"rm -rf -- '{self.remote_root}'")
                chan.recv_exit_status()
        except Exception:  # noqa: BLE001
            pass
        if self.sftp is not None:
            try:
                self.sftp.close()
            except Exception:  # noqa: BLE001
                pass


def _disk_full(exc: OSError, doing: str, path: str | None) -> M.ErrorInfo | None:
    """A full disk while a file version moved: the task's failure, naming the disk and the
    run's directory (not a lost node, which would send the task elsewhere to fail again)."""
    from ..journal.failure import describe, is_full
    if not is_full(exc):
        return None
    return M.ErrorInfo("DiskFull", f"{doing}: {describe('file version', path or '?', exc)}",
                       "", None)
