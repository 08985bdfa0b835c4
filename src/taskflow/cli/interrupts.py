"""Ctrl-C and SIGTERM during `taskflow run`: stop cleanly, once; at once, the second time.

The first SIGINT (KeyboardInterrupt) or SIGTERM (:class:`Terminated`, raised
in the main thread like KeyboardInterrupt) unwinds the script; then
:func:`stop_interrupted` stops the run: nothing new starts, running tasks get
SIGINT (Python) or SIGTERM (programs) and ``--grace`` seconds, finished outputs
are put in place, the journal says ``interrupted`` and the summary prints the
``--resume`` command. A second signal during that ends the run at once, still
leaving a journal the resume can use. The exit status is 128 + the signal
(130 for SIGINT, 143 for SIGTERM), as a shell reports a process it signalled.
Slurm's walltime warning (``--signal``) is a SIGTERM and takes the same path.
"""
from __future__ import annotations

import os
import shlex
import signal
from typing import TYPE_CHECKING


from ..graph import task as T
from ..journal.root import runs_root

if TYPE_CHECKING:
    from ..console.view import RunView


class Terminated(BaseException):
    """SIGTERM, raised in the main thread (a BaseException, like KeyboardInterrupt)."""

    signum = signal.SIGTERM


def resume_command(rt: RunView, script: str, args: tuple[str, ...],
                   options: tuple[str, ...] = ()) -> str:
    """The command that continues this run (in a job of ``taskflow submit``: submitting it
    again, with the same options); ``options``: those ``run`` needs to run the script the
    same way (``--compat pycompss``)."""
    resubmit = os.environ.get("TASKFLOW_RESUBMIT")
    if resubmit is not None:
        argv = ["submit", *shlex.split(resubmit), "--resume", rt.run_id]
    else:
        argv = ["run", *options, "--resume", rt.run_id]
    root = os.path.dirname(rt.run_dir)
    if root != runs_root() and "--run-dir" not in argv:
        argv += ["--run-dir", root]
    return shlex.join(["taskflow", *argv, script, *args])


def interrupted_summary(rt: RunView, script: str, args: tuple[str, ...],
                        options: tuple[str, ...] = (), command: str | None = None) -> str:
    """The last lines of an interrupted run: what it did, and how to continue it
    (``command``: the command that does, when it is not ``taskflow run``'s)."""
    c = rt.tally
    # (a run ended at once by a second signal leaves its running tasks in flight: they
    # were interrupted while running too, not "never started")
    stopped = c.interrupted + sum(1 for n in rt.nodes for t in n.inflight.values()
                                  if t.state == T.RUNNING)
    ended = c.done + c.failed + c.cancelled + stopped
    never = max(0, c.submitted - ended)
    head = (f"taskflow: run {rt.run_id} interrupted ({rt.interrupted}): {c.done} task(s) "
            f"finished, {stopped} interrupted while running, {never} never started"
            + (f", {c.failed} failed" if c.failed else ""))
    if not rt.resumable:
        return head + ("\n  (it was not resumable: it was started --no-resumable; runs "
                       "without it can be continued)")
    again = command or resume_command(rt, script, args, options)
    return head + f"\n  continue it with: {again}"
