"""What Slurm says about a run's jobs: one batched ``squeue`` per look, never one per job.

:class:`SlurmQueue` keeps the run's jobs (all share the run's job name) and
looks at all of them with one call, ``squeue -h -t all -n NAME``, which gives
each job's state, its (expected) start and end, Slurm's reason and the
token the provider put in its comment. ``sacct`` is asked only about jobs
``squeue`` stopped listing before their end was seen (it forgets ended jobs
after ``MinJobAge``), once for all of them, and never again once it said
accounting is off. Every command has a time-out, so nothing here can hang.

The provider's manager decides how often to look (:meth:`SlurmQueue.interval`):
every ``fast`` seconds while a decision waits on the queue (a job pending, a
lost node whose job's end is not known yet), every ``slow`` seconds once
every job runs (the agents' own connections say they live), and with a
growing back-off while the controller does not answer.

A controller that does not answer (``Unable to contact slurm controller``, a
command that times out) is said once, with what the run does meanwhile, and
once more when it answers again; after ``controller_wait`` seconds
:attr:`SlurmQueue.gave_up` is set and the provider stops relying on Slurm.
"""
from __future__ import annotations

import logging
import re
import subprocess
import time
from typing import Callable

from ...errors import SlurmError

log = logging.getLogger(__name__)

ENDED = {"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "PREEMPTED",
         "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY", "SPECIAL_EXIT", "REVOKED"}

# what a Slurm command prints when the controller is away (not a mistake of ours)
_AWAY = re.compile(r"unable to contact slurm controller|socket timed out|connection refused|"
                   r"connection timed out|zero bytes were transmitted|communication connection "
                   r"failure|slurm_load_jobs error|temporarily unavailable|did not answer within|"
                   r"slurmctld.*(?:not responding|down)|retry later", re.I)

COMMAND_TIMEOUT = 30.0       # s: a Slurm command that takes longer is taken as no answer


def slurm(cmd: list[str], timeout: float = COMMAND_TIMEOUT) -> str:
    """Run a Slurm command; its output, or :class:`SlurmError` with its message."""
    name, *_ = cmd
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise SlurmError(f"{name} not found: is Slurm installed here?") from None
    except subprocess.TimeoutExpired:
        raise SlurmError(f"{' '.join(cmd)} did not answer within {timeout:g} s") from None
    if p.returncode != 0:
        raise SlurmError(f"{name} failed (exit {p.returncode}): "
                         f"{(p.stderr or p.stdout).strip()}")
    return p.stdout


def controller_away(err: BaseException) -> bool:
    """The error says the controller is away (wait and ask again), not that we are wrong."""
    return bool(_AWAY.search(str(err)))


def slurm_time(text: str) -> float | None:
    """A Slurm timestamp (``2026-12-04T10:00:00``) as epoch seconds; None for N/A etc."""
    try:
        return time.mktime(time.strptime(text, "%Y-%m-%dT%H:%M:%S"))
    except ValueError:
        return None


def walltime_seconds(limit: str) -> float | None:
    """sbatch ``--time``: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS."""
    text = str(limit).strip()
    if not text or text.upper() in ("INFINITE", "UNLIMITED"):
        return None
    days, _, rest = text.rpartition("-")
    try:
        d = int(days) if days else 0
        parts = [int(p) for p in rest.split(":")]
    except ValueError:
        return None
    if days:
        parts += [0] * (3 - len(parts))
        h, m, s = parts[:3]
    elif len(parts) == 1:
        (m,), h, s = parts, 0, 0
    elif len(parts) == 2:
        h, (m, s) = 0, parts
    else:
        h, m, s = parts[:3]
    return float(((d * 24 + h) * 60 + m) * 60 + s)


class Job:
    """One job of the run, as Slurm last described it."""

    __slots__ = ("jid", "token", "state", "reason", "start", "end", "submitted", "listed")

    def __init__(self, jid: str, token: str = "") -> None:
        self.jid = jid
        self.token = token
        self.state = "PENDING"
        self.reason = ""
        self.start: float | None = None     # (expected) start, as squeue says
        self.end: float | None = None       # (expected) end: start + its time limit
        self.submitted = time.time()
        self.listed = False                 # squeue listed it at least once

    @property
    def ended(self) -> bool:
        return self.state.split()[0] in ENDED or self.state.startswith("VANISHED")

    def describe(self) -> str:
        return self.state + (f" ({self.reason})" if self.reason not in ("", "None") else "")


