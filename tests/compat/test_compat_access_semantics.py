"""PyCOMPSs data-access semantics that its own test applications rely on (issue 37), each a
small application of tests/compat/compat_apps/ run through ``taskflow run --compat pycompss``:
IN_DELETE, file collections written by a task, a followed list inside a collection, @local
with futures, @dt's collection size, a replicated task from the application's module,
written collections of lists and None, and a future given for a collection."""
from __future__ import annotations

from support.pycompss_apps import ok, run_app


def test_in_delete_reads_then_forgets_the_object(tmp_path):
    out = ok(run_app("app_in_delete.py", cwd=tmp_path))
    assert out["first"] == 3 and out["fresh"] == ""        # never followed: "" as PyCOMPSs
    assert out["followed"] and out["read"] == 15             # the INOUT task's version is read
    assert out["after"] == "" and not out["pending"]         # then the object is forgotten
    assert out["sizes"] == [1, 3] and out["b_after"] == ""   # COLLECTION_IN_DELETE: each element


def test_file_collections_are_outputs_of_their_task(tmp_path):
    out = ok(run_app("app_collection_files.py", cwd=tmp_path))
    assert out["read"] == [("a.txt", "x0+"), ("b.txt", "x1+")]   # OUT, then INOUT, then IN
    assert out["renamed"] == [True] and out["again"] == [("c.txt", "kr")]  # Keep_rename
    assert out["on_disk"] == ["x0+", "x1+", "kr"]
    assert (tmp_path / "one" / "a.txt").read_text() == "x0+"     # directories made for them


def test_local_turns_futures_into_values_everywhere(tmp_path):
    out = ok(run_app("app_local_futures.py", cwd=tmp_path))
    assert out["got"] == [[1], [[2, 3], 7], [("w", [6])]]    # *args and **kwargs waited for
    assert out["u"] == [2, 3] and out["w"] == [6] and out["G"] == [1]   # locals and globals


def test_dt_collection_takes_the_first_size_values(tmp_path):
    assert ok(run_app("app_dt_size.py", cwd=tmp_path))["joined"] == "a-b-c"


def test_replicated_method_of_an_application_module(tmp_path):
    """The copies carry a function and an instance of a module that imports pycompss: every
    executor of every node resolves it, whatever task it runs first."""
    out = ok(run_app("app_replicated_module.py", cwd=tmp_path,
                     options=("--workers", "2", "--local-nodes", "2")))
    assert out == {"built": 42, "ready": True, "model": True}


def test_written_collections_of_lists_and_none_give_back_the_task_writes(tmp_path):
    out = ok(run_app("app_collection_writes.py", cwd=tmp_path))
    assert out["lists"] == [[0], [1, 1], [2, 2, 2]] and out["read"] == [1, 2, 3]  # Depth 1
    assert out["deep"] == [{"i": 0}, {"i": 1}]          # default depth: [] and None replaced
    assert out["acc"] == [[100], [101]] and out["grown"] == [1, 1]     # appends in place
    assert out["nones"] == [[0], [1, 1]]
    assert out["values"] == [1, 2]                      # plain values: read, as PyCOMPSs
    assert out["refused"].startswith("UsageError: task fill, parameter 'out' is ")
    assert "got a set: the task's values for its None or plain elements" in out["refused"]


def test_a_future_given_for_a_collection_is_one_object(tmp_path):
    out = ok(run_app("app_collection_future.py", cwd=tmp_path))
    assert out == {"before": 6, "after": 16, "made": [[0], [1], [2], [3], [10]]}


def test_container_runs_programs_and_functions_in_the_image(podman, tmp_path):
    out = ok(run_app("app_container.py", cwd=tmp_path))
    assert out["file"] == "in the image\n"           # the image's files; the file is ours
    assert out["code"] == 3 and out["described"] == 5    # exit codes; /etc/os-release: none
    assert out["python"] == ["in the image" * 2, "/usr/bin/python3"]
