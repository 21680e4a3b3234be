"""The one client factory: how a service of this process reaches another stowage service.

For each call of Compute to Placement or the Network service, and of the
Network service to Compute (os-server-external-events), the first of these
that applies is the way:

    1. in-process   the called service is served by this process: its app's
                    pipeline is called directly (`service_client.in_process`),
                    no HTTP, no token (the request is trusted);
    2. service user the caller's table ([placement] / [network] for Compute,
                    [nova] for the Network service) names an auth_type:
                    keystoneauth authenticates as that user, as Nova and
                    Neutron do, and an Adapter finds the endpoint in Keystone's
                    catalog by service type, interface and region -- unless
                    `endpoint_override` or the explicit URL below names it;
    3. explicit URL `[compute] placement_url` / `network_url`, `[network]
                    compute_url` without a service user: builtin-identity's
                    token minted into the database both processes share
                    (`identity.service_auth`, handed in as `mint`), or
                    noauth2's admin token.

Keystone's side, in way 2, is keystoneauth's own: the token is fetched on
the first call and renewed before it expires; a 401 from the called service
makes the Session invalidate it, fetch a new one and send the request once
more. Every request, the token's included, is bounded by the table's
`timeout` (the clients' default when unset: keystoneauth has none). What
cannot be reached -- Keystone or the called service -- raises `Unreachable`,
an httpx TransportError like the other transports' failures, so that
callers that wait for a service (`compute.reachable`) treat all alike; a
refusal that waiting will not mend (a wrong password, no such endpoint in
the catalog) raises `ServiceUserError` naming the table to fix.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from stowage.config import Settings
from stowage.service_users import ServiceUser
from stowage.web.service_client import Answer, Send, in_process, over_http, rooted

__all__ = ["COMPUTE", "NETWORK", "PLACEMENT", "Peer", "ServiceClients", "ServiceUserError",
           "Unreachable", "keystone_send"]

# The strategies whose explicit-URL calls need no service user (way 3).
_MINTING = ("noauth2", "builtin-identity")
# requests' pool per host: the conductor's and the API's threads share one Session.
_POOL = 32


class Unreachable(httpx.TransportError):
    """Keystone or the called service could not be reached (or answered 5xx to the token
    request): waiting may mend it. An httpx TransportError so that one `except` covers
    every transport."""


class ServiceUserError(RuntimeError):
    """Keystone refused the service user, or its catalog has no such endpoint: the
    settings must change."""


@dataclass(frozen=True)
class Peer:
    """A service another one calls, and where the caller's settings name the way to it."""

    service_type: str
    section: str           # the caller's service-user table
    url_option: str        # the explicit URL's setting, for messages
    local_base: str        # base URL of in-process requests
    # The API's versioned root below the URL an operator names for way 3 (Compute's
    # `/v2.1`); the catalog's endpoint already points there, as Nova registers it.
    root: str = ""
    timeout: float = 30.0

    def explicit_url(self, settings: Settings) -> str | None:
        return {"placement": settings.compute.placement_url,
                "network": settings.compute.network_url,
                "compute": settings.network.compute_url}[self.service_type]


PLACEMENT = Peer("placement", "placement", "[compute] placement_url", "http://placement.local")
NETWORK = Peer("network", "network", "[compute] network_url", "http://network.local")
COMPUTE = Peer("compute", "nova", "[network] compute_url", "http://compute.local",
               root="/v2.1", timeout=10.0)


class ServiceClients:
    """Sends for the peers of this process's services; the constructor does no I/O.

    `mint` gives builtin-identity's service-token auth (or None for noauth2);
    it is asked at most once, and only for way 3.
    """

    def __init__(self, settings: Settings,
                 mint: Callable[[], httpx.Auth | None] = lambda: None) -> None:
        self._settings = settings
        self._mint = mint
        self._minted: list[httpx.Auth | None] = []
        self._lock = threading.Lock()

    def send(self, peer: Peer, headers: Mapping[str, str], app: Any = None,
             url: str | None = None, timeout: float | None = None) -> Send | None:
        """The way to `peer` (None: no way configured). `headers` go with every request
        (noauth2's admin token among them, dropped for a service user); `url`, when
        given, wins over the settings' explicit URL; `timeout` over the peer's."""
        timeout = timeout or peer.timeout
        if app is not None:
            local = in_process(app, headers, peer.local_base)
            return rooted(local, peer.root) if peer.root else local
        url = url or peer.explicit_url(self._settings)
        user = self._settings.service_user(peer.section)
        if user.configured:
            override = url.rstrip("/") + peer.root if url else None
            return keystone_send(user, headers, override, timeout)
        if url is None:
            return None
        strategy = self._settings.api.auth_strategy
        if strategy not in _MINTING:
            raise ValueError(
                f"{peer.url_option} with [api] auth_strategy {strategy!r} needs a service "
                f"user: set [{peer.section}] auth_type = \"password\", auth_url, username, "
                "password, project_name, user_domain_name and project_domain_name (`stowage "
                "manage keystone register` prints them)")
        http = httpx.Client(base_url=url.rstrip("/") + peer.root, headers=dict(headers),
                            timeout=timeout, auth=self._auth())
        return over_http(http)

    def way(self, peer: Peer, served_here: bool) -> str:
        """How `peer` is reached, in words (for start-up messages)."""
        if served_here:
            return "in-process"
        user = self._settings.service_user(peer.section)
        url = peer.explicit_url(self._settings)
        if user.configured:
            where = (user.options.get("endpoint_override") or url
                     or f"the catalog's {user.service_type} endpoint")
            return (f"{where} as service user {user.options.get('username') or '?'!s} "
                    f"([{peer.section}])")
        return url or "nowhere"

    def _auth(self) -> httpx.Auth | None:
        with self._lock:
            if not self._minted:
                self._minted.append(self._mint())
            return self._minted[0]


