"""PyCOMPSs's programming interface on taskflow: ``pycompss.api.*`` and ``pycompss.functions.*``.

Under ``taskflow run --compat pycompss`` the module ``pycompss`` *is* this
package (:mod:`taskflow.compat.importhook`); tests and programs may also
import ``taskflow.compat.pycompss.api.task`` and friends directly. The
modules mirror PyCOMPSs's, one decorator per module; the semantics are
PyCOMPSs's where they differ from taskflow's own (docs/compat-pycompss.md).
"""
__version__ = "3.3"         # the PyCOMPSs API level this layer follows
