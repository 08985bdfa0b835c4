"""``taskflow report``: the run, its failures, resources per task name, the scheduling model.

Summary first, as Nextflow's report: :mod:`.runinfo` (the run and its
failures), :mod:`.model` (the figures), :mod:`.mdreport` (markdown, what the
command prints), :mod:`.htmlreport` (one self-contained page with the plots).
"""
from __future__ import annotations

import os

from ..journal.reader import Journal
from . import htmlreport, mdreport, runinfo
from .model import PerTask, busy_integral, compute, figures, memory_figures
from .mdreport import to_markdown

__all__ = ["PerTask", "busy_integral", "compute", "figures", "memory_figures", "report",
           "to_markdown"]


def report(run_dir: str, html_path: str | None = None) -> str:
    """The report as markdown; with ``html_path`` also as one self-contained HTML page."""
    with Journal(run_dir) as j:
        f, per_task = compute(j)
        head = runinfo.header(j)
        fails = runinfo.failures(j)
        md = mdreport.to_markdown(f, head, fails)
        page = htmlreport.page(j, f, per_task, head, fails) if html_path else None
    if html_path and page is not None:
        os.makedirs(os.path.dirname(os.path.abspath(html_path)), exist_ok=True)
        with open(html_path, "w", encoding="utf-8") as fh:
            fh.write(page)
    return md
