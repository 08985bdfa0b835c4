"""What a run does when its record cannot be written (the journal or the resume log).

The journal is the user's evidence, and the resume log what a resume starts
from: a run that cannot keep them must not go on as if it did and end
"finished" with rows missing. So the first failed write (a full disk, a
journal another process held locked past the wait: journal/failure.py says
which file and why) is said once, loudly; the run starts no more tasks
(every task not started fails with that message, so the program's
``wait_on`` raises it); tasks already running finish and their results are
kept; the run ends ``failed`` with that reason and a non-zero exit status.
"""
from __future__ import annotations

import logging
import traceback
from typing import TYPE_CHECKING

from ...errors import RecordFailed
from ..rules import outcomes

if TYPE_CHECKING:
    from ...journal.writer import JournalWriter
    from ..bus import EventBus
    from ..rules.ending import Callbacks
    from ..state import RunState

log = logging.getLogger(__name__)


def record_failed(rt: RunState, message: str, cbs: Callbacks) -> None:
    """Under the run's lock: the record could not be written (``message``: which file and
    why); the run fails and starts nothing more. Each file says it once (its first failed
    write): the first one is the run's reason."""
    if rt.dead is not None:             # (the run stopped already: this one is said too)
        log.error("%s", message)
        return
    log.error("%s: the run stops here (running tasks finish and their results are kept; "
              "nothing new starts) and will end FAILED", message)
    rt.fail_run(message)
    outcomes.fail_everything(rt, RecordFailed(f"the run stopped: {message}"), cbs)
    rt.comm.wake()


def from_thread(rt: RunState, message: str) -> None:
    """:func:`record_failed` from a thread that holds no lock (the journal's watcher, the
    bus thread): the futures it fails are told after the lock is let go."""
    cbs: Callbacks = []
    with rt.lock:
        record_failed(rt, message, cbs)
    for fn, fut in cbs:
        try:
            fn(fut)
        except Exception:  # noqa: BLE001 - a user's callback
            traceback.print_exc()


def open_journal(rt: RunState, run_dir: str, run_id: str, t_start: float,
                 workers: int) -> JournalWriter:
    """The run's journal, started before the nodes: the writer's interpreter and SQLite
    set-up then overlap the agents' start-up instead of the first tasks (on two cores a
    writer starting during a burst of no-op tasks cost ~10 % of its throughput); its
    first failed write fails the run (:func:`from_thread`)."""
    from ..._version import __version__
    from ...journal.writer import JournalWriter, run_row
    return JournalWriter(run_dir, run_row(run_id, t_start, workers, __version__), rt.bus,
                         on_failure=lambda message: from_thread(rt, message))


def journal_ready(journal: JournalWriter, bus: EventBus) -> None:
    """Wait until ``journal``'s tables and writer are made; a run that cannot keep its
    record does not start (:class:`RecordFailed` with the fix)."""
    from ...journal.writer import WriteFailed
    try:
        journal.ready()
    except BaseException as exc:
        bus.close()        # (the journal subscribed to it)
        if isinstance(exc, WriteFailed):
            raise RecordFailed(f"{exc} (give another --run-dir, or Runtime(journal=False) "
                               f"for a run without one)") from None
        raise
