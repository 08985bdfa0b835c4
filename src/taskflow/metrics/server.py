"""``taskflow run --metrics-port``: ``/metrics`` of the run, without the web monitor.

The same bounds and token rule as the monitor (:mod:`taskflow.monitor.token`: 401
without the token, 403 with a wrong one, from the request's head): uvicorn behind
:mod:`taskflow.netguard`, bound to 127.0.0.1 unless told, scrapes computed one at a
time in one thread of their own (:mod:`.reading`: from the journal and the master's
counters, nothing per task). Prometheus sends the token as
``Authorization: Bearer <token>`` (``authorization: {credentials: ...}`` in its
scrape configuration) or ``?token=``.
"""
from __future__ import annotations

import asyncio
import json
import secrets
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from ..monitor.token import refusal
from ..netguard.listen import listen, url_host
from .reading import Live, RunReading

if TYPE_CHECKING:
    from ..console.view import RunView


class MetricsServer:
    """``GET /metrics`` for one run, in a background thread of the master."""

    def __init__(self, rt: RunView, host: str = "127.0.0.1", port: int = 0,
                 token: str | None = None) -> None:
        from .. import netguard
        from ..netguard.gate import Gate, header
        from .exposition import CONTENT_TYPE, render   # (prometheus_client)
        self._render = render
        self._ctype = CONTENT_TYPE.encode()
        self.reading = RunReading(rt.run_dir, Live(rt))
        self.token = token or secrets.token_urlsafe(18)
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="taskflow-metrics")
        token_bytes = self.token.encode()

        def check(scope: dict[str, Any]) -> tuple[int, str] | None:
            return refusal(token_bytes, scope.get("query_string", b""), header(scope, b"cookie"),
                           header(scope, b"authorization"))
        self.sock = listen(host, port)
        app = Gate(self._app, check, 0, "/metrics takes no request body")
        self.server = netguard.server(netguard.config(app, netguard.Guard(),
                                                      timeout_graceful_shutdown=1))
        self.host = host
        self.port = self.sock.getsockname()[1]
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host = url_host(self.host)
        return f"http://{host}:{self.port}/metrics?token={self.token}"

    async def _app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        if scope.get("path") != "/metrics" or scope.get("method") not in ("GET", "HEAD"):
            status, body, ctype = 404, json.dumps({"error": "only GET /metrics here"}).encode(), \
                b"application/json"
        else:
            loop = asyncio.get_running_loop()
            body = await loop.run_in_executor(self._pool, self._render,
                                              lambda: [self.reading.read()])
            status, ctype = 200, self._ctype
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", ctype),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body",
                    "body": b"" if scope.get("method") == "HEAD" else body})

    def start(self) -> "MetricsServer":
        self._thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]},
                                        name="taskflow-metrics-http", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 5
        while not self.server.started and time.monotonic() < deadline:
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join(5)
        self.sock.close()
        self._pool.shutdown(wait=True)
        self.reading.close()
