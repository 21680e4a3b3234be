"""What Nova's network proxy APIs share: the microversion that removed them, the
compute service's network client, and the Network service's refusals in Nova's terms.

Nova 2.36 deprecated the proxies to Neutron (os-security-groups,
os-security-group-rules, os-networks, os-tenant-networks): from 2.36 they
are 404. They talk to the Network service with the service's own client
(the one the conductor uses), so each handler makes the project checks the
user's token would have met in Neutron.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from stowage.compute.api.common import at_least
from stowage.network.client import NetworkClient, NetworkError
from stowage.web.errors import HTTPError
from stowage.web.http import Request

__all__ = ["PROXY_REMOVED", "require_proxy", "network_of", "translated"]

# 2.36 removed the network proxy APIs.
PROXY_REMOVED = 36


def require_proxy(req: Request) -> None:
    if at_least(req, PROXY_REMOVED):
        raise HTTPError(404, "The resource could not be found.")


def network_of(req: Request) -> NetworkClient:
    plane = req.app.plane
    network: NetworkClient | None = None if plane is None else plane.network
    if network is None:
        raise HTTPError(503, "No Network service is configured.")
    return network


@contextmanager
def translated(conflict: int = 400) -> Iterator[None]:
    """The Network service's refusals as Nova answers them (a 409 becomes `conflict`)."""
    try:
        yield
    except NetworkError as exc:
        status = {400: 400, 403: 403, 404: 404, 409: conflict}.get(exc.status)
        if status is None:
            raise
        raise HTTPError(status, exc.message) from None
