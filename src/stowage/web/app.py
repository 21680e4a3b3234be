"""The ASGI application shared by the stowage services, and the prefix dispatcher.

The per-request pipeline mirrors upstream Placement's middleware order:
CORS, auth (401 before anything else), content-length/type sanity,
microversion negotiation, routing (404/405), Accept and Content-Type checks,
then the handler; the whole pipeline runs in a worker thread. Each service supplies its routes, its
version list and how its errors are rendered. Every request read off the
socket is then written to the request log (`requestlog`).

A request read off a socket is authenticated from its headers before its
body is read: an anonymous client's body is never read at all (401, then
the connection is closed), and an accepted one's is read within the
service's `web.limits` (413 when too large, 408 when too slow).
In-process requests (`respond`, called by other stowage services) arrive
whole and are not bounded.

Defences every route gets without asking: a path holding a NUL character is
404 (no record can be named so), a query holding one is 400, every error
detail is cut to `DETAIL_LIMIT`, and a value the database refuses to store
(DataError) or a number too long for `int()` (`web.numbers`) is a 400, not a
500.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Iterator, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy.exc
from starlette.concurrency import run_in_threadpool

from stowage.context import RequestContext
from stowage.errors import DomainError
from stowage.metrics import process as metrics
from stowage.policy import PolicyNotAuthorized
from stowage.web import limits as body_limits
from stowage.web import microversion, requestlog
from stowage.web.body import unstorable
from stowage.web.errors import DETAIL_LIMIT, HTTPError, shorten
from stowage.web.http import Request, Response
from stowage.web.limits import BodyLimits, BodyRefused, ClientGone, expects_body, read_body
from stowage.web.numbers import TOO_MANY_DIGITS, too_many_digits
from stowage.web.routing import Router

__all__ = ["ServiceApp", "ServiceSpec", "PrefixDispatcher", "require_json_content",
           "send_response"]

LOG = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ErrorRenderer = Callable[[Request, HTTPError, bool], Response]
Authenticator = Callable[[Request], RequestContext | None]


@dataclass
class ServiceSpec:
    service_type: str
    versions: Sequence[str]
    router: Router
    render_error: ErrorRenderer
    authenticate: Authenticator
    legacy_version_headers: Sequence[str] = ()
    # Echo the bare version in each legacy header too (Nova's X-OpenStack-Nova-API-Version).
    echo_legacy_version_headers: bool = False
    # False for APIs without microversions (Image v2): no negotiation, no version headers.
    microversioned: bool = True
    # Paths served without a token (version documents).
    public_paths: frozenset[str] = frozenset({"/", ""})
    # The WWW-Authenticate value of a 401 (keystonemiddleware's), if any.
    challenge: Callable[[Request], str] | None = None
    cors: Any = None
    # oslo.middleware's header on every service; Nova adds its older X-Compute-Request-Id.
    request_id_headers: Sequence[str] = ("x-openstack-request-id",)
    # How much body a request read off a socket may send, and how fast (None: no bound,
    # e.g. an embedder's app); in-process requests (`respond`) are never bounded.
    limits: BodyLimits | None = None
    # How a 413 is rendered when upstream answers it from oslo.middleware's `sizelimit`
    # in front of the service (Nova, Keystone: webob's body); None: `render_error`.
    render_too_large: ErrorRenderer | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _accepts_json(accept: str | None) -> bool:
    if not accept:
        return True
    for item in accept.split(","):
        kind, _, params = item.strip().partition(";")
        if "q=0" in params.replace(" ", "") and "q=0." not in params.replace(" ", ""):
            continue
        if kind.strip().lower() in ("application/json", "application/*", "*/*"):
            return True
    return False


def require_json_content(req: Request) -> None:
    ctype = req.headers.get("content-type")
    if not ctype or ctype.split(";")[0].strip().lower() != "application/json":
        shown = ctype.split(";")[0].strip() if ctype else None
        raise HTTPError(415, f"The media type {shown} is not supported, use application/json")


def _check_length(req: Request) -> None:
    clen = req.headers.get("content-length")
    if not clen:
        return
    try:
        length = int(clen)
    except ValueError:
        raise HTTPError(400, "content-length header must be an integer") from None
    if length > 0 and not req.headers.get("content-type"):
        raise HTTPError(400, "content-type header required when content-length > 0")


def _check_query(req: Request) -> None:
    """Query values are compared with stored text; one holding NUL is refused up front."""
    for key, value in req.query:
        why = unstorable(key) or unstorable(value)
        if why:
            raise HTTPError(400, f"Invalid query string parameters: {why}")


_DOMAIN_STATUS = {"not_found": 404, "conflict": 409, "invalid": 400, "forbidden": 403,
                  "too_large": 413}


class ServiceApp:
    """One service (e.g. placement) as an ASGI app; `state` is handed to handlers."""

    def __init__(self, spec: ServiceSpec, state: Any) -> None:
        self.spec = spec
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        started = time.monotonic()
        req = _request_head(scope, self.state)
        resp = await self._answer(req, receive)
        if resp is None:
            return  # the client went away while its body was read
        # Written as the answer starts, as Nova's start_response does: a client that has
        # its answer finds the line already there.
        query = f"?{req.query_string}" if req.query_string else ""
        requestlog.write(req.context.request_id, req.remote_addr, req.method,
                         f"{req.root_path}{req.path}{query}", resp.status, len(resp.body),
                         requestlog.microversion_of(resp.headers), time.monotonic() - started)
        metrics.http_request(self.spec.service_type, req, resp.status, time.monotonic() - started)
        await send_response(send, resp)

    async def _answer(self, req: Request, receive: Receive) -> Response | None:
        """CORS, the body within the service's limits, then the pipeline in a thread;
        None when the client is gone."""
        cors = self.spec.cors
        if cors is not None and cors.is_preflight(req):
            preflight: Response = cors.preflight(req)
            return preflight
        if expects_body(req.headers):
            try:
                refused = await self._take_body(req, receive)
            except ClientGone:
                return None
            if refused is not None:
                # The rest of the body stays unread: answer, then close the connection.
                refused.headers.append(("connection", "close"))
                if cors is not None:
                    cors.decorate(req, refused)
                return refused
        resp = await run_in_threadpool(self.respond, req)
        stream = req.stream
        if stream is not None and stream.gone:
            return None  # the client went away in the middle of its upload
        if stream is not None and not stream.finished:
            # Answered before the whole upload was read: the rest stays unread.
            resp.headers.append(("connection", "close"))
        if cors is not None:
            cors.decorate(req, resp)
        return resp

    async def _take_body(self, req: Request, receive: Receive) -> Response | None:
        """Authenticate from the headers, then read the body within the service's limits;
        or the answer (401, 413, 408) that refuses the request before the body is read."""
        refused = await run_in_threadpool(self._admit, req)
        if refused is not None:
            return refused
        limits = self.spec.limits
        if limits is None:
            req.body = await _read_all(receive)
            return None
        if self._is_upload(req):
            return self._stream_upload(req, receive, limits)
        try:
            req.body, _ = await read_body(receive, req.headers, limits)
        except BodyRefused as exc:
            return self._refuse(req, exc)
        return None

    def _refuse(self, req: Request, exc: BodyRefused) -> Response:
        """The answer to a body over a limit (413, the service's own page) or too slow (408)."""
        render = self.spec.render_too_large if exc.status == 413 else None
        err = HTTPError(exc.status, exc.detail)
        resp = (render or self.spec.render_error)(req, err, False)
        return self._stamp(req, resp, False)

    def _stream_upload(self, req: Request, receive: Receive,
                       limits: BodyLimits) -> Response | None:
        """An upload's body is left for the handler to read as it stores it; only a
        Content-Length over the cap is refused before (413)."""
        declared = body_limits.declared_length(req.headers)
        if declared is not None and declared > limits.upload_size:
            return self._refuse(req, body_limits.too_large(limits.upload_size))
        req.stream = body_limits.UploadStream(receive, limits)
        return None

    def _admit(self, req: Request) -> Response | None:
        """None once the headers' token is accepted (kept on `req`); else the pipeline's
        own answer for the request without its body -- the 401, or the error the
        authenticator ran into."""
        try:
            ctx = self._authenticate(req)
        except HTTPError as err:  # e.g. the 503 of an unreachable Keystone: asked once
            return self._stamp(req, self._render(req, err, False), False)
        except Exception:
            ctx = None
        if ctx is None:
            return self.respond(req)
        req.context = ctx
        req.authenticated = True
        return None

    def _is_upload(self, req: Request) -> bool:
        try:
            route, _ = self.spec.router.match(req.method, req.path)
        except HTTPError:
            return False
        return route.upload

    def respond(self, req: Request) -> Response:
        """The whole pipeline after CORS, synchronously: also what in-process clients call."""
        versioned = False
        try:
            ctx = req.context if req.authenticated else self._authenticate(req)
            if ctx is None:
                raise self._unauthorized(req)
            req.context = ctx
            _check_length(req)
            if self.spec.microversioned:
                req.version = self._negotiate(req)
            versioned = True
            route, params = self.spec.router.match(req.method, req.path)
            req.route = route.path
            if route.min_version and not req.version.at_least(route.min_version):
                raise HTTPError(404, "The resource could not be found.")
            req.params = params
            _check_query(req)
            if req.method == "GET" and not _accepts_json(req.headers.get("accept")):
                raise HTTPError(406, "Only application/json is provided")
            if route.json_body:
                require_json_content(req)
            resp: Response = route.handler(req)
        except HTTPError as err:
            resp = self._render(req, err, versioned)
            resp.headers.extend(err.headers.items())
        except DomainError as exc:
            status = _DOMAIN_STATUS.get(exc.kind, 400)
            resp = self._render(req, HTTPError(status, exc.detail, exc.code), versioned)
        except PolicyNotAuthorized as exc:
            resp = self._render(req, HTTPError(403, str(exc)), versioned)
        except sqlalchemy.exc.DataError as exc:
            # Last line of defence: the loaders refuse what is known to be unstorable.
            LOG.warning("database refused a value in %s %s: %s", req.method, req.path,
                        shorten(str(exc.orig), 500))
            refused = HTTPError(400, "Invalid input: a value cannot be stored.")
            resp = self._render(req, refused, versioned)
        except ValueError as exc:
            if not too_many_digits(exc):
                resp = self._failed(req, versioned)
            else:
                resp = self._render(req, HTTPError(400, TOO_MANY_DIGITS), versioned)
        except Exception:
            resp = self._failed(req, versioned)
        return self._stamp(req, resp, versioned)

    def _stamp(self, req: Request, resp: Response, versioned: bool) -> Response:
        """Every answer's headers: the version (once negotiated) and the request id."""
        if versioned and self.spec.microversioned:
            self._version_headers(req, resp)
        resp.headers.extend((name, req.context.request_id)
                            for name in self.spec.request_id_headers)
        return resp

    def _failed(self, req: Request, versioned: bool) -> Response:
        """The 500 of an unexpected exception (being handled), which goes to the log."""
        LOG.exception("unexpected error in %s %s", req.method, req.path)
        failure = HTTPError(500, "An unexpected error occurred; see the service log.")
        return self._render(req, failure, versioned)

    def _render(self, req: Request, err: HTTPError, versioned: bool) -> Response:
        """The service's error body, its detail bounded whatever the handler put in it."""
        err.detail = shorten(err.detail, DETAIL_LIMIT)
        return self.spec.render_error(req, err, versioned)

    def _version_headers(self, req: Request, resp: Response) -> None:
        header = f"{self.spec.service_type} {req.version}"
        resp.headers.append((microversion.STANDARD_HEADER, header))
        resp.headers.append(("vary", microversion.STANDARD_HEADER))
        if self.spec.echo_legacy_version_headers:
            for name in self.spec.legacy_version_headers:
                resp.headers.append((name, str(req.version)))
                resp.headers.append(("vary", name))

    def _unauthorized(self, req: Request) -> HTTPError:
        challenge = self.spec.challenge
        headers = {"www-authenticate": challenge(req)} if challenge else None
        return HTTPError(401, "The request you have made requires authentication.",
                         headers=headers)

    def _authenticate(self, req: Request) -> RequestContext | None:
        if req.path in self.spec.public_paths:
            # Version documents answer whatever the token, even with Keystone away.
            try:
                return self.spec.authenticate(req) or RequestContext()
            except HTTPError:
                return RequestContext()
        return self.spec.authenticate(req)

    def _negotiate(self, req: Request) -> microversion.Version:
        try:
            return microversion.negotiate(req.headers, self.spec.service_type,
                                          self.spec.versions, self.spec.legacy_version_headers)
        except microversion.VersionError as exc:
            extra: dict[str, object] = {}
            if exc.status == 406:
                extra = {"max_version": self.spec.versions[-1],
                         "min_version": self.spec.versions[0]}
            raise HTTPError(exc.status, f"Invalid microversion: {exc}", extra=extra) from None


def _request_head(scope: Scope, state: Any) -> Request:
    """The request as far as its headers go; the body is read later, if at all."""
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
    host = headers.get("host") or "{}:{}".format(*scope.get("server") or ("localhost", 80))
    scheme = headers.get("x-forwarded-proto") or scope.get("scheme", "http")
    root = scope.get("root_path", "")
    client = scope.get("client")
    return Request(method=scope["method"], path=scope["path"] or "/",
                   query_string=scope.get("query_string", b"").decode("latin-1"),
                   headers=headers, body=b"",
                   base_url=f"{scheme}://{host}{root}", root_path=root, app=state,
                   remote_addr=str(client[0]) if client else "-")


async def _read_all(receive: Receive) -> bytes:
    """The whole body, unbounded: for a service built without `ServiceSpec.limits`."""
    chunks = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientGone()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


async def send_response(send: Send, resp: Response) -> None:
    """Write `resp` to the ASGI connection (a HEAD's body is dropped by the server)."""
    headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in resp.headers]
    if resp.stream is not None:
        await _send_stream(send, resp.status, headers, resp.stream)
        return
    if resp.status not in (204, 304):
        headers.append((b"content-length", str(len(resp.body)).encode()))
    await send({"type": "http.response.start", "status": resp.status, "headers": headers})
    await send({"type": "http.response.body", "body": resp.body if resp.status != 204 else b""})


