"""What a run keeps so that it can be resumed, and what it takes back after a loss.

``recovery`` (the :class:`~.recovery.Recovery` the runtime holds: one place that
says whether the run is adoptable), ``log`` (the resume log, written before a result
is acted on), ``restore`` (reading an earlier run's log, restoring its finished
calls), ``adopt`` (a resumed master takes over the tasks the earlier run's agents
kept), ``comeback`` (a node the running master lost rejoins the same run with what it
kept), ``runlock`` (the run directory's lock) and ``recordfail`` (a record that cannot
be written fails the run, loudly). "Adopt" always means the first (another master,
later); "comeback" and "rejoin" the second (the same master, the same run).
"""
