"""What libraries and generated workflows written for PyCOMPSs by others rely on (issue 37),
found running them unchanged (dislib's test suite, WfCommons's PyCOMPSs translator); each a
small application of tests/compat/compat_apps/ run through ``taskflow run --compat pycompss``."""
from __future__ import annotations

from support.pycompss_apps import ok, run_app


def test_compss_wait_on_gives_back_what_no_task_made(tmp_path):
    """A model's attributes waited on one by one: futures become values; a method, a task
    function and a generator come back as they are (taskflow's own wait_on refuses them as
    likely mistakes; PyCOMPSs returns any object it does not track)."""
    out = ok(run_app("app_library_model.py", cwd=tmp_path))
    assert out == {"coef": [3, 7], "total": 6, "name": "linear", "kernel": True,
                   "task_fn": True, "generator": True, "several": True}
