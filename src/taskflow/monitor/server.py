"""The monitor's HTTP side: a token-protected page and a JSON API over the journals.

Everything is read from the runs' journals (SQLite, WAL), so the same server
shows a run that is going on (``taskflow run --monitor``) and one that ended
(``taskflow monitor RUN``). It binds to 127.0.0.1 unless told otherwise and
answers 401 without a token and 403 with a wrong one (compared as bytes, so
any text is a wrong token, not an error), from the request's head before any
body is read; a body is read only with the token, at most ``MAX_BODY`` bytes
(413). The token is accepted as ``?token=``, as ``Authorization: Bearer
<token>``, or in the cookie the page sets.

The server is bounded: uvicorn (one event-loop thread, every connection in
it) behind :mod:`taskflow.netguard` (deadlines for a request's head, body and
response, one request at a time per connection, connections counted per
client, the token before the body), and the Flask application
in a pool of ``MAX_STREAMS + 8`` threads (a2wsgi): an open page's event
stream holds one of them until the page goes away, the others answer
requests. A thousand idle connections cost no thread.

API (JSON; ``<run>`` is a run id, a unique prefix, or ``latest``):
  GET /api/runs                               every run: state, counts
  GET /api/runs/<run>                         the run, counts, counts per name
  GET /api/runs/<run>/tasks                   tasks and edges (?state=, ?q=, ?limit=, ?offset=)
  GET /api/runs/<run>/tasks/<id>              one task with deps and transitions
  GET /api/runs/<run>/logs                    log lines (?task=, ?level=, ?after=, ?limit=)
  GET /api/runs/<run>/nodes                   nodes and their samples (?after=)
  GET /api/runs/<run>/report                  the report's figures (one pass over the
                                              tasks per journal state: .reportcache)
  GET /api/runs/<run>/dag                     the DAG as SVG, laid out for the panel's
                                              shape (?aspect=width/height; monitor.dag)
  GET /metrics                                the run's figures for Prometheus (?run=;
                                              default: the monitor's run, else the latest)
Pushed (server-sent events, :mod:`.stream`):
  GET /api/runs/<run>/stream                  a snapshot, then what changed
  GET /api/runs/<run>/logs/stream?task=N      a task's output lines as they come
"""
from __future__ import annotations

import json
from html import escape
import secrets
import threading
import time
from typing import Any

import uvicorn  # noqa: F401 - (imported here: a missing uvicorn says what to install)
from a2wsgi import WSGIMiddleware
from flask import Flask, Response, abort, jsonify, request

from ..journal.reader import Journal, RunNotFound, list_runs, resolve_run, runs_root
from ..netguard.limits import MAX_BODY
from ..netguard.listen import listen, url_host
from ..observe.palette import colours
from . import stream
from .dag import Layouts, aspect_of
from .metrics import MetricsRoute
from .page import PAGE, STATIC
from .reportcache import ReportCache, json_bytes
from .token import COOKIE, refusal

MAX_TASKS = 5000


