"""What a person sees of a run while it runs and when it ends.

``bars`` (progress bars on a terminal, the summary line), ``lines`` (plain progress
lines off a terminal), ``occupancy`` (tasks running and queued per node),
``failures`` (the failure report: each failed task's block, the user's frames),
``pathhint`` (a missing file a task was given as a plain value), ``plainscript``
(plain ``python script.py``: its failures reported as ``taskflow run`` does). They
read a run through :class:`~.view.RunView` only, and import nothing of the runtime.
"""
