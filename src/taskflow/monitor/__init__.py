"""The live web monitor (Flask + werkzeug; ``pip install 'taskflow[monitor]'``)."""
from __future__ import annotations

from .server import Monitor

__all__ = ["Monitor"]
