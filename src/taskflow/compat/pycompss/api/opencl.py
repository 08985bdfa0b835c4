"""``pycompss.api.opencl``: not supported (declaring a task with ``@opencl`` is an error)."""
from ...unsupported import decorator

opencl = decorator("opencl", "OpenCL kernels as tasks", "call the kernel from a @task (pyopencl) "
                   "or a @binary")
OpenCL = opencl
