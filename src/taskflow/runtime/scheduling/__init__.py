"""Where ready tasks run: the ready queue, the nodes by load, multi-node placement.

``scheduler`` (the ready queue's tasks placed on nodes by free slots and memory,
load and locality; the policies), ``readyqueue`` (priority, then order of calls),
``nodeloads`` (the nodes in a heap by load: one choice costs O(log n)) and ``gang``
(tasks that hold several nodes or GPUs). They take nodes and tasks, and what the run
learned per task function (``specruns``); nothing here sends or journals anything.
"""
