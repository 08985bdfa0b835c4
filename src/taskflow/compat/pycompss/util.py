"""``pycompss.util``: the COMPSs runtime's internals (storages, serialisation, tracing...)."""
from ..unsupported import module

module("pycompss.util", "the COMPSs runtime's internals, persistent storage included",
       "use the pycompss.api modules only")
