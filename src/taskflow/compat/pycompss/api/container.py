"""``pycompss.api.container``: not in this layer (tasks in containers come with taskflow's
containers support); declaring a task with ``@container`` is an error."""
from ...unsupported import decorator

container = decorator("container", "a task run inside a container",
                      "run the program directly with @binary, or use taskflow's own container "
                      "support when it lands")
Container = container
