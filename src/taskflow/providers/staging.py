"""File staging for nodes that do not share the master's filesystem.

A node with ``shared_fs: false`` keeps file versions under its own data
directory (``<working_dir>/taskflow-data/<run id>/``): a master path below
the run's data directory maps to the same relative path there, and a user's
own file (version 0) maps to ``in/<hash>/<name>``. The dispatcher hands such
a node's file references to :meth:`Stager.wire_refs`, which translates them.

Policy (documented in README):
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

import hashlib
import os
import queue
import stat
import threading
from typing import Any

from ..graph import task as T
from ..wire import protocol as P


class Stager:
    def __init__(self, node: Any, client: Any, local_root: str, remote_root: str) -> None:
        self.node = node
        self.client = client
        self.local_root = local_root.rstrip("/")
        self.remote_root = remote_root.rstrip("/")
        self.present: set = set()      # data ids of the versions the node has
        self.rt: Any = None
        self.sftp: Any = None
        self.dirs: set = set()
        self.q: queue.Queue = queue.Queue()
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
    def wire_refs(self, disp: Any, node: Any, task: Any, refs: list, frames: list) -> list | None:
        """The dispatcher's ``_wire_refs`` for this node: paths translated, inputs staged."""
        self.rt = disp.rt
        need: list = []
        out: list = []
        for path, kind, obj in refs:
            if kind == "f":
                out.append((path, "f", self._need(obj, need)))
            elif kind == "fo" or kind == "do":
                out.append((path, kind, self.remote(obj._path)))
            elif kind == "fio" or kind == "dio":
                out.append((path, kind, (self._need(obj[0], need), self.remote(obj[1]._path))))
            elif kind == "r" or kind == "p":
                out.append(None)
            else:
                out.append((path, kind, self.remote(obj._path)))
        if need:
            task.state = T.READY
            self.q.put(("in", task, need))
            return None
        push: list = []
        for i, (path, kind, obj) in enumerate(refs):
            if kind == "r":
                if not disp._ensure(node, obj, push, task):
                    return None
                out[i] = (path, "r", obj._did)
            elif kind == "p":
                blob, futs = obj
                for f in futs:
                    if not disp._ensure(node, f, push, task):
                        return None
                out[i] = (path, "p", (blob, [f._did for f in futs]))
        if push:
            frames.insert(len(frames) - 1, (P.DATA, push))
        return out

    def _need(self, fut: Any, need: list) -> str:
        rp = self.remote(fut._path)
        if fut._did not in self.present:
            need.append((fut, fut._path, rp))
        return rp

    def defer(self, task: Any, outputs: list) -> bool:
        """A task ended OK here: bring its file outputs back first (True if it has any)."""
        files = [e[3] for e in task.inouts if e[1] in ("f", "d")] if task.inouts else None
        if not files:
            return False
        self.q.put(("out", task, outputs, files))
        return True

    # -- the staging thread ------------------------------------------------------------
    def _work(self) -> None:
        while True:
            job = self.q.get()
            if job is None:
                return
            try:
                if job[0] == "in":
                    self._stage_in(*job[1:])
                else:
                    self._bring_back(*job[1:])
            except Exception as exc:  # noqa: BLE001 - never kill the thread
                import traceback
                traceback.print_exc()
                print(f"taskflow: staging on node {self.node.name} failed: {exc!r}")

    def _sftp(self) -> Any:
        if self.sftp is None:
            self.sftp = self.client.open_sftp()
        return self.sftp

    def _stage_in(self, task: Any, need: list) -> None:
        rt = self.rt
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
            err = ("StagingError", f"cannot stage a file to node {self.node.name}: {exc}")
        except Exception as exc:  # noqa: BLE001 - the node is probably gone
            err = ("NodeLost", f"staging a file to node {self.node.name} failed: {exc!r}")
        cbs: list = []
        from ..runtime import outcomes
        with rt.lock:
            if task.state == T.READY:
                if err is None:
                    for fut, _, _ in need:
                        fut._holders = (fut._holders or set()) | {self.node.name}
                    rt.scheduler.push(task)
                elif err[0] == "NodeLost" or not self.node.alive:
                    task.excluded = (task.excluded or set()) | {self.node.name}
                    rt.scheduler.push(task)
                else:
                    task.t_start = task.t_end = __import__("time").time()
                    outcomes.task_failed(rt, task, P.ERROR, (err[0], err[1], "", None),
                                         self.node, cbs)
        self._after(cbs)

    def _bring_back(self, task: Any, outputs: list, files: list) -> None:
        rt = self.rt
        err = None
        try:
            for fut in files:
                self._get(self.remote(fut._path), fut._path)
                self.present.add(fut._did)
                self.n_out += 1
        except Exception as exc:  # noqa: BLE001
            err = f"could not bring back {fut._path} from node {self.node.name}: {exc!r}"
        cbs: list = []
        from ..runtime import outcomes
        with rt.lock:
            if err is None:
                for fut in files:
                    fut._holders = (fut._holders or set()) | {self.node.name}
                outcomes.task_done(rt, task, outputs, self.node, cbs)
            else:
                outcomes.task_failed(rt, task, P.LOST, ("NodeLost", err, "", None), self.node, cbs)
        self._after(cbs)

    def _after(self, cbs: list) -> None:
        self.rt.dispatcher.wake()
        for fn, fut in cbs:
            try:
                fn(fut)
            except Exception:  # noqa: BLE001
                import traceback
                traceback.print_exc()

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
                    sftp.mkdir(cur)
                except OSError:
                    sftp.stat(cur)   # made concurrently: fine; else raise
            self.dirs.add(cur)

    def _put(self, lp: str, rp: str) -> None:
        sftp = self._sftp()
        if os.path.isdir(lp):
            for root, dirs, files in os.walk(lp):
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
