"""``pycompss.interactive``: the Jupyter integration of PyCOMPSs is not supported."""
from ..unsupported import module

module("pycompss.interactive", "the Jupyter integration",
       "in a notebook use taskflow.start() / taskflow.stop() with taskflow's own API")
