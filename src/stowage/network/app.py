"""Assemble the Network service: routes, auth (noauth2 or tokens) and Neutron's error bodies.

The Networking API has no microversions: features are announced as
extensions (`GET /v2.0/extensions`), so responses carry no version headers.
Errors are rendered as `{"NeutronError": {"type", "message", "detail"}}`.
"""

from __future__ import annotations

from dataclasses import dataclass

from stowage.compute.cells import Cells
from stowage.config import Settings
from stowage.db import Database
from stowage.identity.middleware import authenticator_for, challenge_for
from stowage.network import policy
from stowage.network.api.versions import PUBLIC_PATHS
from stowage.network.compute_events import Notify
from stowage.network.errors import StatusError
from stowage.policy import Enforcer
from stowage.web.app import ServiceApp, ServiceSpec
from stowage.web.cors import Cors
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, json_response
from stowage.web.limits import BodyLimits
from stowage.web.routing import Handler, Route, Router, routes_of

__all__ = ["NetworkState", "build_app", "render_error", "HANDLER_MODULES"]

# One module per URL noun, in matching order.
HANDLER_MODULES = ("versions", "networks", "subnets", "ports", "bindings", "qos",
                   "security_groups", "quotas", "routers", "floating_ips", "subnetpools",
                   "tags", "agents")
# The error `type` Neutron gives a status when no specific exception names one.
_DEFAULT_TYPES = {400: "HTTPBadRequest", 401: "HTTPUnauthorized", 403: "HTTPForbidden",
                  404: "HTTPNotFound", 405: "HTTPMethodNotAllowed", 406: "HTTPNotAcceptable",
                  408: "HTTPRequestTimeout", 409: "HTTPConflict", 412: "HTTPPreconditionFailed",
                  413: "HTTPRequestEntityTooLarge", 415: "HTTPUnsupportedMediaType",
                  500: "HTTPInternalServerError", 501: "HTTPNotImplemented",
                  503: "HTTPServiceUnavailable"}


@dataclass
class NetworkState:
    settings: Settings
    db: Database
    # Neutron's rules with the operator's overrides (policy.py).
    enforcer: Enforcer
    # How Compute hears of a bound port's deletion (compute_events.py); None: nobody to tell.
    notify: Notify | None = None
    # Where the compute hosts' services are, whose L2 agents /v2.0/agents shows (agents.py);
    # opened on the first agents request.
    cells: Cells | None = None


def render_error(req: Request, err: HTTPError, versioned: bool) -> Response:
    error_type = err.code or _DEFAULT_TYPES.get(err.status, "HTTPError")
    return json_response({"NeutronError": {"type": error_type, "message": err.detail,
                                           "detail": ""}}, status=err.status)


def _statuses(handler: Handler) -> Handler:
    """Let domain errors with uncommon statuses (412, 500, 501, 503) through as such."""
    def handle(req: Request) -> Response:
        try:
            return handler(req)
        except StatusError as exc:
            raise HTTPError(exc.status, exc.detail, exc.code) from None
    return handle


def routes() -> list[Route]:
    return [Route(r.method, r.path, _statuses(r.handler), r.min_version, r.json_body)
            for r in routes_of("stowage.network.api", HANDLER_MODULES)]


def build_app(settings: Settings, db: Database) -> ServiceApp:
    spec = ServiceSpec(
        service_type="network",
        versions=("2.0",),
        router=Router(routes()),
        render_error=render_error,
        authenticate=authenticator_for(settings, db),
        challenge=challenge_for(settings),
        microversioned=False,
        public_paths=PUBLIC_PATHS,
        limits=BodyLimits.of(settings.api, "network"),
        cors=Cors(settings.cors) if settings.cors.allowed_origin else None,
    )
    return ServiceApp(spec, NetworkState(settings, db, policy.enforcer(settings.policy)))
