"""A task's output as journal rows: lines cut at :data:`ROW_MAX` bytes, carriage returns
as a terminal shows them, in time linear in what the task writes.

Both captures use it: an executor's ``sys.stdout`` / ``sys.stderr`` (text, one
``write`` at a time) and a program's pipes (bytes, 64 KiB at a time).

* A line is kept whole up to :data:`ROW_MAX` bytes (UTF-8). A longer one is
  cut into rows of at most that many bytes, each but the last ending with
  :data:`CONTINUED`; or, when the whole output is kept in a file (a program's
  job log), the first row ends with a marker naming that file and the rest of
  the line is skipped here. So no row is larger than the cut, and what a task
  writes is held in memory at most one cut at a time.
* ``\\r`` rewrites the line, as on a terminal: ``"10%\\r20%\\r30%\\n"`` is the
  row ``"30%"`` (a progress bar's 60,000 updates are one row, its last state),
  ``"text\\r\\n"`` is ``"text"``. A program's job file keeps every byte.
* The partial line is a list of pieces joined once, when its line ends (or is
  cut): a line written in many small pieces costs the same as one written at
  once.
* The journal keeps at most :data:`TASK_BYTES` of one task's output; past
  that, a program's rest is in its job file (which has every byte) and a
  Python task's goes to its own job file on its node, ``<run dir>/jobs/job<id>.out``
  / ``.err`` as a program's (:func:`keep_file`); one row names the file.
"""
from __future__ import annotations

import os
from typing import Generic, TypeVar

ROW_MAX = 2**20                     # bytes: the largest row of a line the journal keeps
TASK_BYTES = 16 * ROW_MAX           # bytes of one task's output the journal keeps
KEEP_DIR: list[str] = []            # where a Python task's output past TASK_BYTES goes (set
#                                     by the agent from the run's data directory)
CONTINUED = " [taskflow: line cut at 1 MiB, continued in the next line]"
IN_FILE = " [taskflow: line cut at 1 MiB; the whole line is in {path}]"

S = TypeVar("S", str, bytes)
_NONE: list[str] = []      # what add() returns when no line ended (never changed)


def keep_file(tid: int, level: str) -> str | None:
    """The file on this node that takes a Python task's output past TASK_BYTES (made
    user-only here; None when the run gave the node no data directory)."""
    if not KEEP_DIR:
        return None
    from ...context import private_dir
    d, *_ = KEEP_DIR
    private_dir(d)
    return os.path.join(d, f"job{tid}.{'err' if level == 'STDERR' else 'out'}")


def _utf8_start(b: bytes, k: int) -> int:
    """The largest index <= k that starts a UTF-8 character of ``b`` (k itself when the
    three bytes before it do not: not UTF-8 there)."""
    for back in range(4):
        if (b[k - back] & 0xC0) != 0x80:
            return k - back
    return k


