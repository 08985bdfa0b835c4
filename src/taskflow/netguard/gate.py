"""The token before the body: ASGI middleware in front of an application that needs one.

Without it a stranger's body was read whole before the token was checked (one
512 MB POST grew the monitor from 39 MB to 1.57 GB; 32 senders of 4 MB bodies grew
the service from 78 to 440 MB, parsed as JSON to answer 400). Here:

* the request's head is checked first (``check(scope)``: ``None`` or ``(status,
  message)``): a refusal (401, 403) is answered at once, before one byte of the
  body is read, and the connection is closed after it (the body is never read);
* a ``Content-Length`` past ``limit`` is answered 413 at once, likewise; a body sent
  chunked is counted as it comes and answered 413 once past the limit: nothing past
  it is held;
* a body within the limit is read here and handed to the application whole (one
  message); the messages after it (the client leaving) come from the server as usual.

Every answer is JSON, ``{"error": ...}``; a 401 says ``WWW-Authenticate: Bearer``.
"""
from __future__ import annotations

import json
from typing import Any, Awaitable, Callable

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]
Refusal = tuple[int, str]


def header(scope: Scope, name: bytes) -> str:
    """The value of header ``name`` (lower case), as text ("" when absent)."""
    for k, v in scope.get("headers") or ():
        if k == name:
            return bytes(v).decode("latin-1")
    return ""


async def refuse(send: Send, status: int, message: str) -> None:
    """Answer ``status`` with ``{"error": message}`` and close the connection."""
    body = json.dumps({"error": message}).encode()
    headers = [(b"content-type", b"application/json"),
               (b"content-length", str(len(body)).encode()), (b"connection", b"close")]
    if status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


class Gate:
    """The token checked on the head, then the body read up to ``limit`` bytes."""

    def __init__(self, app: App, check: Callable[[Scope], Refusal | None], limit: int,
                 too_big: str) -> None:
        self.app = app
        self.check = check
        self.limit = limit
        self.too_big = too_big      # what a 413 says (how to send less)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self.check(scope)
        if refusal is not None:
            await refuse(send, *refusal)
            return
        length = header(scope, b"content-length")
        if length.isdigit() and int(length) > self.limit:
            await refuse(send, 413, self.too_big)
            return
        parts: list[bytes] = []
        seen = 0
        while True:
            msg = await receive()
            if msg["type"] != "http.request":       # the client went away
                return
            body = msg.get("body", b"")
            seen += len(body)
            if seen > self.limit:
                await refuse(send, 413, self.too_big)
                return
            parts.append(body)
            if not msg.get("more_body", False):
                break
        whole: Message = {"type": "http.request", "body": b"".join(parts), "more_body": False}
        given = False

        async def replay() -> Message:
            nonlocal given
            if not given:
                given = True
                return whole
            return await receive()          # (then: the disconnect, for streams)

        await self.app(scope, replay, send)
