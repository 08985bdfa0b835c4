"""The JSON API under ``/api/v1`` (FastAPI): runs, their tasks, logs and events, nodes.

Every route but the OpenAPI document (``/api/v1/openapi.json``) needs
``Authorization: Bearer <token>``: 401 without one, 403 with a wrong one, both
answered from the request's head before its body is read (:func:`refusal`, asked by
:class:`taskflow.netguard.gate.Gate`).
Every error is JSON, ``{"error": "<what went wrong and what to do>"}`` (422
and 400 add ``details``); none stops the service, and no input gets a 500:
every string of a submission is checked first (:mod:`.inputs`), and an
answer that holds text that is not UTF-8 (a run recorded by an older
service) is sent with ``\\u`` escapes. Bounds: a request body of at most
``max_body`` bytes, with a Content-Length or chunked (413, read only after the
token: :mod:`taskflow.netguard.gate`), at most
``max_queued`` waiting runs (429), at most ``max_streams`` open event or log
streams (503), pages of at most ``MAX_PAGE`` items; slow and idle
connections: :mod:`taskflow.netguard`.
"""
from __future__ import annotations

import json
import os
import re
import secrets
import threading
import time
from typing import Any

from fastapi import APIRouter, FastAPI, HTTPException, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from .._version import __version__
from ..errors import RecordDamaged
from ..journal.reader import STATES as TASK_STATES
from ..journal.reader import Journal, run_ids
from ..netguard.gate import Gate, header
from . import metrics
from . import store as S
from . import streams
from .inputs import FileIn, RunIn
from .runs import CONSOLE_READ, NotCancellable, QueueFull, RunManager, console_read, console_tail

PREFIX = "/api/v1"
MAX_PAGE = 1000
RUN_ID = re.compile(r"^[a-z0-9]{6,40}$")


class Service:
    """What the routes share: the workdir, the store, the run manager, the limits."""

    def __init__(self, workdir: str, store: S.Store, manager: RunManager, token: str,
                 max_body: int, max_streams: int) -> None:
        self.workdir = workdir
        self.store = store
        self.manager = manager
        self.token = token
        self.max_body = max_body
        self.max_streams = max_streams
        self.streams = 0
        self.lock = threading.Lock()


class SafeJSON(JSONResponse):
    """JSON as UTF-8; text that cannot be UTF-8 (a lone surrogate) as ``\\u`` escapes."""

    def render(self, content: Any) -> bytes:
        try:
            return super().render(content)
        except UnicodeEncodeError:
            return json.dumps(content, ensure_ascii=True, allow_nan=False,
                              separators=(",", ":")).encode("ascii")


def error(status: int, message: str, **extra: Any) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else \
        {"Connection": "close"} if status == 413 else None
    return SafeJSON({"error": message, **extra}, status_code=status, headers=headers)


def create_app(svc: Service) -> FastAPI:
    app = FastAPI(title="taskflow service", version=__version__,
                  openapi_url=f"{PREFIX}/openapi.json", docs_url=None, redoc_url=None,
                  default_response_class=SafeJSON,
                  description="Submit taskflow workflow runs, follow their tasks, logs and "
                              "events. Every route needs `Authorization: Bearer <token>` (the "
                              "token `taskflow serve` printed and keeps in service.token).")
    _handlers(app)
    api = APIRouter(prefix=PREFIX)
    _routes(api, svc)
    app.include_router(api)
    metrics.add_route(app, svc, journal_dir)      # GET /metrics, for Prometheus (serve/metrics.py)
    app.add_middleware(Gate, check=lambda scope: refusal(svc, scope), limit=svc.max_body,
                       too_big=f"the request body is larger than the service's limit of "
                               f"{svc.max_body} bytes (--max-body); put a large script under "
                               f"the workdir and send its path instead")
    return app


def refusal(svc: Service, scope: dict[str, Any]) -> tuple[int, str] | None:
    """Why a request may not go on (401 no token, 403 a wrong one), from its head alone
    (:class:`taskflow.netguard.gate.Gate` asks before reading its body); None: it may."""
    if scope.get("path") == f"{PREFIX}/openapi.json":
        return None
    auth = header(scope, b"authorization")
    kept = os.path.join(svc.workdir, "service.token")
    if not auth:
        return 401, (f"a token is required: send 'Authorization: Bearer <token>' with the "
                     f"token `taskflow serve` printed (also in {kept})")
    scheme, _, given = auth.partition(" ")
    if scheme.lower() != "bearer" or not secrets.compare_digest(
            given.strip().encode("latin-1"), svc.token.encode()):
        return 403, f"wrong token: use the one in {kept}"
    return None


