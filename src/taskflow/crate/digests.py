"""The sha256 of the files a run read and wrote, kept beside its journal.

A crate names each file with its size and sha256. Hashing a large output again
for every crate would cost its whole read, so the digests are kept in
``<run dir>/digests.json`` (path -> size, modification time in ns, sha256) and
reused while a file's size and time are the same. A file deleted since keeps
the digest it had when it was last read here (``taskflow run --crate`` reads
every file at the end of the run): a crate made later still names what it was.
"""
from __future__ import annotations

import hashlib
import json
import os
from typing import Any, NamedTuple

from ..context import private_file

NAME = "digests.json"
CHUNK = 1 << 20


class Seen(NamedTuple):
    """A file as the crate names it: None fields when it is gone."""

    size: int | None
    mtime: float | None
    sha256: str | None
    exists: bool


class Digests:
    """The run's kept digests; :meth:`save` writes them back when they changed."""

    def __init__(self, run_dir: str) -> None:
        self.path = os.path.join(run_dir, NAME)
        self.kept: dict[str, list[Any]] = {}
        self.changed = False
        try:
            with open(self.path) as f:
                data = json.load(f)
            if isinstance(data, dict):
                self.kept = {k: v for k, v in data.items() if isinstance(v, list) and len(v) == 3}
        except (OSError, ValueError):
            pass

    def of(self, path: str) -> Seen:
        """``path`` now: its size, time and sha256 (hashed only when it changed), or what
        was kept of it when it is gone (``exists`` False)."""
        try:
            st = os.stat(path)
        except OSError:
            k = self.kept.get(path)
            return Seen(k[0], None, k[2], False) if k else Seen(None, None, None, False)
        if not os.path.isfile(path):           # a directory: no digest of its own
            return Seen(None, st.st_mtime, None, True)
        k = self.kept.get(path)
        if k and k[0] == st.st_size and k[1] == st.st_mtime_ns:
            return Seen(st.st_size, st.st_mtime, k[2], True)
        h = hashlib.sha256()
        try:
            with open(path, "rb") as f:
                while chunk := f.read(CHUNK):
                    h.update(chunk)
        except OSError:
            return Seen(st.st_size, st.st_mtime, None, True)
        self.kept[path] = [st.st_size, st.st_mtime_ns, h.hexdigest()]
        self.changed = True
        return Seen(st.st_size, st.st_mtime, h.hexdigest(), True)

    def save(self) -> None:
        if not self.changed:
            return
        tmp = self.path + ".tmp"
        try:
            private_file(tmp)
            with open(tmp, "w") as f:
                json.dump(self.kept, f)
            os.replace(tmp, self.path)
        except OSError:
            pass            # (a read-only run directory: the next crate hashes again)
        self.changed = False
