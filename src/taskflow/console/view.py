"""What the screens and reports of a run read of it: :class:`RunView`.

``taskflow run``'s progress bars and lines, its summary and failure report, and
the report a plain ``python script.py`` prints at its end read a run through
this protocol, never through the runtime's other parts; the
:class:`~taskflow.runtime.runtime.Runtime` meets it. Everything here is read
without the run's lock: a count may be one transition old, a list one entry
short.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..errors import TaskError
    from ..journal.writer import JournalWriter
    from ..providers.handle import NodeHandle
    from ..runtime.bus import EventBus
    from ..runtime.specruns import SpecRuns
    from ..runtime.tally import Tally


class RunView(Protocol):
    """One run as a person sees it."""

    @property
    def run_id(self) -> str: ...

    @property
    def run_dir(self) -> str: ...

    @property
    def t_start(self) -> float:
        """When it started (0 before)."""

    @property
    def tally(self) -> Tally:
        """Its task counts."""

    @property
    def failures(self) -> list[TaskError]:
        """Its task failures, in order (those the program met too)."""

    @property
    def failed(self) -> bool:
        """A task failed and the program did not meet the failure, or the run itself did."""

    def unhandled(self) -> list[TaskError]:
        """The failures that fail the run: those the program never met."""

    def handled_note(self) -> str | None:
        """"2 tasks failed (handled by the script)", or None."""

    @property
    def interrupted(self) -> str | None:
        """Why it was interrupted (SIGINT, ...), or None."""

    @property
    def nodes(self) -> list[NodeHandle]:
        """Its nodes (a node back after a loss may be listed twice)."""

    @property
    def spec_runs(self) -> SpecRuns:
        """What it learned per task function (which calls are short)."""

    @property
    def bus(self) -> EventBus:
        """Its events, for a screen that follows them."""

    @property
    def journal(self) -> JournalWriter | None:
        """Its journal's writer (None: the run keeps no journal)."""

    @property
    def resumable(self) -> bool:
        """It keeps a resume log (``taskflow run --resume`` can continue it)."""

    def logs_command(self, task_id: int) -> str | None:
        """The command that shows a task's output (None without a journal)."""

    def node_returns(self) -> str:
        """Nodes it lost that came back (``h1 back after 23 s: ...``), or ""."""


class EmbeddedRun(RunView, Protocol):
    """The run a plain ``python script.py`` started with its first task call."""

    def wait_all(self, timeout: float | None = None) -> bool:
        """Block until no task is left (False on timeout)."""
