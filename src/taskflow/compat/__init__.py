"""Compatibility layers: run applications written for other workflow systems unchanged.

``taskflow run --compat pycompss app.py`` runs a PyCOMPSs application: the
names ``pycompss.*`` resolve to :mod:`taskflow.compat.pycompss` (an import
hook installed by the command, :mod:`.importhook`), the launcher behaves as
PyCOMPSs's ``runcompss`` (:mod:`taskflow.cli.runcompss`, on the one driver
of ``taskflow run``), and ``--project`` / ``--resources`` XML files become
taskflow nodes (:mod:`.xmlconfig`). docs/compat-pycompss.md lists what is
supported and what is not.

A PyCOMPSs task and what each of its calls decides is :mod:`.calls`; the
modules here are what the decorators share (:mod:`.external`, :mod:`.hooks`,
:mod:`.argwarn`, :mod:`.unsupported`), what the launcher sets up around the
application (:mod:`.xmlconfig`, :mod:`.services`, :mod:`.wall_clock_limit`,
:mod:`.slurm_job_end`), and how values and imports cross (:mod:`.importhook`,
:mod:`.generators`, :mod:`.references` for ``@local``).
"""
