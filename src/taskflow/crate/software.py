"""The software a run used, as a crate names it: taskflow, Python, and the programs its
@binary / @mpi tasks ran, each with its resolved path and the version it says.

The programs are resolved on this machine (``shutil.which`` from the run's
directory): the nodes of a cluster run may hold other builds, so the crate says
where the path was resolved. ``PROGRAM --version`` is asked once per program,
with no input, in an empty directory of its own (removed after: a program that
takes ``--version`` for a file name writes nothing anywhere else) and a
deadline of :data:`VERSION_WAIT` seconds; a program that does not answer with
exit status 0 has no version in the crate.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from typing import NamedTuple

VERSION_WAIT = 3.0       # s a program gets to print its --version
VERSION_CHARS = 200      # of its first line


class Program(NamedTuple):
    declared: str            # as the decorator says it (``$VAR`` unexpanded)
    path: str | None         # resolved here, None: not found
    version: str | None      # the first line of ``--version``, None: no answer


def resolve(declared: str, cwd: str | None) -> Program:
    """``declared`` resolved (``$VAR`` expanded from this environment) and asked its
    version."""
    name = os.path.expandvars(declared)
    if os.sep in name and cwd and not os.path.isabs(name):
        name = os.path.join(cwd, name)
    path = shutil.which(name) if os.sep not in name else (
        name if os.path.isfile(name) and os.access(name, os.X_OK) else None)
    return Program(declared, os.path.realpath(path) if path else None,
                   version_of(path) if path else None)


def version_of(path: str) -> str | None:
    """The first non-empty line ``path --version`` prints (None: it fails or hangs)."""
    try:
        with tempfile.TemporaryDirectory(prefix="taskflow-version-") as empty:
            out = subprocess.run([path, "--version"], stdin=subprocess.DEVNULL, cwd=empty,
                                 capture_output=True, timeout=VERSION_WAIT, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    for line in (out.stdout or out.stderr).decode("utf-8", "replace").splitlines():
        if line.strip():
            return line.strip()[:VERSION_CHARS]
    return None
