"""How one stowage service calls another: through its HTTP API, over a socket or in-process.

Compute calls Placement and the Network service through their public APIs
only, so that what it sees is exactly what a remote service would answer.
When the called service runs in the same process, `in_process` hands each
request straight to its ServiceApp (its whole pipeline: auth, routing,
schemas, error bodies) without building HTTP messages; `over_http` goes
through a real socket with httpx; `service_clients.keystone_send` through
a keystoneauth Adapter as a service user. Each is a `Send`: (method, path,
JSON body, query) -> `Answer`, the seam the clients (`placement.client`,
`network.client`, `network.compute_events`) are written against; which one
a caller gets is decided in one place, `service_clients.ServiceClients`.
A Send that holds connections has a `close()` (`close_send`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

import httpx
import orjson

from stowage.web.http import Request

__all__ = ["Answer", "Send", "close_send", "over_http", "in_process", "rooted", "served_app"]


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes

    def json(self) -> Any:
        """The body parsed (orjson: what every in-process Placement answer goes through)."""
        return orjson.loads(self.body)


# (method, path, JSON body or None, query parameters or None) -> the answer
Send = Callable[[str, str, bytes | None, Sequence[tuple[str, str]] | None], Answer]


class _HttpSend:
    """A Send over an httpx client, closed with it."""

    def __init__(self, http: httpx.Client) -> None:
        self.http = http

    def __call__(self, method: str, path: str, content: bytes | None,
                 params: Sequence[tuple[str, str]] | None) -> Answer:
        headers = {"content-type": "application/json"} if content is not None else {}
        resp = self.http.request(method, path, content=content, headers=headers,
                                 params=list(params) if params is not None else None)
        return Answer(resp.status_code, resp.content)

    def close(self) -> None:
        self.http.close()


def over_http(http: httpx.Client) -> Send:
    """Requests through a real socket (the httpx client carries base URL and headers)."""
    return _HttpSend(http)


def close_send(send: Send) -> None:
    """Let go of the connections a Send holds (in-process ones hold none)."""
    close = getattr(send, "close", None)
    if close is not None:
        close()


def rooted(send: Send, root: str) -> Send:
    """`send` with `root` put before every path: a Send rooted at an API's versioned root
    (e.g. Compute's `/v2.1`, where the catalog's endpoint points) over one that is not."""
    def prefixed(method: str, path: str, content: bytes | None,
                 params: Sequence[tuple[str, str]] | None) -> Answer:
        return send(method, root + path, content, params)
    return prefixed


class _InProcessSend:
    """A Send handing each request to an app of this process (`served`: that app, for a
    caller that may read the service's state directly, e.g. the scheduler Placement's
    candidates engine)."""

    def __init__(self, app: Any, headers: Mapping[str, str], base_url: str) -> None:
        self.served = app
        self.base_url = base_url
        self.base = {k.lower(): v for k, v in headers.items()}
        self.with_body = {**self.base, "content-type": "application/json"}

    def __call__(self, method: str, path: str, content: bytes | None,
                 params: Sequence[tuple[str, str]] | None) -> Answer:
        sent = dict(self.with_body if content is not None else self.base)
        if content is not None:
            sent["content-length"] = str(len(content))
        req = Request(method=method, path=path, body=content or b"", headers=sent,
                      query_string=urlencode(list(params), quote_via=quote) if params else "",
                      base_url=self.base_url, app=self.served.state, trusted=True)
        resp = self.served.respond(req)
        return Answer(resp.status, resp.body)


def in_process(app: Any, headers: Mapping[str, str], base_url: str) -> Send:
    """The app's pipeline called directly: no HTTP message is built or parsed."""
    return _InProcessSend(app, headers, base_url)


def served_app(send: Send) -> Any:
    """The app an in-process Send hands its requests to; None for any other Send."""
    return send.served if isinstance(send, _InProcessSend) else None
