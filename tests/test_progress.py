"""Terminal progress (rich): a bar per task name with done/running/failed, %, elapsed, ETA."""
from __future__ import annotations

import io
import time

import pytest

import taskflow
from taskflow.runtime.console import MAX_NAMES, Progress

import observe_tasks as ot


def test_bars_per_name_with_counts_printed_once_off_a_terminal(tmp_path):
    out = io.StringIO()
    with taskflow.Runtime(workers=2, run_dir=str(tmp_path / "runs"), echo_logs=False) as rt:
        prog = Progress(rt, stream=out)
        futs = [ot.nap(0.0) for _ in range(3)]
        with pytest.raises(taskflow.TaskError):
            taskflow.wait_on(ot.boom(1))
        time.sleep(0.3)          # the bus has delivered nap and boom: they come first
        futs += [ot.named(f"step_{i:02d}")(0.0) for i in range(MAX_NAMES + 2)]
        taskflow.wait_on(futs)
        prog.close()
    text = out.getvalue()
    lines = text.splitlines()
    assert lines[0].startswith(f"taskflow run {rt.run_id}: 1 node(s), 2 slot(s)")
    (total,) = [ln for ln in lines if ln.startswith("all tasks")]    # printed once, complete
    assert f" {MAX_NAMES + 6}/{MAX_NAMES + 6} " in total and "1 failed" in total
    assert "100%" in total and "eta" in total
    (nap,) = [ln for ln in lines if ln.startswith("nap ")]
    assert " 3/3 " in nap and "100%" in nap and "failed" not in nap
    (boom,) = [ln for ln in lines if ln.startswith("boom ")]
    assert " 1/1 " in boom and "1 failed" in boom
    # the first MAX_NAMES names get a bar each (in the order they came), the rest share one
    named = [ln for ln in lines if ln.startswith("step_")]
    assert len(named) == MAX_NAMES - 2 and all(" 1/1 " in ln for ln in named)
    (other,) = [ln for ln in lines if ln.startswith("4 other names")]
    assert " 4/4 " in other


def test_running_tasks_are_counted_while_they_run(tmp_path):
    out = io.StringIO()
    with taskflow.Runtime(workers=2, run_dir=str(tmp_path / "runs"), echo_logs=False) as rt:
        prog = Progress(rt, stream=out)
        slow = ot.named("slow")                 # a new function: not known to be short
        futs = [slow(1.5), slow(1.5), slow(0.0)]
        running = {}
        deadline = time.time() + 30
        while time.time() < deadline:
            running = prog._running()
            if running.get("slow") == 2:
                break
            time.sleep(0.05)
        assert running == {"slow": 2}              # two slots: two running, one waiting
        rt.bus.flush()
        prog._sync()
        bars = {t.description: t for t in prog.bars.tasks}
        assert bars["slow"].fields["running"] == 2 and bars["slow"].total == 3
        taskflow.wait_on(futs)
        prog.close()
