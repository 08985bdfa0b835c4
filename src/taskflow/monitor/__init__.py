"""The live web monitor (Flask + werkzeug; ``pip install 'taskflow-hpc[monitor]'``)."""
from __future__ import annotations

from .server import Monitor

__all__ = ["Monitor"]
