"""The trace's columns, and writing rows of them as TSV, CSV or JSON.

Names are Nextflow's (``-with-trace``) where the figure means the same;
taskflow's own follow. Times are seconds since the epoch, durations seconds,
memory and I/O bytes (Nextflow's ``trace.raw`` form): a reader needs no unit
parser. A value that is not known is ``-`` in TSV (as Nextflow writes it), empty in
CSV and ``null`` in JSON.
"""
from __future__ import annotations

import csv
import json
from typing import IO, Any, Iterable

# name -> what it holds (docs/guide/record-outside.md lists the same)
FIELDS: dict[str, str] = {
    "task_id": "the task's id in the run",
    "name": "the task's name (its function's)",
    "status": "DONE, FAILED, CANCELLED, INTERRUPTED; RETRIED for an attempt that was run "
              "again; RESTORED for a call a resumed run took from the earlier run",
    "exit": "a program's exit code",
    "attempt": "which start of the task this row is (1: its first)",
    "submit": "when the call was made (s since the epoch)",
    "start": "when the attempt started on its node",
    "complete": "when the attempt ended",
    "duration": "complete - submit (s)",
    "realtime": "complete - start (s)",
    "%cpu": "CPU time / realtime * 100 (the task's process and the children it waited for)",
    "cpu_time": "CPU seconds, user + system",
    "peak_rss": "peak resident bytes, from the kernel (peak_rss_measure says how)",
    "peak_rss_measure": "wait4, vmhwm, children, at-least, at-most or engine-client",
    "rchar": "bytes read through read calls (files, pipes, sockets)",
    "wchar": "bytes written through write calls",
    "node": "the node it ran on",
    "parent": "the task that called it while it ran (nested tasks)",
    "resources_asked": "what its function declares: computing_units, memory_size, ...",
    "resources_given": "node:slots it held",
    "log": "a program's output files (jobs/job<id>.out / .err)",
    "error": "the first line of its error, or why the attempt was run again",
}
FORMATS = ("tsv", "csv", "json")


def pick(spec: str | None) -> list[str]:
    """The columns asked for (``--fields task_id,name,peak_rss``; None: all of them)."""
    if not spec:
        return list(FIELDS)
    names = [f.strip() for f in spec.split(",") if f.strip()]
    unknown = [f for f in names if f not in FIELDS]
    if unknown:
        raise ValueError(f"no trace field {', '.join(map(repr, unknown))}; the fields are: "
                         f"{', '.join(FIELDS)}")
    return names


def _text(v: Any) -> str:
    if v is None:
        return ""
    kind = type(v)
    if kind is float:
        return f"{v:.3f}"
    if kind is int:
        return str(v)
    return str(v).replace("\t", " ").replace("\n", " ")


class TableWriter:
    """Rows (dicts of :data:`FIELDS`) to ``out`` in one format; :meth:`row` writes one."""

    def __init__(self, out: IO[str], fmt: str, fields: list[str], lines: bool = False) -> None:
        """``lines``: JSON as one object per line (a file that grows while the run goes)
        rather than one array."""
        if fmt not in FORMATS:
            raise ValueError(f"trace format {fmt!r}: use one of {', '.join(FORMATS)}")
        self.out, self.fmt, self.fields, self.lines = out, fmt, fields, lines
        self.n = 0
        self._csv = csv.writer(out, lineterminator="\n") if fmt == "csv" else None

    def header(self) -> None:
        if self.fmt == "tsv":
            self.out.write("\t".join(self.fields) + "\n")
        elif self._csv is not None:
            self._csv.writerow(self.fields)
        elif not self.lines:
            self.out.write("[")

    def row(self, r: dict[str, Any]) -> None:
        fields = self.fields
        if self.fmt == "tsv":
            get = r.get
            self.out.write("\t".join([_text(get(f)) or "-" for f in fields]) + "\n")
        elif self._csv is not None:
            self._csv.writerow([_text(r.get(f)) for f in fields])
        else:
            text = json.dumps({f: r.get(f) for f in fields}, default=str)
            if self.lines:
                self.out.write(text + "\n")
            else:
                self.out.write(("," if self.n else "") + "\n" + text)
        self.n += 1

    def end(self) -> None:
        if self.fmt == "json" and not self.lines:
            self.out.write("\n]\n")


def write_table(out: IO[str], fmt: str, fields: list[str],
                rows: Iterable[dict[str, Any]]) -> int:
    """Write ``rows`` whole (header, rows, end); return how many."""
    w = TableWriter(out, fmt, fields)
    w.header()
    for r in rows:
        w.row(r)
    w.end()
    return w.n