async def _send_stream(send: Send, status: int, headers: list[tuple[bytes, bytes]],
                       chunks: Iterator[bytes]) -> None:
    """A streamed body: each chunk read in a worker thread (a file read blocks), sent
    as it comes; the iterator is closed however the sending ends."""
    try:
        await send({"type": "http.response.start", "status": status, "headers": headers})
        while True:
            chunk = await run_in_threadpool(next, chunks, b"")
            if not chunk:
                break
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})
    finally:
        close = getattr(chunks, "close", None)
        if close is not None:
            close()


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


class PrefixDispatcher:
    """Serves several services under path prefixes (`/placement`, `/compute`, ...);
    `fallback` answers every other path (`web.root.RootApp`: the list of services)."""

    def __init__(self, mounts: dict[str, Any], fallback: Any = None) -> None:
        # Longest prefix first so that "" (root) is tried last.
        self.mounts = sorted(mounts.items(), key=lambda kv: -len(kv[0]))
        self.fallback = fallback

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        path = scope.get("path", "")
        for prefix, app in self.mounts:
            if prefix == "" or path == prefix or path.startswith(prefix + "/"):
                sub = dict(scope)
                sub["root_path"] = scope.get("root_path", "") + prefix
                sub["path"] = path[len(prefix):] or "/"
                await app(sub, receive, send)
                return
        if self.fallback is not None:
            await self.fallback(scope, receive, send)
            return
        headers = [("content-type", "application/json")]
        if expects_body({k.decode("latin-1").lower(): v.decode("latin-1")
                         for k, v in scope.get("headers", ())}):
            headers.append(("connection", "close"))  # its body is not read
        await send_response(send, Response(404, b'{"error": "not found"}', headers))