def _handlers(app: FastAPI) -> None:
    @app.exception_handler(StarletteHTTPException)
    async def http_error(_r: Request, exc: StarletteHTTPException) -> JSONResponse:
        msg = exc.detail
        if exc.status_code == 404 and msg == "Not Found":
            msg = f"no such endpoint; the API is described at {PREFIX}/openapi.json"
        elif exc.status_code == 405:
            msg = f"method not allowed here; see {PREFIX}/openapi.json"
        return error(exc.status_code, str(msg))

    @app.exception_handler(RequestValidationError)
    async def invalid(_r: Request, exc: RequestValidationError) -> JSONResponse:
        errs = exc.errors()
        if any(e.get("type") == "json_invalid" or (e.get("type") == "model_attributes_type"
                                                   and tuple(e.get("loc", ())) == ("body",))
               for e in errs):
            return error(400, "the body is not a JSON object; send one like "
                              '{"script": "flows/wf.py", "args": ["10"]}',
                         details=_plain(errs))
        where = "; ".join(f"{'.'.join(str(x) for x in e.get('loc', ()))}: {e.get('msg')}"
                          for e in errs[:5])
        return error(422, f"invalid request ({where}); see {PREFIX}/openapi.json for the "
                          f"fields", details=_plain(errs))

    @app.exception_handler(RecordDamaged)
    async def damaged(_r: Request, exc: RecordDamaged) -> JSONResponse:
        # the run's journal cannot be read: one line, as every command says it
        return error(409, str(exc))

    @app.exception_handler(Exception)
    async def crashed(_r: Request, exc: Exception) -> JSONResponse:
        return error(500, f"internal error: {type(exc).__name__}: {exc}; the service goes on, "
                          f"please report this with the request")


def _plain(errs: Any) -> list[dict[str, Any]]:
    """Validation errors as JSON, without the values given (they may be large, or not
    text: the message says what is wrong with them)."""
    return [{k: (list(v) if isinstance(v, tuple) else v
                 if isinstance(v, (str, int, float, list, type(None))) else str(v))
             for k, v in e.items() if k not in ("ctx", "input", "url")} for e in errs]


# -- helpers over the store and the journals ----------------------------------------------
def journal_dir(run_dir: str) -> str | None:
    root = os.path.join(run_dir, "journal")
    ids = run_ids(root)
    return os.path.join(root, ids[-1]) if ids else None


def open_journal(run_dir: str) -> Journal | None:
    d = journal_dir(run_dir)
    return Journal(d) if d else None


def iso(t: float | None) -> str | None:
    """``2026-12-05T14:20:00.123Z`` (UTC), or None."""
    if t is None:
        return None
    import datetime
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def view(svc: Service, r: dict[str, Any], detail: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": r["id"], "state": r["state"], "priority": r["priority"],
        # ISO 8601 in UTC; the same instants as seconds since the epoch beside them
        "submitted": iso(r["t_submit"]), "started": iso(r["t_start"]),
        "ended": iso(r["t_end"]), "submitted_epoch": r["t_submit"],
        "started_epoch": r["t_start"], "ended_epoch": r["t_end"],
        "exit_code": r["exit_code"], "reason": r["reason"], "script": r["script"],
        "args": r["args"], "options": r["options"], "dir": r["dir"]}
    if r["state"] == S.QUEUED:
        out["queue_position"] = svc.manager.position(r["id"])
    jd = journal_dir(r["dir"])
    out["journal"] = jd
    out["journal_run_id"] = os.path.basename(jd) if jd else None
    out["counts"] = {s: 0 for s in TASK_STATES} | {"total": 0, "retries": 0}
    if jd:
        try:
            with Journal(jd) as j:
                out["counts"] = j.counts()
                if detail:
                    out["counts_by_name"] = j.counts_by_name()
        except RecordDamaged as exc:     # the run is listed all the same, as the CLI does
            out["journal_damaged"] = str(exc)
    if detail and r["state"] in (S.FAILED, S.INTERRUPTED, S.CANCELLED):
        out["console_tail"] = console_tail(r["dir"])
    return out


