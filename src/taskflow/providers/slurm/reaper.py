"""Cancel a run's Slurm jobs when its master dies without stopping them.

A master that is SIGKILLed, killed by the OOM killer or loses its login node
never reaches :meth:`SlurmProvider.stop`: pending jobs would still start
later, hold nodes and fail to dial back. So each Slurm provider starts this
small process, in its own session, reading a pipe whose only writer is the
master:

    python -m taskflow.providers.slurm.reaper USER all|pending JOB_NAME...

End of file without the word ``stop`` first means the master died:
``scancel --name JOB_NAME --user USER`` for each name (the job name carries the
unique run id; a resumed run's reaper also names the earlier run's jobs it
adopted). ``pending``: the run is adoptable (``--adopt-grace`` > 0), so only
its PENDING jobs are cancelled: the agents of the running ones wait for a
resumed master (:mod:`.adopt`) and, when none comes within the grace,
exit, and their jobs end by themselves. A master that stops cleanly writes
``stop`` and has scancelled already.
"""
from __future__ import annotations

import os
import subprocess
import sys

from ...context import PYTHON


def spawn(job_names: list[str], user: str, keep_running: bool = False) -> int:
    """Start the reaper; return the pipe's write end (the master keeps it open).
    ``keep_running``: cancel only the pending jobs (an adoptable run)."""
    r, w = os.pipe()           # both ends non-inheritable: only the reaper gets ``r``
    subprocess.Popen([PYTHON, "-m", "taskflow.providers.slurm.reaper", user,
                      "pending" if keep_running else "all", *job_names],
                     stdin=r, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                     start_new_session=True, close_fds=True)
    os.close(r)
    return w


def disarm(fd: int | None) -> None:
    """The master stops cleanly: tell the reaper so, and let it exit."""
    if fd is None:
        return
    try:
        os.write(fd, b"stop")
    except OSError:
        pass
    finally:
        os.close(fd)


def main(argv: list[str]) -> int:
    user, which, *job_names = argv
    got = b""
    while True:
        try:
            chunk = os.read(0, 64)
        except InterruptedError:
            continue
        if not chunk:
            break
        got += chunk
    if b"stop" in got:
        return 0
    states = ["--state", "PENDING"] if which == "pending" else []
    for name in job_names:
        subprocess.run(["scancel", "--name", name, "--user", user, *states],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