def create_app(root: str, token: str, default_run: str | None = None,
               slots: stream.Slots | None = None, live: Any = None) -> Flask:
    """The Flask application for the runs under ``root`` (``live``: the RunView of the
    run this process is the master of, whose /metrics add the master's counters)."""
    app = Flask("taskflow.monitor", static_folder=None)
    root = runs_root(root)
    slots = slots or stream.Slots()
    layouts = Layouts()
    reports = app.extensions["taskflow.reports"] = ReportCache(
        json_bytes(app.json.dumps))         # one pass per journal state
    token_bytes = token.encode()

    @app.before_request
    def _auth() -> Any:
        why = refusal(token_bytes, request.query_string, request.headers.get("Cookie", ""),
                      request.headers.get("Authorization", ""))
        return None if why is None else (jsonify(error=why[1]), why[0])

    def journal(run: str) -> Journal:
        try:
            return Journal(resolve_run(None if run in ("latest", "current") else run, root))
        except RunNotFound as exc:
            abort(Response(json.dumps({"error": str(exc)}), 404, mimetype="application/json"))

    @app.get("/")
    def page() -> Response:
        run = request.args.get("run") or default_run or "latest"
        html = PAGE.replace("__RUN__", escape(run, quote=True))   # the token: in the cookie
        resp = Response(html, mimetype="text/html")
        resp.set_cookie(COOKIE, token, httponly=True, samesite="Strict")
        return resp

    @app.get("/api/runs")
    def runs() -> Response:
        return jsonify(runs=list_runs(root))

    @app.get("/api/runs/<run>")
    def run_info(run: str) -> Response:
        with journal(run) as j:
            return jsonify(run=j.run(), counts=j.counts(), by_name=j.counts_by_name())

    @app.get("/favicon.ico")
    def favicon() -> Response:
        return Response(status=204)

    @app.get("/static/<name>")
    def static(name: str) -> Response:
        if name not in STATIC:
            abort(404)
        body, mime = STATIC[name]
        return Response(body, mimetype=mime, headers={"Cache-Control": "no-cache"})

    @app.get("/api/runs/<run>/tasks")
    def tasks(run: str) -> Response:
        limit = min(int(request.args.get("limit", MAX_TASKS)), MAX_TASKS)
        with journal(run) as j:
            ts = j.tasks(state=request.args.get("state"), limit=limit,
                         query=request.args.get("q") or None,
                         offset=request.args.get("offset", 0, int))
            ids = {t["id"] for t in ts}
            edges = [e for e in j.edges() if e[0] in ids and e[1] in ids]
            total = j.counts()["total"]
        return jsonify(tasks=ts, edges=edges, total=total, truncated=total > len(ts))

    @app.get("/api/runs/<run>/dag")
    def dag(run: str) -> Response | tuple[Response, int]:
        with journal(run) as j:
            try:
                out = layouts.get(j, colours(j.counts_by_name()),
                                  aspect_of(request.args.get("aspect")))
            except Exception as exc:  # noqa: BLE001 - a layout that failed: say so
                return jsonify(error=f"could not lay out the graph: {exc}"), 500
        return jsonify(out)

    def _stream(make: Any) -> Response | tuple[Response, int]:
        if not slots.take():
            return jsonify(error=f"too many open monitor pages ({slots.limit}); close one"), 503

        gone = request.environ.get("asgi.scope", {}).get(GONE)

        def body() -> Any:
            try:
                for chunk in make():
                    if gone is not None and gone.is_set():
                        return          # the page went away: free the slot and the thread
                    yield chunk
            finally:
                slots.give()
        return Response(body(), mimetype="text/event-stream",
                        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    @app.get("/api/runs/<run>/stream")
    def run_stream(run: str) -> Response | tuple[Response, int]:
        journal(run).close()        # 404 now, not inside the stream
        return _stream(lambda: stream.RunStream(lambda: journal(run), slots, colours).events())

    @app.get("/api/runs/<run>/logs/stream")
    def log_stream(run: str) -> Response | tuple[Response, int]:
        task_id = request.args.get("task", type=int)
        if task_id is None:
            return jsonify(error="?task=<id> is required"), 400
        journal(run).close()
        after = request.args.get("after", 0, int)
        return _stream(lambda: stream.log_events(lambda: journal(run), slots, task_id, after))

    @app.get("/api/runs/<run>/tasks/<int:tid>")
    def task(run: str, tid: int) -> Response | tuple[Response, int]:
        with journal(run) as j:
            t = j.task(tid)
        if t is None:
            return jsonify(error=f"no task {tid} in run {run}"), 404
        return jsonify(task=t)

    @app.get("/api/runs/<run>/logs")
    def logs(run: str) -> Response:
        task_id = request.args.get("task", type=int)
        levels = [x for x in request.args.get("level", "").split(",") if x] or None
        with journal(run) as j:
            lines = j.logs(task=task_id, levels=levels, after=request.args.get("after", 0, int),
                           limit=min(request.args.get("limit", 2000, int), 20000))
        return jsonify(logs=lines)

    @app.get("/api/runs/<run>/nodes")
    def nodes(run: str) -> Response:
        with journal(run) as j:
            return jsonify(nodes=j.nodes(), samples=j.samples(after=request.args.get(
                "after", 0.0, float)))

    metrics = app.extensions["taskflow.metrics"] = MetricsRoute(root, default_run, live)

    @app.get("/metrics")
    def prometheus() -> Response | tuple[Response, int]:
        return metrics.answer(request.args.get("run"))

    @app.get("/api/runs/<run>/report")
    def report(run: str) -> Response:
        try:
            body = reports.get(resolve_run(None if run in ("latest", "current") else run, root))
        except RunNotFound as exc:
            return Response(json.dumps({"error": str(exc)}), 404, mimetype="application/json")
        return Response(body, mimetype="application/json")

    return app


def _gated(app: Any, token: str) -> Any:
    """``app`` behind the token check and the body's limit (401/403/413 before the body)."""
    from ..netguard.gate import Gate, header
    token_bytes = token.encode()

    def check(scope: dict[str, Any]) -> tuple[int, str] | None:
        return refusal(token_bytes, scope.get("query_string", b""), header(scope, b"cookie"),
                       header(scope, b"authorization"))
    return Gate(app, check, MAX_BODY, f"the monitor takes no request body larger than "
                                      f"{MAX_BODY} bytes (it answers GET requests)")


GONE = "taskflow.gone"       # in the ASGI scope: a threading.Event set when the client left


class _Disconnects:
    """ASGI middleware: reads a request's body for the application, then watches for the
    client going away and sets ``scope[GONE]`` (a WSGI stream cannot see it: its writes
    to a closed connection are dropped without an error)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        import asyncio
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        gone = scope[GONE] = threading.Event()
        parts = []
        while True:
            msg = await receive()
            if msg["type"] != "http.request":
                return
            parts.append(msg.get("body", b""))
            if not msg.get("more_body"):
                break
        whole = {"type": "http.request", "body": b"".join(parts), "more_body": False}
        given = False

        async def replay() -> Any:
            nonlocal given
            if not given:
                given = True
                return whole
            return {"type": "http.disconnect"}

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            gone.set()

        watcher = asyncio.ensure_future(watch())
        try:
            await self.app(scope, replay, send)
        finally:
            watcher.cancel()


class Monitor:
    """The monitor server (in a background thread of this process, or in the caller's)."""

    def __init__(self, root: str | None = None, run: str | None = None,
                 host: str = "127.0.0.1", port: int = 0, token: str | None = None,
                 guard: Any = None, live: Any = None) -> None:
        from .. import netguard
        self.root = runs_root(root)
        self.run = run
        self.token = token or secrets.token_urlsafe(18)
        self.streams = stream.Slots()
        self.app = create_app(self.root, self.token, run, self.streams, live)
        self.sock = listen(host, port)
        self.guard = guard if guard is not None else netguard.Guard()
        wsgi = WSGIMiddleware(self.app, workers=self.streams.limit + 8)  # type: ignore[arg-type]
        self.server = netguard.server(netguard.config(_gated(_Disconnects(wsgi), self.token),
                                                     self.guard, timeout_graceful_shutdown=1))
        self.host = host
        self.port = self.sock.getsockname()[1]
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host = url_host(self.host)
        run = f"&run={self.run}" if self.run else ""
        return f"http://{host}:{self.port}/?token={self.token}{run}"

    def start(self) -> "Monitor":
        self._thread = threading.Thread(target=self.serve_forever, name="taskflow-monitor",
                                        daemon=True)
        self._thread.start()
        for _ in range(200):        # answering before start() returns
            if self.server.started:
                break
            time.sleep(0.01)
        return self

    def serve_forever(self) -> None:
        self.server.run(sockets=[self.sock])

    def stop(self, grace: float = 0.0) -> None:
        """Stop serving; with ``grace``, first give open pages that long to get the end."""
        deadline = time.monotonic() + grace
        while self.streams.open and time.monotonic() < deadline:
            time.sleep(0.05)
        self.streams.stopping.set()     # open event streams end at their next tick
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join(5)
        self.sock.close()
        self.app.extensions["taskflow.reports"].close()
        self.app.extensions["taskflow.metrics"].close()