def _source(svc: Service, given: FileIn | str, what: str,
            default_name: str) -> tuple[str, str | None]:
    """A file given by path (its absolute path, checked) or by content (its name in the
    run's directory, and the content to write there): nothing is written yet."""
    if isinstance(given, str):
        given = FileIn(path=given, name=None, content=None)
    if (given.path is None) == (given.content is None):
        raise HTTPException(422, f"{what}: give either path (under the workdir) or content")
    if given.content is not None:
        return given.name or default_name, given.content
    assert given.path is not None
    path = os.path.realpath(os.path.join(svc.workdir, given.path))
    if not path.startswith(os.path.realpath(svc.workdir) + os.sep):
        raise HTTPException(422, f"{what}: {given.path} is outside the service's workdir "
                                 f"{svc.workdir}; put it there or upload its content")
    if not os.path.isfile(path):
        raise HTTPException(422, f"{what}: {given.path} does not exist under the workdir "
                                 f"{svc.workdir}; put it there or upload its content")
    return path, None


def _write(run_dir: str, name: str, content: str) -> str:
    path = os.path.join(run_dir, name)
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w",
              encoding="utf-8") as f:
        f.write(content)
    return path


def _run(svc: Service, rid: str) -> dict[str, Any]:
    r = svc.store.get(rid) if RUN_ID.match(rid) else None
    if r is None:
        raise HTTPException(404, f"no run {rid!r}; GET {PREFIX}/runs lists the runs")
    return r


def _stream(svc: Service, body: Any) -> StreamingResponse:
    with svc.lock:
        if svc.streams >= svc.max_streams:
            raise HTTPException(503, f"{svc.max_streams} event/log streams are open already "
                                     f"(--max-streams); close one or poll instead")
        svc.streams += 1

    async def counted() -> Any:
        try:
            async for chunk in body:
                yield chunk
        finally:
            with svc.lock:
                svc.streams -= 1

    return StreamingResponse(counted(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})


def _levels(level: str | None) -> list[str] | None:
    out = [x.strip().upper() for x in (level or "").split(",") if x.strip()]
    bad = [x for x in out if x not in ("STDOUT", "STDERR", "RAW")]
    if bad:
        raise HTTPException(422, f"level {', '.join(bad)} is not one of STDOUT, STDERR, RAW")
    return out or None


