"""taskflow in Jupyter: the run started from a cell, live progress, futures as HTML.

:mod:`.session` is what ``taskflow.start()`` / ``stop()`` add in a kernel,
:mod:`.live` the live progress display of each cell's tasks, :mod:`.html` the
HTML of a future, a list of futures, a run and a cell's progress, and
:func:`show` the view of a list of futures (a list has no repr hook of its
own). See docs/guide/notebooks.md.
"""
from __future__ import annotations

from typing import Any, Iterable


class Shown:
    """What :func:`show` gives: an object whose HTML (and text) Jupyter shows."""

    def __init__(self, page: str) -> None:
        from .html import bundle
        self.page = page
        self.text = bundle(page)["text/plain"]

    def _repr_html_(self) -> str:
        return self.page

    def __repr__(self) -> str:
        return self.text


def show(what: Any) -> Shown:
    """The view of futures (a list, a dict's values, any iterable: counts by state and the
    failures with the user's frames), of one future, or of a run (``taskflow.current_runtime()``).

    ``taskflow.show(futures)`` as a cell's last line shows it; ``print`` gives its text.
    """
    from ..future import Future
    from . import html
    if isinstance(what, Future):
        return Shown(html.future_html(what))
    if hasattr(what, "tally") and hasattr(what, "run_id"):
        return Shown(html.run_card(what))
    if isinstance(what, dict):
        what = what.values()
    if isinstance(what, (str, bytes)) or not isinstance(what, Iterable):
        from ..errors import UsageError
        raise UsageError(f"taskflow.show({type(what).__name__}): give a future, a list (or "
                         f"other iterable) of futures, or a run")
    return Shown(html.futures_html([f for f in what if isinstance(f, Future)]))
