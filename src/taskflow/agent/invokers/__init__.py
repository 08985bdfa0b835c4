"""The shell-words parser (:mod:`.words`), shared by the master and the node.

The master reads a program's ``args`` template with it when a task is called
(``runtime.calltime``, ``compat``); an executor fills the call's values in
(:mod:`taskflow.agent.executor.invokers.command`). The invokers themselves run
in the forked executor: :mod:`taskflow.agent.executor.invokers`.
"""
