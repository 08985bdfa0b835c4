"""PyCOMPSs's agents mode and its streams under ``taskflow run --compat pycompss``.

``--agents`` (PyCOMPSs's ``enqueue_compss --agents``, the deployment whose workers
submit the tasks a task calls) makes a call in a task a child task; without it the
call runs inline, as under runcompss (test_compat_pycompss.py). Alias-less
``FileDistroStream``s are streams of their own even on one directory.
"""
from __future__ import annotations

import click
import pytest

from taskflow.cli.runcompss import translate

from support.pycompss_apps import journal, ok, run_app


def test_agents_submits_the_calls_made_in_tasks_and_runcompss_runs_them_inline(tmp_path):
    """The same application both ways: with --agents, count(4) calls count(3) ... as child
    tasks (the journal has their edges), CONTEXT.is_nesting_enabled() is True in a task, and
    compss_wait_on_file in a task waits for the files its children (a @binary among them)
    write; without it, the calls run inline in count(4) and nesting is off, as in PyCOMPSs."""
    agents, plain = tmp_path / "agents", tmp_path / "plain"
    agents.mkdir()
    plain.mkdir()
    out = ok(run_app("app_agents_nesting.py", "4", "files", cwd=agents,
                     options=("--workers", "2", "--agents")))
    assert out == {"count": 4, "in_task": True, "in_main": False, "copied": "made in a task"}
    with journal(agents) as db:
        edges = db.execute("SELECT COUNT(*) FROM children").fetchone()[0]
        tasks = db.execute("SELECT COUNT(*) FROM tasks WHERE state='DONE'").fetchone()[0]
    # count(4) -> count(3) -> count(2) -> count(1); files_in_task -> write, append, copy
    assert (edges, tasks) == (6, 9)
    out = ok(run_app("app_agents_nesting.py", "4", cwd=plain))
    assert out == {"count": 4, "in_task": False, "in_main": False}
    with journal(plain) as db:
        assert db.execute("SELECT COUNT(*) FROM children").fetchone()[0] == 0
        assert db.execute("SELECT COUNT(*) FROM tasks").fetchone()[0] == 2


def test_objects_a_task_gives_to_inout_parameters_of_its_children_follow_them(tmp_path):
    """As PyCOMPSs's agents do (their 4.2_1_agent_python test): two increment(box) calls
    in a task, a read(box) after them and a method on box (self INOUT) each see the
    version the call before wrote, and compss_wait_on in the task gives the last one. A
    COLLECTION_INOUT list given by a task cannot be followed so: an error at the call that
    names the task, the parameter and what to do (never the old list back)."""
    out = ok(run_app("app_nested_inout.py", cwd=tmp_path, options=("--workers", "2", "--agents")))
    assert out == {"box": 12, "seen": 2, "items": [0, 1, 1]}
    r = run_app("app_nested_inout.py", "collection", cwd=tmp_path,
                options=("--workers", "2", "--agents", "--retries", "0"))
    assert r.returncode != 0
    assert "Error running application" in r.stdout and "RESULT" not in r.stdout
    assert ("task double_all was called inside a running task with parameter 'items' "
            "COLLECTION_INOUT (a list)") in r.stderr
    assert "return the new values instead (returns=...)" in r.stderr


def test_file_streams_without_an_alias_are_new_streams_even_on_one_directory(tmp_path):
    """As PyCOMPSs's 9_stream_files does: a FileDistroStream made again on the directory
    of an earlier, closed one takes a producer and gives its own files only."""
    out = ok(run_app("app_file_streams_again.py", cwd=tmp_path))
    assert out == {"seen": [["first-0", "first-1", "first-2"], ["second-0", "second-1"]]}
    with journal(tmp_path) as db:
        rows = db.execute("SELECT kind, items FROM streams ORDER BY t_open").fetchall()
    assert rows == [("files", 3), ("files", 2)]


def test_agents_option_and_its_hierarchies():
    for given, hierarchy in (("--agents", "plain"), ("--agents=plain", "plain"),
                             ("--agents=tree", "tree")):
        args, opts = translate([given, "app.py"], set())
        assert args == ["app.py"] and opts["agents"] == hierarchy
    with pytest.raises(click.UsageError, match="plain or tree"):
        translate(["--agents=star", "app.py"], set())