def _routes(api: APIRouter, svc: Service) -> None:
    @api.post("/runs", status_code=201, summary="Submit a run")
    def submit(body: RunIn) -> dict[str, Any]:
        script, text = _source(svc, body.script, "script", "workflow.py")
        cluster, ctext = (None, None) if body.cluster is None else \
            _source(svc, body.cluster, "cluster", "cluster.yaml")
        if text is not None and ctext is not None and script == cluster:
            raise HTTPException(422, f"cluster: the upload's name {cluster!r} is the "
                                     f"script's; give the cluster file another name")
        rid = secrets.token_hex(6)
        run_dir = os.path.join(svc.workdir, "runs", rid)
        os.makedirs(run_dir, mode=0o700)
        try:
            if text is not None:
                script = _write(run_dir, script, text)
            opts: dict[str, Any] = {"workers": body.workers, "nodes": body.nodes,
                                    "retries": body.retries}
            if cluster is not None:
                opts["cluster"] = cluster if ctext is None else _write(run_dir, cluster, ctext)
            row = svc.manager.submit(rid, body.priority, script, body.args, opts, run_dir)
        except QueueFull as exc:
            _drop(run_dir)
            raise HTTPException(429, f"{exc}; retry when one has started") from None
        except BaseException:
            _drop(run_dir)          # nothing of a refused run stays behind
            raise
        return view(svc, row, detail=False)

    @api.get("/runs", summary="List runs, oldest first")
    def runs(state: str | None = Query(None, description="Only runs in this state."),
             limit: int = Query(100, ge=1, le=MAX_PAGE), offset: int = Query(0, ge=0)
             ) -> dict[str, Any]:
        if state is not None and state not in S.STATES:
            raise HTTPException(422, f"state {state!r} is not one of {', '.join(S.STATES)}")
        rows, total = svc.store.runs(state, limit, offset)
        return {"runs": [view(svc, r, detail=False) for r in rows], "total": total,
                "limit": limit, "offset": offset}

    @api.get("/runs/{rid}", summary="One run: state, counts, times, exit status")
    def run(rid: str) -> dict[str, Any]:
        return view(svc, _run(svc, rid))

    @api.post("/runs/{rid}/cancel", summary="Cancel a queued or running run")
    def cancel(rid: str) -> dict[str, Any]:
        _run(svc, rid)
        try:
            row = svc.manager.cancel(rid)
        except NotCancellable as exc:
            raise HTTPException(409, f"{exc}; nothing to cancel") from None
        out = view(svc, row, detail=False)
        out["cancelling"] = row["state"] == S.RUNNING
        return out

    @api.get("/runs/{rid}/tasks", summary="A run's tasks (filter by state and name, paged)")
    def tasks(rid: str, state: str | None = None, name: str | None = None,
              limit: int = Query(100, ge=1, le=MAX_PAGE), offset: int = Query(0, ge=0)
              ) -> dict[str, Any]:
        r = _run(svc, rid)
        if state is not None and state.upper() not in TASK_STATES:
            raise HTTPException(422, f"state {state!r} is not one of {', '.join(TASK_STATES)}")
        j = open_journal(r["dir"])
        if j is None:
            return {"tasks": [], "total": 0, "limit": limit, "offset": offset}
        with j:
            ts, total = j.tasks_page(state=state, name=name, limit=limit, offset=offset)
        return {"tasks": ts, "total": total, "limit": limit, "offset": offset}

    @api.get("/runs/{rid}/tasks/{tid}", summary="One task: states with times, node, exit, error")
    def task(rid: str, tid: int) -> dict[str, Any]:
        r = _run(svc, rid)
        j = open_journal(r["dir"])
        t = None
        if j is not None:
            with j:
                t = j.task(tid)
        if t is None:
            raise HTTPException(404, f"run {rid} has no task {tid} (yet); GET "
                                     f"{PREFIX}/runs/{rid}/tasks lists them")
        return {"task": t}

    @api.get("/runs/{rid}/tasks/{tid}/logs", summary="A task's output lines (follow=1: SSE)")
    def logs(rid: str, tid: int, request: Request, level: str | None = None,
             after: int = Query(0, ge=0), limit: int = Query(MAX_PAGE, ge=1, le=10 * MAX_PAGE),
             follow: bool = False) -> Any:
        r = _run(svc, rid)
        levels = _levels(level)
        if follow:
            return _stream(svc, streams.task_logs(
                lambda: svc.store.get(rid), lambda: open_journal(r["dir"]),
                request.is_disconnected, tid, levels, after))
        j = open_journal(r["dir"])
        if j is None:
            return {"logs": [], "last_id": after}
        with j:
            if j.task(tid) is None:
                raise HTTPException(404, f"run {rid} has no task {tid} (yet)")
            lines = j.logs(task=tid, levels=levels, after=after, limit=limit)
        return {"logs": lines, "last_id": lines[-1]["id"] if lines else after}

    @api.get("/runs/{rid}/console", summary="The run's console: the script's stdout and "
                                             "stderr (follow=1: SSE)")
    def console(rid: str, request: Request, offset: int = Query(0, ge=0),
                follow: bool = False) -> Any:
        r = _run(svc, rid)
        if follow:
            return _stream(svc, streams.console(
                lambda: svc.store.get(rid), lambda at: console_read(r["dir"], at),
                request.is_disconnected, offset))
        lines, after, size = console_read(r["dir"], offset, CONSOLE_READ)
        return {"lines": lines, "offset": after, "more": after < size}

    @api.get("/runs/{rid}/events", summary="Run and task state changes (server-sent events)")
    def events(rid: str, request: Request) -> Any:
        r = _run(svc, rid)
        return _stream(svc, streams.run_events(lambda: svc.store.get(rid),
                                               lambda: open_journal(r["dir"]),
                                               request.is_disconnected))

    @api.get("/nodes", summary="Load samples of the nodes of running runs, and this host")
    def nodes() -> dict[str, Any]:
        out = []
        for r in svc.store.runs(S.RUNNING, limit=MAX_PAGE)[0]:
            try:
                j = open_journal(r["dir"])
                if j is None:
                    continue
                with j:
                    latest = j.latest_samples()
                    for n in j.nodes():
                        out.append({"run": r["id"], **n, "sample": latest.get(n["name"])})
            except RecordDamaged:       # (GET /runs/{id} says so)
                continue
        return {"nodes": out, "host": _host_sample(), "t": time.time()}


def _drop(run_dir: str) -> None:
    import shutil
    shutil.rmtree(run_dir, ignore_errors=True)


def _host_sample() -> dict[str, Any]:
    import psutil
    vm = psutil.virtual_memory()
    net = psutil.net_io_counters()
    try:
        disk: float | None = psutil.disk_usage("/").percent
    except OSError:
        disk = None
    return {"cpu": psutil.cpu_percent(None), "load1": os.getloadavg()[0], "mem": vm.percent,
            "mem_avail_gb": vm.available / 2**30, "disk": disk,
            "net_sent": net.bytes_sent if net else 0, "net_recv": net.bytes_recv if net else 0}
