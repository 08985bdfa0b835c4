"""``pycompss.streams``: distributed streams (Kafka, object and file streams).

Importing the modules works, so an application that only defines names
imports; creating a stream raises :class:`~taskflow.compat.unsupported.NotSupported`:
taskflow's PyCOMPSs layer does not provide distributed streams (exchange the
data through files or task results instead).
"""
