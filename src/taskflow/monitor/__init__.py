"""The live web monitor (Flask + werkzeug: the ``monitor`` extra, e.g. ``pip install '.[monitor]'``)."""
from __future__ import annotations

from .server import Monitor

__all__ = ["Monitor"]