def keystone_send(user: ServiceUser, headers: Mapping[str, str],
                  endpoint: str | None = None, timeout: float = 30.0) -> Send:
    """A Send through a keystoneauth Adapter authenticated as `user` (way 2).

    `endpoint` (an explicit URL) is used when the table sets no `endpoint_override`;
    with neither, the catalog names it. The table's `timeout` wins over `timeout`.
    """
    return _KeystoneSend(_adapter(user, endpoint, timeout), headers, user)


def _adapter(user: ServiceUser, endpoint: str | None, timeout: float) -> Any:
    """keystoneauth's plugin, Session and Adapter, as keystoneauth1.loading builds them
    from a conf group (no I/O yet: the token is asked for on the first request)."""
    import requests
    from keystoneauth1 import adapter, loading

    opts = user.options
    loader: Any = loading.get_plugin_loader(str(opts["auth_type"]))
    auth = loader.load_from_options_getter(lambda opt: opts.get(opt.dest))
    pooled = requests.Session()
    for scheme in ("http://", "https://"):
        pooled.mount(scheme, requests.adapters.HTTPAdapter(pool_maxsize=_POOL))
    session = loading.session.Session().load_from_options(
        insecure=bool(opts.get("insecure", False)), cacert=opts.get("cafile"),
        cert=opts.get("certfile"), key=opts.get("keyfile"),
        timeout=float(opts.get("timeout") or timeout),
        collect_timing=bool(opts.get("collect_timing", False)),
        split_loggers=opts.get("split_loggers"), tls_ciphers=opts.get("tls_ciphers"),
        tls_min_version=opts.get("tls_min_version"), auth=auth, session=pooled)
    codes = opts.get("retriable_status_codes")
    return adapter.Adapter(
        session, auth=auth, service_type=user.service_type,
        service_name=opts.get("service_name"), interface=user.interfaces(),
        region_name=opts.get("region_name"),
        endpoint_override=opts.get("endpoint_override") or endpoint,
        connect_retries=opts.get("connect_retries"),
        connect_retry_delay=opts.get("connect_retry_delay"),
        status_code_retries=opts.get("status_code_retries"),
        status_code_retry_delay=opts.get("status_code_retry_delay"),
        retriable_status_codes=list(codes) if codes else None, raise_exc=False)


class _KeystoneSend:
    """Requests through the Adapter; keystoneauth's failures become ours, with the table."""

    def __init__(self, ksa: Any, headers: Mapping[str, str], user: ServiceUser) -> None:
        self._adapter = ksa
        self._user = user
        # The service user's token replaces noauth2's admin token.
        self._headers = {k: v for k, v in headers.items() if k.lower() != "x-auth-token"}
        self._with_body = {**self._headers, "content-type": "application/json"}

    def __call__(self, method: str, path: str, content: bytes | None,
                 params: Sequence[tuple[str, str]] | None) -> Answer:
        from keystoneauth1 import exceptions

        headers = dict(self._with_body if content is not None else self._headers)
        try:
            resp = self._adapter.request(path, method, data=content, headers=headers,
                                         params=list(params) if params else None,
                                         raise_exc=False)
        except exceptions.ClientException as exc:
            raise self._failure(exc) from exc
        return Answer(resp.status_code, resp.content)

    def _failure(self, exc: Exception) -> Exception:
        from keystoneauth1 import exceptions

        user = self._user
        who = (f"[{user.section}]'s service user {user.options.get('username') or '?'} "
               f"(Keystone {user.options.get('auth_url')})")
        status = getattr(exc, "http_status", None)
        if isinstance(exc, (exceptions.ConnectionError, exceptions.DiscoveryFailure)) or (
                isinstance(status, int) and status >= 500):
            return Unreachable(f"{who}: cannot reach Keystone or the "
                               f"{user.service_type} service: {exc}")
        if isinstance(exc, exceptions.EndpointNotFound):
            return ServiceUserError(
                f"{who}: Keystone's catalog has no {user.service_type} endpoint for "
                f"interface(s) {', '.join(user.interfaces())}"
                + (f" in region {user.options['region_name']}"
                   if user.options.get("region_name") else "")
                + ": register it (`stowage manage keystone register`) or set "
                f"[{user.section}] endpoint_override ({exc})")
        if isinstance(exc, exceptions.Unauthorized):
            return ServiceUserError(f"{who}: Keystone refused the credentials; check "
                                    f"[{user.section}] username, password, project_name and "
                                    f"the domains ({exc})")
        return ServiceUserError(f"{who}: {type(exc).__name__}: {exc}")

    def close(self) -> None:
        self._adapter.session.session.close()
