"""The rules of a run: what happens when a task ends, fails, is cancelled or must be made again.

``outcomes`` (a result, a failure and its policy, retries, a lost node), ``ending``
(what every end shares: futures finished, successors released or cancelled, the
task's count and journal rows), ``cancel`` (cancelled tasks and groups, GroupAbort),
``lineage`` (a value lost with its node made again by the call that made it) and
``defaults`` (a failed task's default outputs). They change only the
:class:`~taskflow.runtime.state.RunState` and ask the nodes for things through its
``Comm``, always under the run's lock, on the loop thread or the caller's; they never
see the Runtime, so unit tests drive them with a fake Comm and no process.
"""
