"""What can change a task's result, as one key: how a resumed run knows a call is done.

A task's key (16 bytes, BLAKE2b) covers, in this order:

1. its function's code: the source of the function (its bytecode and constants
   where there is no source) and of every module-level function of the same
   module it names, as far as can be seen (recursively; cached per function);
2. the call's plain argument values (their pickle) and its options after
   call-time expansion: ``$ENV`` values in decorators, constraints, the
   external program's configuration and, for ``@binary``/``@mpi``/``@ompss``,
   the program file's path, size and modification time;
3. each input: a value made by another task is that task's key (so a changed
   upstream task changes every key below it); a snapshot argument is the
   digest of its pickle (and the keys of the futures inside it); a file or
   directory read that no task wrote is its content digest (``mode="content"``,
   the default) or its path, size and modification time (``mode="mtime"``,
   Nextflow's default, for very large inputs); a file version a task wrote is
   that task's key;
4. the paths of the files and directories it writes.

Each output of a task gets its own key (the task's key and its position), so
consumers name exactly what they read. :class:`KeyParts` keeps enough of the
pieces for ``--explain`` to say which part changed.

A run that resumes nothing does not compute the key of a *plain* call (scalar
positional arguments, no options: nearly every short task) when it is made:
the call is only counted (its ordinal), and its end writes the call itself
(function, arguments) to the resume log, whose reader computes the key with
:func:`plain_key`, as :meth:`Keys.assign` does for the same call in the
resumed run. A key that is needed before (a later call reads the plain call's
value) is computed then: from the task while it runs (:meth:`Keys.deferred`),
from its log record, which its future keeps, once it ended. So being resumable
costs a short task a counter at its call and a record at its end
(docs/guide/resume.md).

A call that reads other tasks' values (a chain's link) waits likewise, when
its key could only be what :meth:`Keys.assign` makes of it at the call: its
inputs are values of other tasks and snapshots (no file, no INOUT, one output,
no options; :func:`waits`). Its key is computed from the task later
(:meth:`Keys.late`: by the bus thread at the end, or as soon as something
needs it), exactly as at the call: its arguments and its snapshots do not
change, and the keys of the tasks it reads are computed first. A task whose
key waited and that ended keeps itself as its outputs' key until the resume
log has its record (:func:`waiting_key`), so its key can be made then too.
"""
from __future__ import annotations

import os
import pickle
import shutil
import time
from stat import S_ISDIR
from typing import TYPE_CHECKING, Any, Callable, NamedTuple

from ..wire import messages as M
from ..wire.invocation import Options
from .digests import SIZE, blake2b, code_digest, dir_digest, file_digest
from .task import Task

from ..future import Future

if TYPE_CHECKING:
    from .spec import TaskSpec

_H = blake2b
PROGRAM_RECHECK = 1.0   # s: a program file is looked at again (size, time) at most this often
OPTIONS_CACHE = 256     # options records kept as key bytes (static programs share one each)


def plain_key(code: bytes, argv: Any) -> bytes:
    """The key of a plain call (positional arguments ``argv``, no keywords, no options)
    of the function whose code digest is ``code``: :meth:`Keys.assign`'s for that call,
    and the resume log reader's for a call the log kept as itself."""
    h = _H(code, digest_size=SIZE)
    h.update(pickle.dumps((argv, None), 4))
    return h.digest()


class KeyParts(NamedTuple):
    """The pieces of a key, kept with a finished task for ``--explain``."""

    code: bytes                                 # digest of the function's code
    inputs: tuple[tuple[str, str, bytes], ...]  # (parameter, kind, digest): kind "task" |
    #                                             "file" | "data"


class Waited(NamedTuple):
    """The key of a call whose key waited (:meth:`Keys.late`), once computed: kept in its
    task's ``key_parts`` (its ``key`` stays None: the resume log's bus side keeps its
    record, not the loop thread: runtime/recovery/log.py)."""

    key: bytes
    parts: KeyParts


