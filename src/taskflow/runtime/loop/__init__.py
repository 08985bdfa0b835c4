"""The loop thread: every node connection, results in, work out.

``dispatch`` (the :class:`~.dispatch.Dispatcher`: the selectors loop, one round per
wake-up: read frames, apply them under the run's lock through the rules, ask the
scheduler, send), ``outbox`` (what a round sends each node: FUNC, DATA, TASKS),
``relay`` (values copied node to node in parts) and ``remote_values`` (values left on
nodes, dropped there when their future dies). The dispatcher is the run's ``Comm``; it
is given the :class:`~taskflow.runtime.state.RunState`, the
:class:`~taskflow.runtime.recovery.recovery.Recovery` and its settings, never the
Runtime.
"""
