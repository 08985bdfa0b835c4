"""The monitor's token rule, shared by everything that serves a run's figures (the monitor's
pages and API, its ``/metrics``, ``taskflow run --metrics-port``): 401 without a token,
403 with a wrong one, decided from the request's head alone."""
from __future__ import annotations

import secrets
from urllib.parse import parse_qs

COOKIE = "taskflow_token"


def refusal(token: bytes, query: bytes, cookie: str, auth: str) -> tuple[int, str] | None:
    """Why a request may not go on (401 no token, 403 a wrong one), from its query string
    and its ``Cookie`` and ``Authorization`` headers; None: it may. The server asks
    before it reads a body (:class:`taskflow.netguard.gate.Gate`), Flask again."""
    given = parse_qs(query.decode("latin-1"), errors="replace").get("token", [""])[0]
    if not given:
        for part in cookie.split(";"):
            name, _, value = part.strip().partition("=")
            if name == COOKIE:
                given = value.strip('"')
    if auth.startswith("Bearer "):
        given = auth[7:].strip()
    if not given:
        return 401, "a token is required: open the URL printed at start-up (…/?token=…)"
    if not secrets.compare_digest(given.encode("utf-8", "surrogatepass"), token):
        return 403, "wrong token"
    return None
