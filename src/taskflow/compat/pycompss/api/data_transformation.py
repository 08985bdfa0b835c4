"""``pycompss.api.data_transformation``: not supported (``@data_transformation`` is an error)."""
from ...unsupported import decorator

data_transformation = decorator("data_transformation", "data transformations between tasks",
                                "transform the data in a task of its own")
dt = data_transformation
