"""``taskflow rerun RUN TASK_ID [--pdb]`` and ``taskflow.rerun(run, task_id)``: one task again,
here, with the inputs it had.

The inputs come from the record its executor wrote when it failed
(:mod:`taskflow.agent.executor.keepinputs`): its message (arguments, a
program's invocation), the values its references named, the file versions it
read (linked into the record's folder, used where the run's own are gone),
the function, and the node's ``sys.path``, directory and environment. The
files it writes (and a program's job logs) go to a scratch folder, never over
the run's. Whether it
fails the same way is said by comparing its error's type and text with the
recorded ones. ``--pdb`` stops at the raising frame (``pdb.post_mortem``).
"""
from __future__ import annotations

import os
import pickle
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any

from ..agent.executor.inputs import resolve_refs
from ..agent.executor.keepinputs import FORMAT, RECORD, RECORDS_MAX, VALUES_MAX, inputs_dir
from ..errors import RunNotFound, UsageError
from ..journal.reader import Journal, resolve_run
from ..wire import messages as M

KEEP_HINT = (f"records are written for failed tasks (the first {RECORDS_MAX} of each "
             f"executor, up to {VALUES_MAX // 2**20} MiB of values each); a large value "
             f"handed to its task without a copy is kept when the run's nodes have "
             f"TASKFLOW_KEEP_INPUTS=1 (`TASKFLOW_KEEP_INPUTS=1 taskflow run ...`)")


@dataclass
class Rerun:
    """How the task ended this time, against how it ended in the run."""

    task_id: int
    name: str
    recorded: tuple[str, str] | None      # (type, message) of the run's failure
    error: BaseException | None           # this time's (None: it ended well)
    scratch: str | None = None            # where it wrote its files and logs (None: nothing)

    @property
    def same(self) -> bool:
        """It failed the same way: same exception type, same first line of its text (what
        follows may name this rerun's own files, e.g. a program's logs)."""
        return self.error is not None and self.recorded is not None and \
            _type_name(self.error) == self.recorded[0] and \
            _first(str(self.error)) == _first(self.recorded[1])

    def describe(self) -> str:
        text = self._verdict()
        return text + (f"\nits files and logs: {self.scratch}" if self.scratch else "")

    def _verdict(self) -> str:
        was = f"{self.recorded[0]}: {self.recorded[1]}" if self.recorded else "no error"
        if self.error is None:
            return f"task {self.task_id} ({self.name}) ended well this time; in the run: {was}"
        now = f"{_type_name(self.error)}: {self.error}"
        if self.same:
            return f"task {self.task_id} ({self.name}) fails the same way: {now}"
        return f"task {self.task_id} ({self.name}) fails differently: {now} (in the run: {was})"


def _type_name(error: BaseException) -> str:
    """An error's type by name (a node's error carries its own: rerun_node.NodeError)."""
    return str(getattr(error, "type_name", type(error).__name__))


def _first(text: str) -> str:
    return text.split("\n", 1)[0]


def _record(run: str, task_id: int, root: str | None) -> tuple[str, dict[str, Any], str]:
    try:
        run_dir = resolve_run(run, root)
    except RunNotFound as exc:
        raise UsageError(f"taskflow rerun: run {run}: {exc}") from None
    path = os.path.join(inputs_dir(run_dir), RECORD.format(tid=task_id))
    name = "?"
    try:
        with Journal(run_dir) as j:
            row = j.task(task_id)
            state = row.get("state") if row else None
            name = row.get("name", "?") if row else "?"
            ntasks = sum(1 for _ in j.each_task()) if row is None else 0
    except Exception as exc:  # noqa: BLE001 - a cleaned or damaged run: say which
        raise UsageError(f"taskflow rerun: run {run}: its journal in {run_dir} cannot be read "
                         f"({exc}); was the run cleaned?") from None
    if row is None:
        raise UsageError(f"taskflow rerun: run {os.path.basename(run_dir)} has no task "
                         f"{task_id} ({ntasks} task(s) recorded; `taskflow tasks "
                         f"{os.path.basename(run_dir)}` lists them)")
    if not os.path.exists(path):
        if not os.path.isdir(run_dir):
            raise UsageError(f"taskflow rerun: the directory of run {run} ({run_dir}) is gone")
        raise UsageError(f"taskflow rerun: task {task_id} ({name}, {state}) of run "
                         f"{os.path.basename(run_dir)} has no record of its inputs in "
                         f"{inputs_dir(run_dir)} (a node without this machine's filesystem "
                         f"keeps it in its own copy of the run's directory): {KEEP_HINT}")
    with open(path, "rb") as f:
        rec = pickle.load(f)
    if not isinstance(rec, dict) or rec.get("format") != FORMAT:
        raise UsageError(f"taskflow rerun: {path} was written by another version of taskflow "
                         f"(record format {rec.get('format') if isinstance(rec, dict) else '?'}"
                         f", this one reads {FORMAT})")
    return run_dir, rec, name


