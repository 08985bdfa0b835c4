"""The node side: the agent process and everything that runs in it.

:mod:`.agent` is the loop (one per host, whatever transport reached it),
:mod:`.workqueue`, :mod:`.placement` and :mod:`.chained` decide which
executor runs what, :mod:`.executor` runs Python tasks, :mod:`.invokers`
runs programs, :mod:`.sampler` reports the host's load. Modules here import
only :mod:`taskflow.wire`, :mod:`taskflow.context`, :mod:`taskflow.errors`
and this package: a node never loads the master.
"""
