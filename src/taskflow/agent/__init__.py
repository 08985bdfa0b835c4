"""The node side: the agent process, and (in :mod:`.executor`) its forked executors.

:mod:`.agent` is the loop (one per host, whatever transport reached it:
:mod:`.serve`); :mod:`.link` its stream to the current master;
:mod:`.workqueue`, :mod:`.placement` and :mod:`.chained` decide which
executor runs what, :mod:`.pool` forks them and :mod:`.stops` handles the
tasks they do not answer for; :mod:`.store`, :mod:`.holding` and
:mod:`.memory` keep the values that stay on the node; :mod:`.orphan`,
:mod:`.recent` and :mod:`.redial` keep an adoptable run's tasks when its
master is lost, until the next one attaches. :mod:`.executor` runs tasks (a
subpackage: what runs in the forked processes), :mod:`.sampler` reports the
host's load. Modules here import only :mod:`taskflow.wire`,
:mod:`taskflow.context`, :mod:`taskflow.errors` and this package: a node
never loads the master.
"""
