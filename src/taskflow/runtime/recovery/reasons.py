"""Why a call of a resumed run ran again: one phrase per call, one line per task name.

:func:`why_again` says, for one call whose key found no record of the
earlier run, which piece of its key changed (:class:`~taskflow.graph.keys.KeyParts`):
its code, an argument, an input file (named, with how it was compared:
``content`` or ``mtime``, ``--resume-check``), an upstream task, a path it
writes. A phrase is ``"<reason>"`` or ``"<reason>: <subject>"`` (the file),
so calls group by reason and the subjects are listed.

:func:`summary_lines` makes the per-name lines a resumed run prints at its
end (and ``taskflow explain``, the report, ``--plan`` print):
``reused 97 of 100 calls of align; 3 ran: 3 input file changed (content,
parameter reads): sample3.fq, ...; 0 ran because its code changed``. It takes
plain counts, so whoever has them (the running :class:`.restore.Resumer`,
the journal's ``RESTORED`` / ``RERUN`` rows, a plan that has not run)
prints the same lines.
"""
from __future__ import annotations

from typing import Any, Mapping

from ...graph.keys import KeyParts

CODE_CHANGED = "its code changed"
SUBJECTS_SHOWN = 3          # subjects (files) named per reason on a summary line


def why_again(old: KeyParts | None, parts: KeyParts, failed_before: bool,
              files: Mapping[str, str] | None = None, mode: str = "content") -> str:
    """Why a call whose key found no record runs again (one short phrase). ``old``: the
    pieces of the earlier run's call of the same name and ordinal (None: it had none);
    ``files``: the paths of the call's input files by parameter; ``mode``: how input
    files are compared."""
    if old is None:
        return "it failed in the earlier run" if failed_before else \
            "no earlier result (it did not finish)"
    if old.code != parts.code:
        return CODE_CHANGED
    before = {(n, k): d for n, k, d in old.inputs}
    for name, kind, digest in parts.inputs:
        if before.get((name, kind)) != digest:
            if kind == "task":
                return f"an upstream task changed (parameter {name})"
            if kind == "file":
                path = (files or {}).get(name)
                return f"input file changed ({mode}, parameter {name})" + \
                    (f": {path}" if path else "")
            if kind == "path":
                return f"it writes another path (parameter {name})"
            return f"an argument changed (parameter {name})"
    if len(before) != len(parts.inputs):
        return "its inputs changed"
    return "an argument or option changed"


def split(why: str) -> tuple[str, str | None]:
    """(reason, subject) of a phrase of :func:`why_again`."""
    reason, sep, subject = why.partition(": ")
    return (reason, subject) if sep and reason.startswith("input file") else (why, None)


def summary_lines(reused: Mapping[str, int], reruns: Mapping[str, Mapping[str, int]],
                  would: bool = False) -> list[str]:
    """One line per task name: how many calls were reused (restored or adopted from the
    earlier run) of how many, and why the others ran, counted by reason (``reruns``:
    name -> phrase -> calls), the files named; ``would``: said of a plan (nothing ran)."""
    ran_ = "would run" if would else "ran"
    out = []
    for name in sorted(set(reused) | set(reruns)):
        whys = {w: n for w, n in (reruns.get(name) or {}).items() if n > 0}
        ran = sum(whys.values())
        kept = reused.get(name, 0)
        head = f"{'would reuse' if would else 'reused'} {kept} of {kept + ran} calls of {name}"
        if not ran:
            out.append(f"{head}; none {'would run' if would else 'ran again'}")
            continue
        groups: dict[str, list[Any]] = {}
        for why, n in whys.items():
            reason, subject = split(why)
            g = groups.setdefault(reason, [0, []])
            g[0] += n
            if subject is not None:
                g[1].append(subject)
        parts = []
        for reason, (n, subjects) in sorted(groups.items(), key=lambda x: (-x[1][0], x[0])):
            text = f"{n} {reason}"
            if subjects:
                shown = sorted(subjects)[:SUBJECTS_SHOWN]
                more = len(subjects) - len(shown)
                text += ": " + ", ".join(shown) + (f" and {more} more" if more else "")
            parts.append(text)
        if CODE_CHANGED not in groups:
            parts.append(f"0 {ran_} because {CODE_CHANGED}")
        out.append(f"{head}; {ran} {ran_}: " + "; ".join(parts))
    return out