def rerun(run: str, task_id: int, *, pdb: bool = False, run_dir: str | None = None,
          node: str | None = None, cluster: str | None = None) -> Rerun:
    """Run task ``task_id`` of run ``run`` (an id, a prefix, a path) again in this process
    with the inputs it had; ``pdb``: stop at the raising frame if it raises. ``node``: on
    that node of the cluster file (``cluster``, or the run's own) instead
    (:mod:`.rerun_node`). ``taskflow rerun RUN TASK`` is the same from a shell.

    Example (after a run whose task 3 failed)::

        import taskflow

        again = taskflow.rerun("latest", 3)                # the newest run's task 3
        print(again.describe())                           # failed the same way, or not
        print(again.same)                                 # True: same error type and text
    """
    where, rec, name = _record(run, int(task_id), run_dir)
    if node is not None:
        return _on_node(where, rec, name, int(task_id), node, cluster, pdb)
    msg = M.TaskMsg(*rec["msg"])
    if rec["func"] is None:
        raise UsageError(f"taskflow rerun: task {task_id}'s function could not be kept")
    for p in reversed(rec["sys_path"]):
        if p not in sys.path:
            sys.path.insert(0, p)
    from ..agent.executor.loop import _load_function
    func = _load_function(rec["func"])      # (by-value code named by its file again)
    scratch = tempfile.mkdtemp(prefix=f"taskflow-rerun-{task_id}-")
    refs, missing = _inputs(msg, rec, scratch)
    gone = [f"value d{did}" for did in rec["missing"]] + missing
    if gone:
        raise UsageError(f"taskflow rerun: task {task_id} ({name}): its inputs "
                         f"{', '.join(gone)} are no longer there; {KEEP_HINT}")
    args = list(msg.argv) if msg.refs else msg.argv
    kw = dict(msg.kwargs) if msg.kwargs else {}
    cwd, env = os.getcwd(), dict(os.environ)
    os.environ.update(rec["env"])       # the node's, while the task runs (programs see it)
    if os.path.isdir(rec["cwd"]):
        os.chdir(rec["cwd"])
    error: BaseException | None = None
    try:
        if refs:
            resolve_refs(args, kw, refs, dict(rec["values"]))
        msg = _logs_to(msg, scratch)
        inv = msg.options.invocation if msg.options is not None else None
        if inv is None:
            func(*args, **kw)
        else:
            from ..agent.executor import invokers
            invokers.run(inv, func, args, kw, [], msg.task_id)
    except Exception as exc:  # noqa: BLE001 - the task's own error is the answer
        error = exc
        if pdb:
            import pdb as _pdb
            print(f"taskflow rerun: {type(exc).__name__}: {exc}", file=sys.stderr)
            _pdb.post_mortem(exc.__traceback__)
    finally:
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
    kept: str | None = scratch
    if not _has_files(scratch):
        shutil.rmtree(scratch, ignore_errors=True)
        kept = None
    return Rerun(int(task_id), name, rec["error"], error, kept)


def _on_node(where: str, rec: dict[str, Any], name: str, task_id: int, node: str,
             cluster: str | None, pdb: bool) -> Rerun:
    from .rerun_node import cluster_of, run_on_node
    if pdb:
        raise UsageError("taskflow rerun: --pdb stops in this process only; leave out --node "
                         "to debug the task here")
    if rec["func"] is None:
        raise UsageError(f"taskflow rerun: task {task_id}'s function could not be kept")
    path = cluster_of(where, cluster)
    msg = M.TaskMsg(*rec["msg"])
    scratch = os.path.join(where, "reruns", f"task-{task_id}-{time.strftime('%H%M%S')}")
    os.makedirs(scratch, mode=0o700, exist_ok=True)
    refs, missing = _inputs(msg, rec, scratch)
    gone = [f"value d{did}" for did in rec["missing"]] + missing
    if gone:
        raise UsageError(f"taskflow rerun: task {task_id} ({name}): its inputs "
                         f"{', '.join(gone)} are no longer there; {KEEP_HINT}")
    try:
        error = run_on_node(node, path, rec, _logs_to(msg, scratch), refs, scratch)
    except BaseException:
        if not _has_files(scratch):
            shutil.rmtree(scratch, ignore_errors=True)
        raise
    return Rerun(task_id, f"{name} on {node}", rec["error"], error,
                 scratch if _has_files(scratch) else None)


def _logs_to(msg: M.TaskMsg, scratch: str) -> M.TaskMsg:
    """The task with a program's job files (``jobN.out/.err``) in ``scratch``, not the run's."""
    opts = msg.options
    inv = opts.invocation if opts is not None else None
    if opts is None or inv is None or not inv.log_dir:
        return msg
    return msg._replace(options=opts._replace(invocation=inv._replace(log_dir=scratch)))


def _has_files(folder: str) -> bool:
    return any(files for _, _, files in os.walk(folder))


def _inputs(msg: M.TaskMsg, rec: dict[str, Any], scratch: str
            ) -> tuple[list[M.RefWire], list[str]]:
    """The task's references with the files it read where they still are (else the kept
    links) and the files it writes moved to ``scratch``; the files no longer there."""
    kept: dict[str, str] = rec["files"]
    missing: list[str] = []

    def readable(path: str) -> str:
        if os.path.exists(path):
            return path
        k = kept.get(path)
        if k is not None and os.path.exists(k):
            return k
        missing.append(f"file {path}")
        return path

    def fresh(path: str) -> str:
        return os.path.join(scratch, str(len(os.listdir(scratch))), os.path.basename(path))

    refs: list[M.RefWire] = []
    for path, kind, payload in msg.refs or ():
        if kind == M.REF_FILE:
            payload = readable(payload)
        elif kind in (M.REF_FILE_OUT, M.REF_DIR_OUT):
            payload = fresh(payload)
            os.makedirs(os.path.dirname(payload), exist_ok=True)
        elif kind in (M.REF_FILE_INOUT, M.REF_DIR_INOUT):
            src = readable(payload[0])
            payload = (src, fresh(payload[1]))
            os.makedirs(os.path.dirname(payload[1]), exist_ok=True)
        refs.append((path, kind, payload))
    return refs, missing


def rerun_cli(run: str, task_id: int, pdb: bool, node: str | None, cluster: str | None,
              run_dir: str | None) -> int:
    """``taskflow rerun``: say how it ended; exit status 0 when it failed the same way."""
    result = rerun(run, task_id, pdb=pdb, run_dir=run_dir, node=node, cluster=cluster)
    print(result.describe())
    return 0 if result.same else 1
