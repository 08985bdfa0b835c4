"""The @http invoker: one REST call as a task (PyCOMPSs's ``@http``), node side.

The :class:`~taskflow.wire.invocation.Http` record: ``url`` (the service's
base URL, chosen on the master), ``request`` (GET, POST, ...), ``resource``
(appended to the URL; ``{{name}}`` replaced by the parameter's value,
URL-quoted), ``payload`` (the body; ``{{name}}`` alone sends that value: a
string as it is, anything else as JSON; a file parameter's content),
``payload_type`` (Content-Type, default application/json), ``produces`` (a
template of the JSON answer where ``'{{return_0}}'``... mark the values to give
back), ``updates`` (``'{{param}}.key = {{name}}'``: set a key of an INOUT dict
parameter to a value named in ``produces``), ``timeout`` (s).

Without ``produces`` the task's value is the answer's body as text. An
answer with an HTTP error status fails the task with the status, the URL
and the start of the body.
"""
from __future__ import annotations

import ast
import json
import re
import urllib.error
import urllib.parse
import urllib.request
from typing import TYPE_CHECKING, Any

from ....wire.invocation import Http, Invocation
from ....wire.template import PLACEHOLDER as TEMPLATE
from .command import bind

if TYPE_CHECKING:
    from ....wire.messages import LineWire

_MARK = re.compile(r"^\{\{\s*(\w+)\s*\}\}$")


def invoke(call: Http, inv: Invocation, func: Any, args: list[Any], kw: dict[str, Any],
           logs: list[LineWire], tid: int) -> Any:
    """The REST call of task ``tid``; its value as ``produces`` says."""
    return run(call, bind(func, args, kw, call.order), logs)


def run(call: Http, values: dict[str, Any], logs: list[LineWire]) -> Any:
    import time
    resource = TEMPLATE.sub(lambda m: urllib.parse.quote(str(values.get(m.group(1))), safe=""),
                            call.resource or "")
    url = call.url.rstrip("/") + "/" + resource.lstrip("/") if resource else call.url
    body = None
    headers = {}
    payload = call.payload
    if payload is not None:
        m = _MARK.match(payload.strip())
        if m:
            v = values.get(m.group(1))
            if m.group(1) in call.file_params:
                with open(str(v), "rb") as f:
                    body = f.read()
            else:
                body = (v if isinstance(v, str) else json.dumps(v)).encode()
        else:
            body = TEMPLATE.sub(lambda m2: str(values.get(m2.group(1))), payload).encode()
        headers["Content-Type"] = call.payload_type or "application/json"
    req = urllib.request.Request(url, data=body, method=(call.request or "GET").upper(),
                                 headers=headers)
    logs.append((time.time(), "STDOUT", f"[http] {req.get_method()} {url}"))
    try:
        with urllib.request.urlopen(req, timeout=call.timeout or 60) as resp:
            text = resp.read().decode("utf-8", "replace")
            status = resp.status
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode("utf-8", "replace")[:300]
        raise RuntimeError(f"{req.get_method()} {url} answered HTTP {exc.code} {exc.reason}: "
                           f"{detail}") from None
    except urllib.error.URLError as exc:
        raise RuntimeError(f"{req.get_method()} {url} failed: {exc.reason}") from None
    logs.append((time.time(), "STDOUT", f"[http] HTTP {status}, {len(text)} characters"))
    produces = call.produces
    if not produces:
        return text
    try:
        answer = json.loads(text)
    except ValueError:
        raise RuntimeError(f"{url} answered {text[:200]!r}, which is not the JSON that "
                           f"produces={produces!r} expects") from None
    template = _literal(produces)
    found: dict[str, Any] = {}
    _match(template, answer, found, url)
    updates = call.updates
    if updates:
        _update(updates, found, values)
    marks = sorted((k for k in found if re.fullmatch(r"return_\d+", k)),
                   key=lambda k: int(k.split("_")[1]))
    outs = [found[k] for k in marks]
    if not outs:
        return None
    return outs[0] if len(outs) == 1 else tuple(outs)


def _literal(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return json.loads(text)


def _match(template: Any, answer: Any, found: dict[str, Any], url: str) -> None:
    if isinstance(template, str):
        m = _MARK.match(template.strip())
        if m:
            found[m.group(1)] = answer
        return
    if isinstance(template, dict):
        if not isinstance(answer, dict):
            raise RuntimeError(f"{url}: expected a JSON object where produces has "
                               f"{template!r}, got {answer!r}")
        for k, t in template.items():
            if k in answer:
                _match(t, answer[k], found, url)
    elif isinstance(template, list) and isinstance(answer, list):
        for t, a in zip(template, answer):
            _match(t, a, found, url)


def _update(updates: str, found: dict[str, Any], values: dict[str, Any]) -> None:
    for stmt in updates.split(";"):
        if not stmt.strip():
            continue
        left, _, right = stmt.partition("=")
        m = re.match(r"^\s*\{\{\s*(\w+)\s*\}\}\.(\w+)\s*$", left)
        r = _MARK.match(right.strip())
        if not m or not r:
            raise RuntimeError(f"updates={updates!r}: write '{{{{param}}}}.key = {{{{name}}}}'")
        target = values.get(m.group(1))
        if not isinstance(target, dict):
            raise RuntimeError(f"updates: parameter {m.group(1)!r} is not a dict")
        target[m.group(2)] = found.get(r.group(1))
