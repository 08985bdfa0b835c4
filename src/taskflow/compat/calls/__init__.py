"""A PyCOMPSs task on taskflow: the task function and what each of its calls decides.

:mod:`.taskfn` holds :class:`~.taskfn.CompatTaskFunction`, the callable a
PyCOMPSs ``@task`` returns. Before a call becomes a native call it decides,
with the modules here: how many values come back and of which kind
(:mod:`.returns`), what its arguments change (:mod:`.callargs`), its
constraints (:mod:`.constraints`), where it runs and with how many MPI ranks
(:mod:`.placing`), which ``@implement`` alternative runs (:mod:`.implement`),
a ``@reduction`` tree (:mod:`.reduction`), an ``is_replicated`` call's copies
(:mod:`.replicated`, whose tasks are :mod:`.replica_tasks`), and the spec
variant the combination gets (:mod:`.variants`).

The decorators of :mod:`taskflow.compat.pycompss.api` declare into these; the
modules here import nothing of that package.
"""
