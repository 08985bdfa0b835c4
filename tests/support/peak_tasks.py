"""Tasks with known memory peaks, for the trace's peak_rss tests (importable by workers).

Each allocation touches every page, so the bytes are resident, not only reserved.
"""
from __future__ import annotations

import os
import shlex
import subprocess
import sys

from taskflow import binary, task

MiB = 2**20


def alloc_code(mib: int) -> str:
    """A Python program that makes ``mib`` MiB resident, then exits."""
    return f"b = bytearray({mib} * 2**20)\nfor i in range(0, len(b), 4096): b[i] = 1\n"


@binary(binary=sys.executable, args="-c {{code}}")
@task(returns=int)
def program(code): ...


@task(returns=int)
def python_alloc(mib):
    """The executor itself holds ``mib`` MiB while the task runs."""
    b = bytearray(mib * MiB)
    for i in range(0, len(b), 4096):
        b[i] = 1
    return len(b)


@task(returns=int)
def child_alloc(mib):
    """A child process holds the peak: ``mib`` MiB; the task's own process stays small."""
    return subprocess.run([sys.executable, "-c", alloc_code(mib)], check=True).returncode


@task(returns=int)
def system_alloc(mib):
    """A child that C code reaps (``os.system``), not ``os.waitpid``."""
    return os.system(shlex.join([sys.executable, "-c", alloc_code(mib)]))
