"""The wire: the only thing the master and a node agent share.

:mod:`.protocol` frames messages on a byte stream (pipes, SSH channels, TCP)
and reads them, :mod:`.framewriter` writes them without blocking;
:mod:`.messages` names every message and its fields; :mod:`.argpath` says
how a reference addresses a task's argument; :mod:`.thresholds` holds the
scheduling thresholds both sides agree on; :mod:`.dialback` is the
handshake of agents that connect to the master over TCP; :mod:`.template`
reads a program's ``args`` template (its ``{{name}}`` placeholders,
PyCOMPSs's bash-like words). Nothing here
imports anything of taskflow but :mod:`taskflow.errors`.
"""
