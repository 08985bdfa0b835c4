"""Compatibility layers: run applications written for other workflow systems unchanged.

``taskflow run --compat pycompss app.py`` runs a PyCOMPSs application: the
names ``pycompss.*`` resolve to :mod:`taskflow.compat.pycompss` (an import
hook installed by the command, :mod:`.importhook`), the launcher behaves as
PyCOMPSs's ``runcompss`` (:mod:`taskflow.cli.runcompss`, on the one driver
of ``taskflow run``), and ``--project`` / ``--resources`` XML files become
taskflow nodes (:mod:`.xmlconfig`). docs/compat-pycompss.md lists what is
supported and what is not.
"""
