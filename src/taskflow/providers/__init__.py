"""The master's end of a node: how nodes are started, reached and stopped.

:mod:`.handle` is the master's connection to one node agent; :mod:`.base`
the interface every provider has; :mod:`.local`, :mod:`.ssh`,
:mod:`.slurm` (batch and pilot jobs; its queue :mod:`.slurm_queue`, its
thread :mod:`.slurm_manager`, ``--slurm auto`` :mod:`.slurm_auto`),
:mod:`.slurm_alloc` (the allocation the master runs in) start agents;
:mod:`.simulated` stands many simulated nodes in for real ones (measuring the
master); :mod:`.dialback` accepts agents that connect over TCP;
:mod:`.staging` moves files to nodes without a shared filesystem;
:mod:`.cluster` reads the cluster file.
"""
