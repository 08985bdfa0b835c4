"""``GET /metrics`` of ``taskflow serve``: its running runs' figures in Prometheus's
text format (:mod:`taskflow.metrics`; the label ``run`` is the service's run id), and
the service's runs by state (``taskflow_service_runs``). The token rule is the API's
(``Authorization: Bearer <token>``, checked on the head by the service's gate)."""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Callable, Iterator

from fastapi import FastAPI
from fastapi.responses import JSONResponse, Response

from . import store as S

if TYPE_CHECKING:
    from .app import Service

MAX_RUNS_READ = 1000      # running runs a scrape reads (the service runs fewer at once)


def add_route(app: FastAPI, svc: Service, journal_dir: Callable[[str], str | None]) -> None:
    """``/metrics`` on ``app`` (501 saying what to install without prometheus_client);
    ``journal_dir``: a service run's directory -> its journal's."""
    try:
        from ..metrics.exposition import CONTENT_TYPE, render
        from ..metrics.reading import Readings
    except ImportError as exc:
        from .._version import install_hint
        missing = f"/metrics needs prometheus_client: {install_hint('metrics')} ({exc})"

        @app.get("/metrics", include_in_schema=False)
        def no_metrics() -> JSONResponse:
            return JSONResponse({"error": missing}, status_code=501)
        return
    from prometheus_client.core import GaugeMetricFamily

    readings = Readings()
    readings.KEPT = max(Readings.KEPT, svc.manager.max_runs)

    def service_runs() -> Iterator[Any]:
        g = GaugeMetricFamily("taskflow_service_runs", "The service's runs by state.",
                              labels=["state"])
        for state in S.STATES:
            g.add_metric([state], svc.store.runs(state, limit=1)[1])
        yield g

    def snapshots() -> list[Any]:
        out = []
        for r in svc.store.runs(S.RUNNING, limit=MAX_RUNS_READ)[0]:
            where = journal_dir(r["dir"])
            if where is None:           # (started, no journal yet)
                continue
            try:
                snap = readings.of(where).read()
            except Exception:  # noqa: BLE001 - a damaged journal: GET /runs/{id} says so
                continue
            out.append(dataclasses.replace(snap, run_id=r["id"]))
        return out

    @app.get("/metrics", include_in_schema=False)
    def metrics() -> Response:
        return Response(render(snapshots, service_runs), media_type=None,
                        headers={"Content-Type": CONTENT_TYPE})
