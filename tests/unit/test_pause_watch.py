"""The dispatch loop's pause watch (runtime/loop/pause.py): a gap between two rounds far
longer than a round is said once, as a pause when the process used no CPU time meanwhile
(stopped, frozen), as a busy hold-up when it did. The gaps are set on the watch's own
readings (a paused master for real: tests/cluster/test_paused_master.py)."""
from __future__ import annotations

from taskflow.runtime.bus import EventBus
from taskflow.runtime.loop.pause import PAUSE_SAID, PauseWatch


def test_a_round_gap_is_a_pause_only_past_the_mark_and_said_for_what_it_was():
    w = PauseWatch()
    assert w.tick() == 0.0                          # rounds a moment apart
    w.last -= PAUSE_SAID - 1.0
    assert w.tick() == 0.0                          # a slow round: nothing said
    w.last -= 21.0                                  # 21 s without a round, no CPU used
    gap = w.tick()
    assert gap >= 21.0
    text = w.say(gap, EventBus(), adoptable=True)
    assert text.startswith("the master was paused for 21 s (stopped by SIGSTOP or Ctrl-Z")
    assert text.endswith("nodes that took it for lost are reached again, with the tasks they "
                         "kept")
    assert w.tick() == 0.0                          # said once
    w.last -= 12.0                                  # 12 s without a round, 10 s of CPU used
    w.last_cpu -= 10.0
    gap = w.tick()
    text = w.say(gap, EventBus(), adoptable=False)
    assert text == ("the master's loop was held up for 12 s (the process was busy: 10 s of "
                    "CPU time): it sent nothing to its nodes meanwhile")


def test_a_slow_start_of_the_nodes_is_no_pause(tmp_path, monkeypatch):
    """The nodes' start comes before the loop's first round (an SSH host installing
    taskflow, a Slurm allocation): the watch starts with the loop, so it says nothing."""
    import time

    import taskflow
    from taskflow.journal.reader import Journal
    from taskflow.providers.local import LocalProvider
    from taskflow.runtime.loop import pause

    monkeypatch.setattr(pause, "PAUSE_SAID", 0.3)

    class SlowStart(LocalProvider):
        def start(self, *a, **kw):
            time.sleep(0.8)             # past the (lowered) mark before the loop runs
            return super().start(*a, **kw)
    with taskflow.Runtime(providers=[SlowStart(slots=1)], run_dir=str(tmp_path),
                          echo_logs=False) as rt:
        taskflow.wait_on(taskflow.task(returns=1)(abs)(-1))
    with Journal(rt.run_dir) as j:
        said = [ln["line"] for ln in j.logs(task=0)]
    assert not [ln for ln in said if "paused" in ln or "held up" in ln], said
