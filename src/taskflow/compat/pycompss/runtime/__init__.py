"""``pycompss.runtime``: only ``management.classes.Future`` is provided (the rest is COMPSs's runtime)."""