class Inputs(list):  # type: ignore[type-arg]
    """What the key of a call whose key waited needs of its inputs, kept in its task's
    ``key_parts`` when their futures are let go at its end (a value a node holds too:
    runtime/rules/ending.py) until its key is made: its refs, each future replaced by its
    key, what its plain call's key is made of or the ended task whose key waited that
    made it."""


class KeyUnknown(Exception):
    """A key that cannot be made without the bus's delivery, asked for in the bus thread
    (a task's record then is not kept: it runs again on a resume; never seen so far)."""


def waits(task: Task) -> bool:
    """Whether the key of ``task`` (a call built with inputs) may wait: what it reads is
    other tasks' values and snapshots only (fixed once the call is made), it has one
    output, no INOUT parameter and no options (a program file's time is read at the call)."""
    refs = task.refs
    if not refs or task.options is not None or task.inouts or len(task.outputs) != 1:
        return False
    for _, kind, _ in refs:
        if kind != M.REF_VALUE and kind != M.REF_PICKLED:
            return False
    return True


def waiting_key(task: Task) -> None:
    """``task`` ended well and its key waited: its outputs keep it as their key until the
    resume log has its record (then a later reader's key can still be made from it)."""
    for fut in task.outputs:
        if fut._key is None:
            fut.set_key(task)


