"""``pycompss.util``: the names applications use (``exceptions``, ``context``).

The rest of ``pycompss.util`` is the COMPSs runtime's internals (storages,
serialisation, tracing, ...): importing one of those is an ``ImportError``
that says the layer does not provide it (``taskflow.compat.importhook``).
"""
