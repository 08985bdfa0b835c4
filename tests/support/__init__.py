"""Helpers the tests share; none of them is a test module (pytest collects nothing here).

Importable as ``support.<module>`` because tests/conftest.py puts tests/ first on
sys.path. The task libraries (tasks_lib, memory_tasks, observe_tasks, ssh_tasks) are
pickled by that name, ``support.tasks_lib.inc``: a node agent imports them from the
master's sys.path, which it is sent at its start, and a subprocess that runs a master
needs tests/ on its PYTHONPATH (``support.paths.TESTS``).
"""
