"""What runs in a forked executor: one process per slot, forked by the agent.

:mod:`.loop` is the executor's main (it reads batches of tasks from the
agent's pipe, runs them, answers RESULTS); :mod:`.inputs` resolves a task's
references to values, :mod:`.capture` turns its prints into output lines
(:mod:`.loglines`: rows the journal keeps), :mod:`.usage` measures it,
:mod:`.limits` bounds its memory, :mod:`.taskenv` gives it PyCOMPSs's
environment, :mod:`.lifeline` ends it with its agent, :mod:`.programs` is
what the executor keeps about the programs it starts and :mod:`.invokers`
runs the tasks that are not a plain Python call (programs, MPI, containers,
HTTP, nested workflows).

The agent's loop imports a few names from here to set up an executor before
it forks one (``loop.executor_main``, ``programs.PidSlot``, ``lifeline.arm``,
``taskenv.compss_environment``, ``loglines.KEEP_DIR``) or to explain its death
(``limits.executor_killed``); nothing here imports the agent's loop. Shared
with the loop: :mod:`taskflow.agent.cgroups` (the node's control groups). The
command-line template both sides read is :mod:`taskflow.wire.template`;
``invokers/words.py`` fills it in on the node.
"""
