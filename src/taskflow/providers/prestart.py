"""A local agent's interpreter started early, while the runtime's own modules load.

The longest wait before a run's first result is its first local agent: a fresh
interpreter that imports the agent (50-60 ms on a 2-core machine), which the
master used to start only once it had imported the runtime itself (another
~45 ms). The first task decorator a program asks for (``from taskflow import
task``: ``taskflow._run_likely``), ``taskflow.Runtime`` (its first use in a
process), ``taskflow.start()`` and ``taskflow run`` (a run on local nodes)
therefore start one agent process at once, before they import the runtime,
with the very command and environment a
:class:`~taskflow.providers.local.LocalProvider` uses; the first local provider
that launches an agent with that environment takes it (:func:`take`): it is
that node's agent, sent the same hello as any. Nothing else talks to it.

One such process at a time, never more: whatever run starts next (any
provider) kills it if no local provider took it (:func:`discard`), as do the
interpreter's exit and :data:`TTL` seconds without a start; killed before its
hello, it has started nothing. ``TASKFLOW_PRESTART=0`` turns it off. This
module imports nothing of taskflow but its context (no runtime): it runs before the runtime is loaded.
"""
from __future__ import annotations

import atexit
import os
import subprocess
import sys
import threading

from ..context import PYTHON, inline_wanted

CMD = [PYTHON, "-m", "taskflow.node", "--stdio"]    # a local agent on its pipes
TTL = 30.0      # s an agent started early waits for a run to take it, then is killed

_lock = threading.Lock()
_early: tuple[subprocess.Popen[bytes], dict[str, str], threading.Timer] | None = None
_exit_hook = False


def agent_env(first: str | None = None) -> dict[str, str]:
    """A local agent's environment: this one, with this interpreter's path first (after
    ``first``: a folder about to be put first on it)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        ([first] if first else []) + [p for p in sys.path if p]
        + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return env


def begin(first: str | None = None) -> None:
    """Start an agent process now, for the run about to start (unless one waits already,
    or ``TASKFLOW_PRESTART=0``); ``first``: a folder the caller puts first on ``sys.path``
    before the run starts (``taskflow run``: the script's)."""
    global _early, _exit_hook
    if os.environ.get("TASKFLOW_PRESTART", "1") == "0" or inline_wanted():
        return                      # (an inline run has no agent: TASKFLOW_INLINE)
    with _lock:
        if _early is not None:
            return
        env = agent_env(first)
        try:
            proc = subprocess.Popen(CMD, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, env=env, close_fds=True,
                                    start_new_session=True)
        except OSError:
            return                  # (the provider starts its own, and says why it cannot)
        timer = threading.Timer(TTL, _expire, args=(proc,))
        timer.daemon = True
        _early = (proc, env, timer)
        if not _exit_hook:
            atexit.register(discard)
            _exit_hook = True
    timer.start()


def take(cmd: list[str], env: dict[str, str]) -> subprocess.Popen[bytes] | None:
    """The agent started early, if it runs ``cmd`` with ``env`` and is alive: the caller's
    from now on (None: the caller starts its own; one that does not fit is killed)."""
    global _early
    with _lock:
        early, _early = _early, None
    if early is None:
        return None
    proc, its_env, timer = early
    timer.cancel()
    if cmd == CMD and its_env == env and proc.poll() is None:
        return proc
    _kill(proc)
    return None


def discard() -> None:
    """A run starts without having taken the agent started early (or the interpreter
    exits): it is killed."""
    global _early
    with _lock:
        early, _early = _early, None
    if early is not None:
        proc, _, timer = early
        timer.cancel()
        _kill(proc)


def _expire(proc: subprocess.Popen[bytes]) -> None:
    global _early
    with _lock:
        if _early is None:
            return              # (taken, or killed already)
        waiting, _, _ = _early
        if waiting is not proc:
            return
        _early = None
    _kill(proc)


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """Kill an agent that was not sent its hello (it has started nothing) and reap it."""
    try:
        proc.kill()
        proc.wait(5)
    except (OSError, subprocess.TimeoutExpired):
        pass
    for f in (proc.stdin, proc.stdout, proc.stderr):
        if f is not None:
            try:
                f.close()
            except OSError:
                pass