class SlurmQueue:
    """The run's jobs and the calls that look at them (see the module docstring)."""

    def __init__(self, job_name: str, *, fast: float = 2.0, slow: float = 30.0,
                 controller_wait: float = 300.0,
                 run: Callable[[list[str], float], str] = slurm) -> None:
        self.job_name = job_name
        self.fast = fast
        self.slow = max(slow, fast)
        self.controller_wait = controller_wait
        self.run = run
        self.jobs: dict[str, Job] = {}
        self.also: list[str] = []               # more job names (an earlier run's, adopted)
        self.calls: dict[str, int] = {}         # command -> calls made (squeue, sacct, ...)
        self.last_look = 0.0                    # when squeue last answered
        self.down_since: float | None = None    # the controller has not answered since
        self.down_error = ""
        self.gave_up = False
        self.fails = 0                          # looks in a row without an answer
        self.sacct_ok = True                    # accounting answers (else never asked again)
        self.unknown: dict[str, Job] = {}       # jobs with our tokens we did not submit (see
        #                                         adopt): an sbatch whose answer was lost

    # -- the jobs ---------------------------------------------------------------
    def add(self, jid: str, token: str = "") -> Job:
        job = self.jobs.get(jid)
        if job is None:
            job = self.jobs[jid] = Job(jid, token)
        return job

    def pending(self) -> list[Job]:
        return [j for j in self.jobs.values() if j.state == "PENDING"]

    def live(self) -> list[Job]:
        return [j for j in self.jobs.values() if not j.ended]

    def states(self) -> str:
        return ", ".join(f"{j.jid} {j.describe()}" for j in self.jobs.values()) or "none submitted"

    # -- looking ----------------------------------------------------------------------
    def _call(self, cmd: list[str], timeout: float = COMMAND_TIMEOUT) -> str:
        name, *_ = cmd
        self.calls[name] = self.calls.get(name, 0) + 1
        return self.run(cmd, timeout)

    def look(self) -> bool:
        """One ``squeue`` for every job of the run (and ``sacct`` for those it forgot);
        True when the controller answered."""
        asked = time.time()
        try:
            out = self._call(["squeue", "-h", "-t", "all", "-n",
                              ",".join([self.job_name, *self.also]),
                              "-o", "%i|%T|%S|%e|%r|%k"])
        except SlurmError as exc:
            self._no_answer(exc, asked)
            return False
        self._answered()
        now = time.time()
        seen: dict[str, list[str]] = {}
        for line in out.splitlines():
            parts = line.strip().split("|", 5)
            if len(parts) == 6:
                jid, *rest = parts
                seen[jid] = rest
        for jid, (state, start, end, reason, comment) in seen.items():
            job = self.jobs.get(jid)
            if job is None:
                job = self.unknown.get(jid) or Job(jid, comment.strip())
                self.unknown[jid] = job
            job.state, job.reason = state, reason
            job.start, job.end = slurm_time(start), slurm_time(end)
            job.listed = True
        gone = [j for jid, j in self.jobs.items() if jid not in seen and not j.ended
                and (j.listed or now - j.submitted > 2 * self.fast)]
        if gone:
            self._forgotten(gone)
        self.last_look = now
        return True

    def _forgotten(self, jobs: list[Job]) -> None:
        """Jobs squeue no longer lists (long ended, or gone from the controller): sacct
        says how they ended when accounting is on; else they are taken as vanished."""
        states: dict[str, str] = {}
        if self.sacct_ok:
            try:
                out = self._call(["sacct", "-n", "-X", "-P", "-o", "JobID,State",
                                  "-j", ",".join(j.jid for j in jobs)])
                for line in out.splitlines():
                    jid, _, state = line.strip().partition("|")
                    states[jid] = state.split()[0] if state else ""
            except SlurmError as exc:
                if controller_away(exc) and "accounting" not in str(exc).lower():
                    return               # ask again at the next look
                self.sacct_ok = False    # accounting is off: never asked again
                log.info("slurm: sacct cannot say how jobs ended (%s); a job squeue no "
                         "longer lists is taken as ended", exc)
        for j in jobs:
            said = states.get(j.jid)
            if said:
                j.state, j.reason = said, "sacct"
            else:
                j.state, j.reason = "VANISHED", "squeue and sacct no longer list it"

    def _no_answer(self, exc: SlurmError, asked: float) -> None:
        """No answer to a look asked at ``asked`` (a command may take seconds to fail:
        squeue tries for ~10 s): the controller is away since then at least."""
        self.fails += 1
        if self.down_since is None:
            self.down_since = asked
            self.down_error = str(exc)
        if not self.gave_up and time.time() - self.down_since >= self.controller_wait:
            self.gave_up = True

    def _answered(self) -> None:
        self.fails = 0
        self.down_since = None

    def down_for(self) -> float:
        return 0.0 if self.down_since is None else time.time() - self.down_since

    def adopt(self, token: str) -> Job | None:
        """A job of ours that an sbatch without an answer did submit (found by its token)."""
        for jid, job in list(self.unknown.items()):
            if job.token == token:
                del self.unknown[jid]
                self.jobs[jid] = job
                return job
        return None

    def interval(self, waiting: bool) -> float:
        """Seconds to the next look: fast while a decision waits on the queue, slow once
        every job runs, backing off (fast x 2^k, at most slow) while nobody answers."""
        if self.down_since is not None:
            return float(min(self.slow, self.fast * 2 ** min(self.fails, 6)))
        return self.fast if waiting else self.slow
