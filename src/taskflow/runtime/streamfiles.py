"""A FileStream's directory, as the master lists it: which files become items.

A file becomes an item once its size and modification time held still between
two listings (all files at the close); names starting with ``.`` are left
alone, and a name is handed out once (:meth:`FileListing.scan`).

Each file is attributed to the producer that was the only one running (a task
dispatched with its part open, or the program) from the listing before the one
that first saw it to that one; a producer's end lists the directory too, so its
last files are seen while it counts (0: several producers could have written
it). The item keeps that producer's number, so a resumed run that restores some
of the stream's producers and runs the others knows which of the earlier files
are the restored ones' (:meth:`FileListing.reopened`).

A resumed run that had the stream in the earlier run lists its directory once
when it first knows the stream (:meth:`FileListing.baseline`): those files were
left by the earlier run and are not items of this run while they stay as they
were. A producer that runs again and rewrites one makes it new (its time
changes). The earlier files of restored producers are given again as they were;
an earlier file of unknown producer is given at the close if it is still as it
was (a restored producer may have written it), which the run's log says.
"""
from __future__ import annotations

import os

Stat = tuple[int, int]          # (size, modification time in ns)


def listing(directory: str) -> dict[str, Stat]:
    """The plain files of ``directory`` (no dot names) with their size and time."""
    out: dict[str, Stat] = {}
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return out
    for e in entries:
        if e.name.startswith("."):
            continue
        try:
            if not e.is_file():
                continue
            st = e.stat()
        except OSError:
            continue
        out[e.name] = (st.st_size, st.st_mtime_ns)
    return out


class FileListing:
    """What the master knows of one FileStream's directory (under the streams' lock)."""

    def __init__(self, base_dir: str) -> None:
        self.base_dir = base_dir
        self.seen: dict[str, tuple[int, int, int]] = {}  # listed, not stable: size, time, by
        self.taken: set[str] = set()                    # handed out (as items)
        self.before: dict[str, Stat] = {}   # left by the earlier run, as they were then
        self.late: set[str] = set()         # ... of unknown producer: given at the close
        self.active: dict[int, int] = {}    # producers running at the last listing -> number

    def baseline(self) -> None:
        """A resumed run reopens the stream it had: the files in the directory now are the
        earlier run's (this run's producers are called after the stream is known)."""
        self.before = listing(self.base_dir)

    def given(self, name: str) -> bool:
        """File ``name`` is published by name: True if it is new (an item now, not when
        listed)."""
        if name in self.taken:
            return False
        self.taken.add(name)
        self.seen.pop(name, None)
        self.before.pop(name, None)
        return True

    def ended(self, producer: int) -> None:
        """``producer`` (a task id; 0: the program) closed its part, after the listing
        that saw its last files: it writes no more."""
        self.active.pop(producer, None)

    def scan(self, running: dict[int, int], final: bool = False) -> tuple[list[tuple[str, int]],
                                                                            int]:
        """List the directory (``running``: the producers running now -> their numbers):
        files whose size and time held still since the last listing (all at the close,
        ``final``) are new items, oldest first, as (path, producer number). Also returns how
        many earlier files of unknown producer were given (at the close only)."""
        writers = {**self.active, **running}
        who = next(iter(writers.values())) if len(writers) == 1 else 0
        new: list[tuple[int, str, int]] = []
        late = 0
        for name, now in listing(self.base_dir).items():
            if name in self.taken:
                continue
            old = self.before.get(name)
            if old is not None:
                if old == now:              # as the earlier run left it: not new
                    if final and name in self.late:
                        new.append((now[1], name, 0))
                        late += 1
                    continue
                del self.before[name]       # rewritten by this run: a new file
                self.late.discard(name)
            seen = self.seen.get(name)
            by = seen[2] if seen is not None else who
            if final or (seen is not None and seen[:2] == now):
                new.append((now[1], name, by))
            else:
                self.seen[name] = (*now, by)
        self.active = running
        out = []
        for _, name, by in sorted(new):
            self.seen.pop(name, None)
            self.taken.add(name)
            out.append((os.path.join(self.base_dir, name), by))
        return out, late

    def replayed(self, paths: list[str]) -> None:
        """The stream is replayed with the earlier run's files ``paths``: not new."""
        self.taken.update(os.path.basename(p) for p in paths)
        self.before = {}

    def reopened(self, restored: dict[int, int], tags: list[int],
                 paths: list[str]) -> list[tuple[str, int]]:
        """Produced anew after some producers were restored (``restored``: their numbers in
        the earlier run -> here); the earlier items were ``paths`` by producer ``tags``.
        Returns the restored ones' files to give again, with their numbers here; an earlier
        file of unknown producer waits for the close (given then if still as it was); the
        other producers' stay earlier files (new once rewritten)."""
        again = []
        for tag, path in zip(tags, paths):
            name = os.path.basename(path)
            number = restored.get(tag)
            if number is not None:
                again.append((path, number))
                self.taken.add(name)
                self.before.pop(name, None)
            elif tag == 0 and name in self.before:
                self.late.add(name)
        return again
