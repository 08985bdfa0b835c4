"""``pycompss.api.julia``: not supported (declaring a task with ``@julia`` is an error)."""
from ...unsupported import decorator

julia = decorator("julia", "Julia tasks", "run the script with @binary(binary=\"julia\", "
                  "args=\"script.jl ...\")")
Julia = julia