class Keys:
    """Computes task keys for one run (caches code digests and file digests)."""

    def __init__(self, mode: str = "content") -> None:
        if mode not in ("content", "mtime"):
            raise ValueError(f"resume check {mode!r}: use content or mtime")
        self.mode = mode
        self.ordinals: dict[str, int] = {}      # calls so far per function name
        self._files: dict[tuple[str, int, int, int], bytes] = {}
        self._programs: dict[str, tuple[int, int, bytes, float]] = {}
        # a call's options as key bytes, by the options record (a static program's calls
        # share one): (the record, its text, the program file it names)
        self._opts: dict[int, tuple[Options, bytes, str | None]] = {}
        # per function (what the run derives, kept here, not on its spec): the digest of its
        # code, and (hasher of that code, KeyParts) every key of its calls starts from
        self._code: dict[TaskSpec, bytes] = {}
        self._bases: dict[TaskSpec, tuple[Any, KeyParts]] = {}
        # the functions whose plain calls the resume log kept as themselves, by number
        self.specs: list[TaskSpec] = []
        self._numbers: dict[TaskSpec, int] = {}
        # calls given their key when made (assign) that have not ended well yet: while there
        # are some, the loop thread looks for them among the results (runtime/loop/dispatch.py)
        self.keyed = 0
        # makes the records of the calls that ended so far (the bus's delivery: they are
        # made there, runtime/recovery/log.py); None: nothing to wait for
        self.settle: Callable[[], None] | None = None
        # whether a call with inputs may wait for its key (:func:`waits`): a run that resumes
        # nothing (set at the run's start); and, in an adoptable run, which functions' calls
        # are known short (their keys are not sent to their nodes: runtime/recovery/adopt.py)
        self.wait = False
        self.short: Callable[[TaskSpec], bool] | None = None
        # writes records to the resume log now (the loop thread's: :meth:`held`)
        self.keep: Callable[[list[tuple[Any, ...]]], None] | None = None

    # -- the pieces ----------------------------------------------------------------
    def code(self, spec: TaskSpec) -> bytes:
        """The digest of ``spec``'s function and the module-level functions it calls."""
        d = self._code.get(spec)
        if d is None:
            d = self._code[spec] = code_digest(spec.func, {})
        return d

    def file(self, path: str) -> bytes:
        """A file's or directory's digest: its content, or path, size and mtime."""
        try:
            st = os.stat(path)
        except OSError:
            return _H(b"missing:" + path.encode(), digest_size=SIZE).digest()
        ident = (path, st.st_size, st.st_mtime_ns, st.st_ino)
        d = self._files.get(ident)
        if d is None:
            if self.mode == "mtime":
                d = _H(repr(ident).encode(), digest_size=SIZE).digest()
            elif S_ISDIR(st.st_mode):
                d = dir_digest(path)
            else:
                d = file_digest(path, st.st_size)
            self._files[ident] = d
        return d

    def program(self, path: str) -> bytes:
        """An external program: its path, size and modification time (looked at again
        once PROGRAM_RECHECK seconds have passed: not a stat per call)."""
        known = self._programs.get(path)
        now = time.monotonic()
        if known is not None and now - known[3] < PROGRAM_RECHECK:
            return known[2]
        try:
            st = os.stat(path)
        except OSError:
            return b""
        if known is None or known[:2] != (st.st_size, st.st_mtime_ns):
            digest = _H(f"{path}:{st.st_size}:{st.st_mtime_ns}".encode(),
                        digest_size=SIZE).digest()
        else:
            digest = known[2]
        self._programs[path] = (st.st_size, st.st_mtime_ns, digest, now)
        return digest

    def options(self, opts: Options) -> bytes:
        """A call's options as key bytes, without where this run puts things (its job
        files, the nodes it was given), and the program file's path, size and time."""
        hit = self._opts.get(id(opts))
        if hit is None or hit[0] is not opts:
            inv = opts.invocation
            bare = opts if inv is None else \
                opts._replace(invocation=inv._replace(log_dir=None, placement=None))
            binary = getattr(inv.action, "binary", None) if inv is not None else None
            found = None
            if isinstance(binary, str):
                found = binary if os.sep in binary else (shutil.which(binary) or binary)
            if len(self._opts) >= OPTIONS_CACHE:
                self._opts.clear()
            hit = self._opts[id(opts)] = (opts, repr(bare).encode(), found)
        return hit[1] + self.program(hit[2]) if hit[2] is not None else hit[1]

    # -- a task's key ----------------------------------------------------------------
    def count(self, task: Task) -> None:
        """A plain call whose key waits (see the module doc): only its ordinal now."""
        name = task.spec.name
        n = task.ordinal = self.ordinals.get(name, 0) + 1
        self.ordinals[name] = n

    def number(self, spec: TaskSpec) -> int:
        """``spec``'s number in this run's resume log (:attr:`specs`)."""
        no = self._numbers.get(spec)
        if no is None:          # (in :attr:`specs` before its number is seen: ended())
            no = len(self.specs)
            self.specs.append(spec)
            self._numbers[spec] = no
        return no

    def ended(self, made: tuple[Any, ...]) -> bytes:
        """The key of a plain call the resume log kept as itself, from what its future keeps
        of it (runtime/recovery/log.py): ``(function number, argv)``."""
        no, argv = made
        return plain_key(self.code(self.specs[no]), argv)

    def made(self, task: Task) -> None:
        """A call built with its inputs (under the submit lock): its key now
        (:meth:`assign`), or, when it may wait (:func:`waits`), only its ordinal."""
        if self.wait and waits(task) and (self.short is None or self.short(task.spec)):
            self.count(task)
        else:
            self.assign(task)

    def late(self, task: Task, settle: bool = True) -> Waited:
        """The key of a call whose key waited (:meth:`made`), computed once, as
        :meth:`assign` would have at the call, and kept in its ``key_parts``; its output
        gets it with its record (its future names the task till then: a ``wait_on`` lets go
        of a value a node holds too only after that, runtime/runtime.py). The tasks it reads
        whose keys waited too get theirs first, oldest first (a loop: a chain may be long).
        ``settle`` False (the bus thread): raises :class:`KeyUnknown` where the bus's
        delivery would be needed."""
        seen = task.key_parts
        if type(seen) is Waited:
            return seen
        if _waiting_input(task) is None:        # (the common case: its inputs' keys known)
            done = task.key_parts = Waited(*self._compute(task, settle))
            return done
        # (what it returns is the Waited made or seen here, not read back: the loop
        # thread's let_go may put Inputs over a Waited another thread just made)
        stack = [task]
        while stack:
            t = stack[-1]
            seen = t.key_parts
            if type(seen) is Waited:
                done = seen
                stack.pop()
                continue
            first = _waiting_input(t)
            if first is not None:
                stack.append(first)
                continue
            done = t.key_parts = Waited(*self._compute(t, settle))
            stack.pop()
        return done                             # (``task``'s: the last one popped)

    def let_go(self, task: Task) -> None:
        """An ended call whose key waited lets go of its inputs' futures (they hold values
        on nodes): what its key needs of them is kept (:class:`Inputs`)."""
        if type(task.key_parts) is Waited:
            return
        kept = Inputs()
        try:
            for path, kind, obj in task.refs or ():
                if kind == M.REF_VALUE:
                    obj = _source(obj, self)
                elif kind == M.REF_PICKLED:
                    obj = (obj[0], [_source(f, self) for f in obj[1]])
                kept.append((path, kind, obj))
        except KeyUnknown:      # (never so far) it runs again on a resume
            self.unknowable(task)
            return
        task.key_parts = kept

    def held(self, task: Task) -> None:
        """A call with inputs whose key waited ended, its value left on its node: its key
        and its record now, as a keyed call's (its value is kept when fetched), and its
        output let go (a value on a node must not stay pinned there until the bus's
        delivery: runtime/rules/lineage.py keeps the call, not the value)."""
        keep = self.keep
        if keep is None:
            return
        try:
            key, parts = self.late(task, settle=False)
        except KeyUnknown:      # (never so far) it runs again on a resume
            key, parts = self.unknowable(task)
        fut = task.outputs[0]
        fut.set_key(key)
        task.key = key          # (the bus's delivery keeps no second record of it)
        keep([("k", task.id, key, task.spec.name, task.ordinal, parts, (("h",),),
               (fut._did,))])
        if task.spec.invoker == "python":  # (a program's keeps its exit code for its row)
            task.outputs = ()

    def unknowable(self, task: Task) -> Waited:
        """``task``'s key cannot be made (:class:`KeyUnknown`): it gets one that no call
        matches, so neither it nor what reads it is restored by a resume (they run again)."""
        key = _H(os.urandom(16), digest_size=SIZE).digest()
        done = task.key_parts = Waited(key, KeyParts(self.code(task.spec), ()))
        return done

    def waited(self, task: Task, settle: bool = True) -> bytes:
        """The key of a call whose key waited, plain (:meth:`deferred`) or not (:meth:`late`)."""
        if task.refs is not None or task.key_parts is not None:
            return self.late(task, settle).key
        return self.deferred(task)

    def deferred(self, task: Task) -> bytes:
        """The key of a counted plain call (:meth:`count`), computed now, as :meth:`assign`
        would have; its output gets it. The call stays a plain one (the resume log keeps
        it as itself: runtime/recovery/log.py)."""
        key = plain_key(self.code(task.spec), task.argv)
        for fut in task.outputs:        # (one; none once its values were let go)
            fut.set_key(key)
        return key

    def parts(self, spec: TaskSpec) -> KeyParts:
        """The pieces of the key of a plain call of ``spec`` (its code alone)."""
        return self._base(spec)[1]

    def _base(self, spec: TaskSpec) -> tuple[Any, KeyParts]:
        base = self._bases.get(spec)
        if base is None:
            code = self.code(spec)
            base = self._bases[spec] = (_H(code, digest_size=SIZE), KeyParts(code, ()))
        return base

    def assign(self, task: Task) -> None:
        """Set ``task.ordinal`` (this call is the n-th of its function), ``task.key``,
        ``task.key_parts`` and the keys of its outputs. (Every call of a resumed run
        comes here: the common case, plain arguments only, is kept short.)"""
        name = task.spec.name
        n = task.ordinal = self.ordinals.get(name, 0) + 1
        self.ordinals[name] = n
        self.keyed += 1
        key, parts = self._compute(task, True)
        task.key = key
        task.key_parts = parts
        self._outputs(task, key)

    def _compute(self, task: Task, settle: bool) -> tuple[bytes, KeyParts]:
        """``task``'s key and its pieces (see the module doc)."""
        refs = task.refs
        kept = task.key_parts                       # (read after refs: _made_of says why)
        if type(kept) is Waited:                    # made meanwhile by another thread
            return kept.key, kept.parts
        spec = task.spec
        base = self._bases.get(spec) or self._base(spec)
        h = base[0].copy()
        opts = task.options
        if opts:
            h.update(self.options(opts))
        try:
            h.update(pickle.dumps((task.argv, task.kwargs), 4))
        except Exception:  # noqa: BLE001 - placeholders only: never, but keys must not fail
            h.update(repr((task.argv, task.kwargs)).encode())
        if not refs:                                # plain arguments only: no inputs
            return h.digest(), base[1]              # (its parts: shared by the function's)
        if type(kept) is Inputs:                    # its inputs' futures were let go
            refs = kept
        inputs: list[tuple[str, str, bytes]] = []
        for path, kind, obj in refs:
            name = _pname(spec, path)
            if kind == M.REF_VALUE:
                inputs.append((name, "task", _fut_key(obj, self, settle)))
            elif kind == M.REF_PICKLED:             # a snapshot, maybe holding futures
                blob, futs = obj
                inputs.append((name, "data", _H(blob, digest_size=SIZE).digest()))
                for i, f in enumerate(futs):
                    inputs.append((f"{name} (value {i})", "task", _fut_key(f, self, settle)))
            elif kind == M.REF_FILE:
                inputs.append((name, *_version_key(obj, self)))
            elif kind == M.REF_FILE_INOUT or kind == M.REF_DIR_INOUT:
                old, new = obj
                inputs.append((name, *_version_key(old, self)))
                inputs.append((name + " (written)", "path", _item_path(new)))
            else:                                   # written: its user path
                inputs.append((name + " (written)", "path", _item_path(obj)))
        for _, what, digest in inputs:
            h.update(_KINDS[what] + digest)
        return h.digest(), KeyParts(base[1].code, tuple(inputs))

    @staticmethod
    def _outputs(task: Task, key: bytes) -> None:
        """Each output's key: the task's (one output) or the task's and its position."""
        outs = task.outputs
        if len(outs) == 1 and not task.inouts:
            outs[0].set_key(key)
            return
        for i, fut in enumerate(task.all_outputs()):
            fut.set_key(_H(key + i.to_bytes(4, "big"), digest_size=SIZE).digest())


