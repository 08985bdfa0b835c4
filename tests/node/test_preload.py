"""Executors import the script's modules before their first task (PRELOAD).

Real runs (``taskflow run`` and a plain ``python script.py``): a module the
script imports notes each process that imports it in a file; the task, which
does not refer to it, finds its own executor there. A module that raises when
imported on a node (it needs what only the script's process has) is skipped
there: the run goes on.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

MARKER = textwrap.dedent('''
    import os
    with open(os.environ["PRELOAD_MARKS"], "a") as f:
        f.write(f"{os.getpid()}\\n")
''')

FAILING = textwrap.dedent('''
    import os
    if os.environ.get("FAILING_PID") != str(os.getpid()):
        raise RuntimeError("this module imports only in the script's own process")
''')

# the task refers to neither module: loading it imports neither
TASK = textwrap.dedent('''
    from taskflow import task, wait_on

    @task(returns=1)
    def where():
        import os, sys
        with open(os.environ["PRELOAD_MARKS"]) as f:
            marks = f.read().split()
        return os.getpid(), marks, "failing" in sys.modules

    pid, marks, failing = wait_on(where())
    print("PRELOADED", str(pid) in marks, "FAILING", failing, "IN_MASTER", str(os.getpid()) in marks)
''')

IMPORTS = textwrap.dedent('''
    import os
    os.environ["FAILING_PID"] = str(os.getpid())      # (failing imports in this process only)
    import failing
    import marker
''')


def _run(cmd: list[str], tmp_path: os.PathLike[str], script: str) -> str:
    (tmp_path / "marker.py").write_text(MARKER)          # type: ignore[operator]
    (tmp_path / "failing.py").write_text(FAILING)        # type: ignore[operator]
    path = tmp_path / "wf.py"                            # type: ignore[operator]
    path.write_text(script)
    env = dict(os.environ, PRELOAD_MARKS=str(tmp_path / "marks.txt"),  # type: ignore[operator]
               TASKFLOW_PRELOAD="1")
    r = subprocess.run([*cmd, str(path)], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


@pytest.mark.timeout(180)
def test_executors_import_the_script_modules_as_it_imports_them(tmp_path):
    """``taskflow run``: the runtime runs before the script's imports; the executor has
    imported ``marker`` (and skipped ``failing``, which raises there) before the task."""
    out = _run([sys.executable, "-m", "taskflow", "run", "-w", "2", "--no-progress"],
               tmp_path, IMPORTS + TASK)
    assert "PRELOADED True FAILING False IN_MASTER True" in out, out


@pytest.mark.timeout(180)
def test_modules_imported_before_the_run_starts_are_preloaded(tmp_path):
    """``python script.py``: the script imports first and its first call starts the
    runtime; the modules ``__main__`` holds then go to the executors."""
    out = _run([sys.executable], tmp_path, IMPORTS + TASK)
    assert "PRELOADED True FAILING False IN_MASTER True" in out, out
