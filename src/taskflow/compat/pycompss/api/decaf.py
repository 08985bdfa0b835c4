"""``pycompss.api.decaf``: not supported (declaring a task with ``@decaf`` is an error)."""
from ...unsupported import decorator

decaf = decorator("decaf", "Decaf dataflow tasks", "run the Decaf program with @mpi(binary=...)")
Decaf = decaf
