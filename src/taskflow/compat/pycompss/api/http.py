"""``pycompss.api.http``: ``@http(service_name=..., request=..., resource=..., ...)``.

A task that is one REST call. ``service_name`` is looked up, when the task is
called, among the ``<Http BaseUrl=...><ServiceName>`` entries of the
resources file (``--resources``); several base URLs take turns.
``resource`` is appended to the base URL (``{{name}}``: a parameter, URL-
quoted), ``payload`` is the body (``"{{name}}"``: that parameter, as JSON
unless a string; a FILE parameter's content), ``payload_type`` its
Content-Type (default application/json), ``produces`` marks the values to
give back in a JSON answer (``"{'length': '{{return_0}}'}"``; without it the
value is the answer's text) and ``updates`` sets a key of an INOUT dict
parameter (``"{{event}}.key = {{name}}"``). An HTTP error status fails the
task with the status, the URL and the answer.
"""
from __future__ import annotations

from typing import Any

from ....api.external import attach
from ....errors import UsageError
from ....graph.param import FILE_KIND
from ...external import normalize
from ...calls.taskfn import task_function

SUPPORTED = ("service_name", "request", "resource", "payload", "payload_type", "produces",
             "updates")


class http:  # noqa: N801 - PyCOMPSs's name
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kw = normalize("http", kwargs, SUPPORTED)
        for key in ("service_name", "request", "resource"):
            if not kw.get(key) and not (key == "resource" and key in kw):
                raise UsageError(f"@http: the {key} argument is mandatory.")
        self.kw = kw

    def __call__(self, target: Any) -> Any:
        tf = task_function(target, "@http")
        kw = self.kw
        files = tuple(n for n, p in tf.spec.params.items() if p.kind == FILE_KIND)
        cfg = {"request": str(kw["request"]).upper(), "resource": kw.get("resource") or "",
               "payload": kw.get("payload"), "payload_type": kw.get("payload_type"),
               "produces": kw.get("produces"), "updates": kw.get("updates"),
               "file_params": files, "url": "", "fail_by_exit_value": True,
               "timeout": tf.spec.time_out}
        attach(tf, "http", cfg, outputs=True)
        tf.decl.http = {"service_name": kw["service_name"]}
        return tf


Http = http
HTTP = http
