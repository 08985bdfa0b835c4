"""The monitor's ``GET /metrics[?run=RUN]``: a run's figures in Prometheus's text format
(:mod:`taskflow.metrics`), behind the monitor's token like every other route."""
from __future__ import annotations

from typing import Any

from flask import Response, jsonify

from ..journal.reader import RunNotFound, resolve_run


class MetricsRoute:
    """Answers /metrics for the runs under ``root``: ``run`` given, else the monitor's
    (``default_run``, or the run ``live`` is the master of), else the latest."""

    def __init__(self, root: str, default_run: str | None, live: Any = None) -> None:
        self.root = root
        self.default = getattr(live, "run_dir", None) or default_run
        self.missing: str | None = None
        self.readings: Any = None
        try:
            from ..metrics.exposition import CONTENT_TYPE, render
            from ..metrics.reading import Live, Readings
        except ImportError as exc:
            from .._version import install_hint
            self.missing = f"/metrics needs prometheus_client: {install_hint('metrics')} ({exc})"
            return
        self.render, self.content_type = render, CONTENT_TYPE
        self.readings = Readings((live.run_dir, Live(live)) if live is not None else None)

    def answer(self, run: str | None) -> Response | tuple[Response, int]:
        if self.readings is None:
            return jsonify(error=self.missing), 501
        target = None if run in ("latest", "current") else run or self.default
        try:
            where = resolve_run(target, self.root)
        except RunNotFound as exc:
            return jsonify(error=str(exc)), 404
        reading = self.readings.of(where)
        return Response(self.render(lambda: [reading.read()]), content_type=self.content_type)

    def close(self) -> None:
        if self.readings is not None:
            self.readings.close()
