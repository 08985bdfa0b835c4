"""The scheduling thresholds, in one place: how short is short, how deep is deep.

Work flows through three queues, each of which decides on a task's mean
duration so far (measured where the queue is): the master prefetches work to
a node beyond its free slots, the node's agent queues work on an executor
beyond its running task, and an executor holds finished results back to send
them together. The deeper the queue, the shorter a task must be to be worth
queueing there without a round trip: a wrong guess leaves a slot idle (too
shallow) or strands tasks behind a long one (too deep). The values were
measured on the no-op and chain benchmarks (benchmarks/); each pair below is
read by exactly the module named in its comment.
"""
from __future__ import annotations

from typing import Final

# Master (runtime.scheduling.scheduler, runtime.loop.dispatch): extra tasks per slot sent to a node.
MASTER_SHORT: Final = 0.005       # s: functions faster than this are prefetched deeply...
MASTER_DEEP: Final = 256          # ...this many extra tasks per slot (else one extra)
# ...but a function whose calls leave values on their node is prefetched only as deep as
# this many bytes of such values per slot (its mean so far), and at least one extra task.
PREFETCH_BYTES: Final = 16 * 2**20
# A function faster than MASTER_SHORT gets no "dispatched" journal event of its own: its
# end event carries the dispatch time, and nobody could watch it run anyway.

# Node agent (agent.placement): tasks queued on one executor behind the running one.
NODE_SHORT: Final = 0.002         # s: functions faster than this are queued...
NODE_DEEP: Final = 32             # ...this deep per executor (else only on idle executors)
LEAD: Final = 0.002               # s: a long task's successor goes to its executor this early...
LEAD_MIN_MEAN: Final = 0.02       # ...when the function's mean is at least this (LEAD <= 10 %)

# Node agent (agent.agent): tasks whose function's mean here is below this get no STARTED
# message (the master shows them running only through their end).
RUNNING_SIGNAL_MIN: Final = MASTER_SHORT

# Node agent (agent.chained): a task held for inputs that nothing on the node makes (they
# are to come from the master) fails after this long, naming what it waited for, instead
# of waiting silently (the master sends such values in the frame before the task's).
HELD_INPUT_WAIT: Final = 60.0
# ...and the held tasks are looked at this often while any is held: one whose inputs all
# came goes at the latest then (each arrival releases its waiters; this is the net under
# that rule, which a missed arrival would otherwise turn into a silent wait for ever).
HELD_RECHECK: Final = 1.0

# Executor (agent.executor.loop): results of faster tasks wait to travel in one frame...
EXEC_SHORT: Final = 0.001         # s
# Executor (agent.executor.usage): tasks whose function's mean here is at least this, or not known
# yet, are measured (CPU time, peak memory); the measurement costs tens of microseconds.
USAGE_MIN: Final = MASTER_SHORT
# ...and before a task of at most this mean, finished results wait at most this long (a
# stream of 1-5 ms tasks, e.g. programs, then sends a frame every few tasks, not each one;
# an executor with nothing more queued answers at once).
EXEC_HOLD: Final = 0.005          # s
