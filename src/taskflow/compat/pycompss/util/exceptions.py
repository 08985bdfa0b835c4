"""``pycompss.util.exceptions``: PyCOMPSs's exception classes, for ``except`` clauses."""
from __future__ import annotations

from ....errors import UsageError


class PyCOMPSsException(Exception):  # noqa: N818 - PyCOMPSs's name
    """A PyCOMPSs error (taskflow raises its own errors; this class is for applications)."""

    def __init__(self, message: str = "") -> None:
        super().__init__(message)
        self.message = message


class NotInPyCOMPSsException(PyCOMPSsException):
    """A PyCOMPSs feature used outside a PyCOMPSs run."""


class NotImplementedException(PyCOMPSsException):
    """A feature not implemented."""


class MissingImplementedException(PyCOMPSsException):
    """An implementation is missing."""


class SerializerException(PyCOMPSsException):
    """An object could not be serialised."""


class TimeOutError(PyCOMPSsException):
    """A task ran out of its time."""


class CancelError(PyCOMPSsException):
    """A task was cancelled."""


__all__ = ["PyCOMPSsException", "NotInPyCOMPSsException", "NotImplementedException",
           "MissingImplementedException", "SerializerException", "TimeOutError",
           "CancelError", "UsageError"]