class Lines(Generic[S]):
    """One stream's partial line; :meth:`add` returns the rows that are complete.

    ``kept_in`` is the file that holds the whole stream (a long line's rest is
    left to it); None: a long line goes on in the next rows.
    """

    __slots__ = ("nl", "cr", "empty", "parts", "size", "pending_cr", "skipping", "kept_in",
                 "text", "fast")

    def __init__(self, sample: S, kept_in: str | None = None) -> None:
        self.text = isinstance(sample, str)
        self.nl: S = "\n" if self.text else b"\n"       # type: ignore[assignment]
        self.cr: S = "\r" if self.text else b"\r"       # type: ignore[assignment]
        self.empty: S = "" if self.text else b""        # type: ignore[assignment]
        self.parts: list[S] = []
        self.size = 0                   # characters (text) or bytes held in parts
        self.pending_cr = False         # the last piece ended with \r: the next rewrites
        self.skipping = False           # a cut line whose rest is in the file
        self.kept_in = kept_in
        # a text line this long may be over ROW_MAX bytes (4 bytes a character at most)
        self.fast = ROW_MAX // 4 if self.text else ROW_MAX

    # -- feeding ------------------------------------------------------------------------
    def add(self, s: S) -> list[S]:
        """Take what the stream wrote; return the rows of the lines it completed (a list
        the caller may keep; the same empty list when there are none: do not change it)."""
        if self.pending_cr:
            self.pending_cr = False
            if s and not s.startswith(self.nl):
                self._clear()
        if self.cr in s:
            return self._add_cr(s)
        if self.nl not in s:                # most writes: a piece of a line
            if not self.skipping:
                self.parts.append(s)
                self.size += len(s)
                if self.size > ROW_MAX:
                    return self._cut_partial()
            return _NONE                    # type: ignore[return-value]
        pieces = s.split(self.nl)
        last = pieces.pop()
        if self.skipping:                   # the rest of a cut line: in the file already
            self.skipping = False
            self._clear()
            del pieces[0]
        elif self.parts:
            parts = self.parts
            parts.append(pieces[0])
            pieces[0] = self.empty.join(parts)
            self._clear()
        fast = self.fast
        for p in pieces:
            if len(p) > fast:               # a long line: cut (rarely)
                out: list[S] = []
                for q in pieces:
                    self._line(q, out)
                pieces = out
                break
        if last:
            self.parts.append(last)
            self.size += len(last)
            if self.size > ROW_MAX:
                pieces.extend(self._cut_partial())
        return pieces

    def _add_cr(self, s: S) -> list[S]:
        """:meth:`add` for a piece with carriage returns: what follows one replaces the line."""
        cr = self.cr
        pieces = s.split(self.nl)
        last = pieces.pop()
        out: list[S] = []
        for p in pieces:
            if cr in p:
                p = p.rstrip(cr)            # "text\r\n" is "text"
                if cr in p:
                    self._clear()
                    p = p.rpartition(cr)[2]
            self._line(p, out)
        if cr in last:
            q = last.rstrip(cr)
            if len(q) < len(last):
                self.pending_cr = True      # known only with the next piece: CRLF or rewrite
            if cr in q:
                self._clear()
                q = q.rpartition(cr)[2]
            last = q
        if last:
            self._hold(last)
            if self.size > ROW_MAX:
                out.extend(self._cut_partial())
        return out

    def flush(self) -> list[S]:
        """The stream ended: its last line, even without a newline."""
        self.pending_cr = False
        if not self.parts:
            self.skipping = False
            return []
        out: list[S] = []
        self._line(self.empty, out)
        return out

    # -- the partial line -------------------------------------------------------------
    def _hold(self, s: S) -> None:
        if self.skipping:
            return
        self.parts.append(s)
        self.size += len(s)

    def _clear(self) -> None:
        self.parts = []
        self.size = 0

    def _line(self, tail: S, out: list[S]) -> None:
        """A newline came after ``tail``: the line's rows go to ``out``."""
        if self.skipping:
            self.skipping = False
            self._clear()
            return
        if self.parts:
            self.parts.append(tail)
            line = self.empty.join(self.parts)
            self._clear()
        else:
            line = tail
        if len(line) > self.fast:
            rows, rest = self._cut(line, final=True)
            out.extend(rows)
            if rest:
                out.append(rest)
        else:
            out.append(line)

    def _cut_partial(self) -> list[S]:
        """The partial line is over the cut: its full rows now, the rest kept."""
        line = self.empty.join(self.parts)
        self._clear()
        rows, rest = self._cut(line, final=False)
        if rest and not self.skipping:
            self.parts.append(rest)
            self.size = len(rest)
        return rows

    def _cut(self, line: S, final: bool) -> tuple[list[S], S]:
        """Rows of at most ROW_MAX bytes from ``line``; the rest (shorter than a row)."""
        raw: bytes = line.encode("utf-8", "surrogatepass") if isinstance(line, str) else line
        if len(raw) <= ROW_MAX:
            return [], line
        mark = (IN_FILE.format(path=self.kept_in) if self.kept_in else CONTINUED).encode()
        room = ROW_MAX - len(mark)
        rows: list[S] = []
        start = 0
        while len(raw) - start > ROW_MAX or (not final and len(raw) - start > room):
            k = _utf8_start(raw, start + room)
            rows.append(self._decoded(raw[start:k] + mark))
            start = k
            if self.kept_in:                    # the rest of the line is in the file
                self.skipping = not final
                return rows, self.empty
        return rows, self._decoded(raw[start:])

    def _decoded(self, b: bytes) -> S:
        return b.decode("utf-8", "surrogatepass") if self.text else b  # type: ignore[return-value]
