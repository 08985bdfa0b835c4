"""``pycompss.runtime``: ``management.classes.Future`` and ``management.object_tracker.OT``
(the rest is COMPSs's runtime)."""
