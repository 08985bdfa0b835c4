"""PyCOMPSs 4.0's graceful stop before the Slurm walltime.

An application run inside a Slurm job (``SLURM_JOB_ID`` is set, as under
``enqueue_compss`` or ``sbatch``) stops on its own ``margin`` seconds before
the job's end (runcompss ``--walltime_margin=S``, default 60), instead of
being killed by Slurm mid-task: at that moment the launcher takes the path
of a SIGTERM (:mod:`taskflow.cli.interrupts`): nothing new starts, running
tasks get ``--grace`` seconds, the outputs of finished tasks are put in
place, the journal says ``interrupted`` and the summary prints the command
that continues the run (with ``--resumable``, ``--resume`` restores every
finished task). The job's end is read from ``squeue`` when the run starts.
"""
from __future__ import annotations

import logging
import os
import signal
import subprocess
import threading
import time

DEFAULT_MARGIN = 60.0
log = logging.getLogger("taskflow.compat")


def job_end(job_id: str) -> float | None:
    """When Slurm job ``job_id`` ends (epoch seconds), or None (no limit, no squeue)."""
    try:
        out = subprocess.run(["squeue", "-h", "-j", job_id, "-o", "%e"], capture_output=True,
                             text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None
    try:
        return time.mktime(time.strptime(out.splitlines()[0], "%Y-%m-%dT%H:%M:%S"))
    except (ValueError, IndexError):
        return None          # "N/A", "Unknown", "NONE": the job has no end to stop before


def arm(margin: float = DEFAULT_MARGIN) -> threading.Timer | None:
    """Stop the run gracefully ``margin`` seconds before this Slurm job ends (a timer);
    None outside a Slurm job or when the job has no end."""
    job = os.environ.get("SLURM_JOB_ID")
    if not job:
        return None
    end = job_end(job)
    if end is None:
        return None
    delay = max(0.0, end - margin - time.time())
    log.info("Slurm job %s ends at %s: the run stops gracefully %g s before", job,
             time.strftime("%H:%M:%S", time.localtime(end)), margin)
    t = threading.Timer(delay, _stop, args=(job, end, margin))
    t.daemon = True
    t.start()
    return t


def _stop(job: str, end: float, margin: float) -> None:
    log.warning("the Slurm job %s ends at %s: stopping the run gracefully now, %g s before "
                "(finished tasks' outputs are kept; continue with --resume)", job,
                time.strftime("%H:%M:%S", time.localtime(end)), margin)
    os.kill(os.getpid(), signal.SIGTERM)