def _fut_key(fut: Future | bytes | tuple[Any, ...] | Task, keys: Keys,
             settle: bool = True) -> bytes:
    if isinstance(fut, bytes):      # a source kept when its future was let go (Inputs)
        return fut
    if isinstance(fut, Task):
        return keys.waited(fut, settle)
    if isinstance(fut, tuple):
        return keys.ended(fut)
    k = fut._key
    if k is None or type(k) is Task:
        # a call whose key waited: running (its future names it), or ended and kept as its
        # outputs' key until the resume log has its record
        made = fut._producer if k is None else k
        if made is None:    # it ended meanwhile: the loop thread let go of its task, then
            k = fut._key    # may have named it again (waiting_key): read after, not taken
            made = k if type(k) is Task else None   # for a value no task made (below)
        if made is not None and made.ordinal and made.key is None:
            return keys.waited(made, settle)
        k = fut._key
        if k is None and fut._item is None and keys.settle is not None:
            if not settle:
                raise KeyUnknown(f"the key of data {fut._did}")
            keys.settle()           # it ended: its record, made at the bus's next delivery
            k = fut._key
    if isinstance(k, bytes):
        return k
    if isinstance(k, tuple):        # a plain call the log kept: its key now
        key = keys.ended(k)
        fut.set_key(key)
        return key
    # a value no task made here: a first version of an INOUT object (its snapshot)
    payload = fut._payload
    if payload is None:
        k = _H(repr(fut._did).encode(), digest_size=SIZE).digest()
    elif isinstance(payload, bytes):
        k = _H(payload, digest_size=SIZE).digest()
    else:                           # a Packed: its pickle stream and its large buffers
        h = _H(payload.head, digest_size=SIZE)
        for b in payload.bufs:
            h.update(b)
        k = h.digest()
    fut.set_key(k)
    return k


