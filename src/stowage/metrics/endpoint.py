"""`GET /metrics`: who may scrape, and what each process answers.

    client in [metrics] allow_unauthenticated_from   -> 200 without a token
    else: the services' own authentication (noauth2, builtin-identity, keystone)
          no token, or one they refuse               -> 401
          a token without the admin role             -> 403
          an admin's                                 -> 200

The answer is Prometheus' text exposition: this process's counters and
histograms (`process.py`; with `serve --workers N`, every worker's summed
from the per-run directory, whichever worker answers), then the gauges
computed from the records for what this process serves: Placement's when it
serves Placement, Nova's and the cells' when it serves Compute, the audit
and the queue depth when the control plane (or its RabbitMQ client) runs here.
"""

from __future__ import annotations

import ipaddress
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.multiprocess import MultiProcessCollector
from starlette.concurrency import run_in_threadpool

from stowage import collector
from stowage.config import Settings
from stowage.context import RequestContext, new_request_id
from stowage.metrics import exporter, plane, process
from stowage.metrics.text import Family, render
from stowage.metrics.workers import MULTIPROC_ENV
from stowage.web import requestlog
from stowage.web.app import PrefixDispatcher, Receive, Scope, Send, send_response
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response

__all__ = ["MetricsApp", "Sources", "Access", "exposition", "with_metrics"]

Networks = Sequence[ipaddress.IPv4Network | ipaddress.IPv6Network]


@dataclass
class Sources:
    """What this process reports gauges of; None for what it does not serve."""

    placement_db: Any = None
    compute: Any = None  # the Compute service's state (ComputeState)
    audit: plane.AuditRunner | None = None

    def families(self) -> Iterator[Family]:
        if self.placement_db is not None:
            yield from exporter.placement_families(self.placement_db)
        if self.compute is not None:
            yield from exporter.nova_families(self.compute)
            yield from plane.cell_families(self.compute.cells)
            transport = getattr(self.compute.plane, "transport", None)
            yield from plane.queue_families(transport)
        if self.audit is not None:
            yield from self.audit.families()


def exposition(sources: Sources) -> bytes:
    """The whole answer: the process metrics (every worker's), then the gauges."""
    with collector.paused():
        path = os.environ.get(MULTIPROC_ENV)
        if path:
            registry = CollectorRegistry()
            MultiProcessCollector(registry, path=path)  # type: ignore[no-untyped-call]
            counters = generate_latest(registry)
        else:
            counters = generate_latest(process.REGISTRY)
        return counters + render(sources.families()).encode()


@dataclass
class Access:
    """Who may scrape: the networks let in without a token, else the services' auth."""

    networks: Networks
    authenticate: Callable[[Request], RequestContext | None] | None

    @classmethod
    def of(cls, settings: Settings, authenticate: Any) -> Access:
        nets = [ipaddress.ip_network(n, strict=False)
                for n in settings.metrics.allow_unauthenticated_from]
        return cls(nets, authenticate)

    def allows_address(self, address: str) -> bool:
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        return any(ip in net for net in self.networks)

    def refusal(self, req: Request) -> Response | None:
        """None when `req` may scrape; else the 401 or 403 that refuses it."""
        if self.allows_address(req.remote_addr):
            return None
        try:
            ctx = self.authenticate(req) if self.authenticate is not None else None
        except HTTPError as err:  # e.g. an unreachable Keystone's 503
            return _text(err.status, err.detail)
        if ctx is None:
            return _text(401, "The request you have made requires authentication.")
        if not ctx.is_admin:
            return _text(403, "Only an admin (or a network in [metrics] "
                              "allow_unauthenticated_from) may read /metrics.")
        return None


def _text(status: int, message: str, headers: Sequence[tuple[str, str]] = ()) -> Response:
    return Response(status, (message + "\n").encode(),
                    [("content-type", "text/plain; charset=utf-8"), *headers])


class MetricsApp:
    """The ASGI app mounted at `/metrics`."""

    def __init__(self, sources: Sources, access: Access) -> None:
        self.sources = sources
        self.access = access

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        started = time.monotonic()
        req = _request(scope)
        resp = await run_in_threadpool(self.respond, req)
        # Logged as every other request is (`web.app.ServiceApp`): a scraper hammering
        # /metrics, or refused by it, shows in the same log an operator already reads.
        request_id = new_request_id()
        resp.headers.append(("x-openstack-request-id", request_id))
        query = f"?{req.query_string}" if req.query_string else ""
        raw = scope.get("raw_path")  # what the client asked: `/metrics`, not `/metrics/`
        path = raw.decode("latin-1") if raw else f"{scope.get('root_path', '')}{req.path}"
        requestlog.write(request_id, req.remote_addr, req.method, f"{path}{query}",
                         resp.status, len(resp.body), "-", time.monotonic() - started)
        await send_response(send, resp)

    def respond(self, req: Request) -> Response:
        if req.path not in ("", "/"):
            return _text(404, f"Nothing is served at /metrics{req.path}.")
        if req.method not in ("GET", "HEAD"):
            return _text(405, "Use GET.", [("allow", "GET, HEAD")])
        refused = self.access.refusal(req)
        if refused is not None:
            return refused
        return Response(200, exposition(self.sources),
                        [("content-type", CONTENT_TYPE_PLAIN_0_0_4)])


def _request(scope: Scope) -> Request:
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
    client = scope.get("client")
    return Request(method=scope["method"], path=scope.get("path") or "/",
                   query_string=scope.get("query_string", b"").decode("latin-1"),
                   headers=headers, body=b"", base_url="", remote_addr=str(client[0])
                   if client else "-")


def metrics_app(settings: Settings, apps: Mapping[str, Any]) -> MetricsApp:
    """`/metrics` for the services of `apps` (name -> ServiceApp) built in this process."""
    placement = apps.get("placement")
    compute = apps.get("compute")
    state = getattr(compute, "state", None)
    audit = None
    control = getattr(state, "plane", None)
    if state is not None and control is not None and settings.metrics.audit_interval > 0:
        from stowage.compute.audit import audit as run_audit

        audit = plane.AuditRunner(lambda: run_audit(state.cell_dbs(), control.placement,
                                                    control.network),
                                  settings.metrics.audit_interval)
    sources = Sources(placement.state.db if placement is not None else None, state, audit)
    authenticate = next((app.spec.authenticate for app in apps.values()
                         if hasattr(app, "spec")), None)
    return MetricsApp(sources, Access.of(settings, authenticate))


def with_metrics(settings: Settings, apps: Mapping[str, Any],
                 mounts: Mapping[str, Any] | None = None, fallback: Any = None) -> Any:
    """The dispatcher of `stowage serve` with `/metrics` mounted beside `mounts`; a single
    service served at the root (no `mounts`) keeps every other path."""
    found = dict(mounts) if mounts is not None else {"": next(iter(apps.values()))}
    found["/metrics"] = metrics_app(settings, apps)
    return PrefixDispatcher(found, fallback=fallback)
