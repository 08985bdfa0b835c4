"""The community validator (roc-validator) on a crate, with no network.

The validator fetches the RO-Crate JSON-LD context
(``https://w3id.org/ro/crate/1.1/context``) twice: with ``requests`` (its own
check that the context resolves) and with urllib (rdflib, which parses the
crate's JSON-LD). Tests and CI have no network, so :func:`offline_context`
answers that one URL in both HTTP layers with the context the ``rocrate``
package ships (``rocrate/data/ro-crate.jsonld``). That copy is RO-Crate 1.3's,
whose terms include 1.1's; one difference matters to the profiles: 1.3 names
the Bioschemas types ``https://bioschemas.org/terms/X`` where 1.1 says
``https://bioschemas.org/X`` (ComputationalWorkflow, FormalParameter), so the
1.1 URL is answered with those set back (:func:`context_1_1`). It is served by a
urllib opener (``urllib.request.install_opener``: what
``urlopen`` uses) and ``requests``' transport (``HTTPAdapter.send``, under the
validator's cached session too). Every other URL is refused, so nothing
reaches the network unseen. The profiles ship with the validator.
"""
from __future__ import annotations

import email.message
import io
import json
import os
import urllib.error
import urllib.request
from contextlib import contextmanager
from typing import Any, Iterator

BIOSCHEMAS_1_3 = "https://bioschemas.org/terms/"
CONTEXTS = ("https://w3id.org/ro/crate/1.1/context", "https://w3id.org/ro/crate/1.3/context")


def context_1_1() -> bytes:
    """RO-Crate 1.1's context, from the 1.3 one the ``rocrate`` package ships."""
    import rocrate
    with open(os.path.join(os.path.dirname(rocrate.__file__), "data", "ro-crate.jsonld")) as f:
        doc = json.load(f)
    ctx = doc["@context"]
    for term, iri in list(ctx.items()):
        if isinstance(iri, str) and iri.startswith(BIOSCHEMAS_1_3):
            ctx[term] = "https://bioschemas.org/" + iri[len(BIOSCHEMAS_1_3):]
    return json.dumps({"@context": ctx}).encode()


class _ContextHandler(urllib.request.BaseHandler):
    def __init__(self) -> None:
        self.body = context_1_1()
        self.asked: list[str] = []

    def https_open(self, req: urllib.request.Request) -> Any:
        url = req.full_url
        self.asked.append(url)
        if url.rstrip("/") not in CONTEXTS:
            raise urllib.error.URLError(f"no network in tests: {url}")
        head = email.message.Message()
        head["Content-Type"] = "application/ld+json"
        resp = urllib.response.addinfourl(io.BytesIO(self.body), head, url, 200)
        return resp

    http_open = https_open


def _requests_send(body: bytes, asked: list[str]) -> Any:
    import requests

    def send(self: Any, request: Any, **kwargs: Any) -> Any:
        url = request.url
        asked.append(url)
        if url.rstrip("/") not in CONTEXTS:
            raise requests.ConnectionError(f"no network in tests: {url}")
        resp = requests.Response()
        resp.status_code = 200
        resp._content = body
        resp.headers["Content-Type"] = "application/ld+json"
        resp.url = url
        resp.request = request
        resp.encoding = "utf-8"
        return resp
    return send


@contextmanager
def offline_context() -> Iterator[_ContextHandler]:
    from requests.adapters import HTTPAdapter
    handler = _ContextHandler()
    urllib.request.install_opener(urllib.request.build_opener(handler))
    send = HTTPAdapter.send
    HTTPAdapter.send = _requests_send(handler.body, handler.asked)   # type: ignore[method-assign]
    try:
        yield handler
    finally:
        HTTPAdapter.send = send         # type: ignore[method-assign]
        urllib.request.install_opener(None)     # type: ignore[arg-type]


def inherited(profile: str) -> list[str]:
    """The profiles whose checks the validator runs with ``profile``'s."""
    from rocrate_validator import services
    return [p.identifier for p in services.get_profile(profile).inherited_profiles]


def required_issues(crate_path: str, profile: str) -> tuple[list[str], list[str]]:
    """(the validator's issues of severity REQUIRED on the crate at ``crate_path``, the
    URLs it asked for)."""
    from rocrate_validator import services
    from rocrate_validator.models import Severity
    with offline_context() as http:
        result = services.validate({
            "rocrate_uri": crate_path, "profile_identifier": profile,
            "requirement_severity": Severity.REQUIRED, "no_cache": True,
            "enable_profile_inheritance": True})
    return ([f"{i.check.identifier if i.check else '?'} {i.message} ({i.violatingEntity})"
             for i in result.get_issues(Severity.REQUIRED)], http.asked)
