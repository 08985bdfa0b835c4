"""The master's end of a node: how nodes are started, reached and stopped.

:mod:`.handle` is the master's connection to one node agent; :mod:`.base`
the interface every provider has; :mod:`.local`, :mod:`.ssh` (its hosts
:mod:`.sshnode`; :mod:`.comeback` reaches a host lost by its link again, in
the same run) and the package :mod:`.slurm` (batch and pilot jobs, ``--slurm
auto``, the allocation the master runs in) start agents; :mod:`.simulated`
stands many simulated nodes in for real ones (measuring the master);
:mod:`.dialback` accepts agents that connect over TCP; :mod:`.adopting` is
adoption (a resumed master taking over the agents an earlier one left);
:mod:`.staging` moves files to nodes without a shared filesystem;
:mod:`.cluster` reads the cluster file (one node: :mod:`.nodeconfig`).
"""