def _source(fut: Future, keys: Keys) -> bytes | tuple[Any, ...] | Task:
    """What a key needs of ``fut`` (:class:`Inputs`): its key, what its plain call's key is
    made of, or the task whose key waited that made it (ended: it reads no more)."""
    k = fut._key
    if k is not None:
        return k
    made = fut._producer
    if made is not None and made.ordinal and made.key is None:
        return made
    return _fut_key(fut, keys, False)


def _waiting_input(task: Task) -> Task | None:
    """A task ``task`` reads whose key waited and is not made yet (made first by
    :meth:`Keys.late`), else None."""
    made = _made_of(task)
    if type(made) is Waited:
        return None
    for _, kind, obj in made or ():
        if kind == M.REF_VALUE:
            futs: Any = (obj,)
        elif kind == M.REF_PICKLED:
            futs = obj[1]
        else:
            continue
        for fut in futs:
            if type(fut) is Future:
                k = fut._key
                made = fut._producer if k is None else k if type(k) is Task else None
            else:
                made = fut if type(fut) is Task else None
            if made is not None and made.ordinal and made.key is None and \
                    type(made.key_parts) is not Waited and made.refs is not None:
                return made
    return None


def _made_of(task: Task) -> Any:
    """What ``task``'s key is made of, read so that two threads agree: its :class:`Waited`
    once a thread made it, its :class:`Inputs` once its futures were let go, else its refs.

    Three threads make keys (the submitting thread at a call, the bus thread at its
    delivery, the loop thread for a value left on its node) while the loop thread ends
    tasks: :meth:`Keys.let_go` puts Inputs in ``key_parts``, then the task's ``refs`` become
    its journal row's, whose ``(data id, path)`` pairs are no inputs (runtime/rules/ending.py);
    only a Waited replaces Inputs. So ``refs`` is read first, ``key_parts`` after: a row's
    refs read mean Inputs or a Waited by then, never a row taken for inputs (once, the
    key of a call that read a chain's end failed with an IndexError so)."""
    refs = task.refs
    kept = task.key_parts
    if type(kept) is Inputs or type(kept) is Waited:
        return kept
    return refs


def _version_key(fut: Future, keys: Keys) -> tuple[str, bytes]:
    """A file version read: the key of the task that wrote it, or the user's file."""
    k = fut._key
    if type(k) is bytes:
        return "task", k
    return "file", keys.file(fut._path or "")


def file_paths(task: Task) -> dict[str, str]:
    """The paths of the files and directories ``task`` reads, by parameter name (as its
    :class:`KeyParts` names them): what a resumed run's reason for running it names."""
    out: dict[str, str] = {}
    for path, kind, obj in task.refs or ():
        if kind == M.REF_FILE or kind == M.REF_FILE_INOUT or kind == M.REF_DIR_INOUT:
            if kind == M.REF_FILE:
                fut = obj
            else:
                fut, _ = obj            # (the version read, the one written)
            if fut._path:
                out[_pname(task.spec, path)] = fut._path
    return out


def _item_path(fut: Future) -> bytes:
    item = fut._item
    return (item.path if item is not None and item.path else (fut._path or "")).encode()


_KINDS = {"task": b"task", "data": b"data", "file": b"file", "path": b"path"}


def _pname(spec: TaskSpec, path: Any) -> str:
    first = path[0]
    if type(first) is int:
        names = spec.names
        name = names[first] if first < len(names) else f"*{spec.varargs}[{first}]"
    else:
        name = str(first)
    return name if len(path) == 1 else name + "".join(f"[{p}]" for p in path[1:])
