"""What the Network service tells Compute about a server's ports (Neutron's nova notifier).

Neutron sends Nova `network-vif-deleted` (tag: the port id) when a port
bound to a server is deleted, so that Nova detaches it and gives back what
the port held of the server's allocation; without it the port's bandwidth
would stay claimed for a port that no longer exists. A floating IP that
comes to or leaves a server's port is `network-changed` (tag: the port id),
so that the server's cached addresses show it. The event goes to
Compute's public `POST /os-server-external-events`, in-process when this
process serves Compute too, else as `[nova]`'s service user (Neutron's
table) to the catalog's compute endpoint, or at `[network] compute_url`
(`web.service_clients`). It is sent
after the port's deletion commits and never fails the deletion: a Compute
that cannot be reached is logged.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import httpx

from stowage.web.service_client import Send, in_process, rooted
from stowage.web.service_client import over_http as http_send
from stowage.web.service_clients import COMPUTE, ServiceClients

__all__ = ["Notify", "connect", "to_compute", "over_http", "vif_deleted", "network_changed"]

LOG = logging.getLogger(__name__)

# The events of one request -> nothing (errors are the notifier's own business).
Notify = Callable[[list[dict[str, Any]]], None]
_HEADERS = {"x-auth-token": "admin", "accept": "application/json",
            "openstack-api-version": "compute 2.1"}
# Below the API's versioned root (/v2.1), where the catalog's compute endpoint points.
_PATH = "/os-server-external-events"


def connect(clients: ServiceClients, compute_app: Any = None) -> Notify | None:
    """The notifier the factory gives: in-process, as `[nova]`'s service user, or at
    `[network] compute_url`; None when Compute cannot be reached (nobody is told)."""
    send = clients.send(COMPUTE, _HEADERS, compute_app)
    return None if send is None else _notifier(send)


def to_compute(compute_app: Any) -> Notify:
    """A notifier that hands events to the Compute app of this process."""
    return _notifier(rooted(in_process(compute_app, _HEADERS, "http://compute.local"),
                            COMPUTE.root))


def over_http(url: str, auth: httpx.Auth | None = None, timeout: float = 10.0) -> Notify:
    """A notifier for a Compute service of another process at `url` (without /v2.1);
    `auth` replaces the admin token, e.g. a builtin-identity service token."""
    http = httpx.Client(base_url=url.rstrip("/") + COMPUTE.root, headers=_HEADERS,
                        timeout=timeout, auth=auth)
    return _notifier(http_send(http))


def _notifier(send: Send) -> Notify:
    def notify(events: list[dict[str, Any]]) -> None:
        try:
            answer = send("POST", _PATH, json.dumps({"events": events}).encode(), None)
        except Exception:
            LOG.exception("could not send %d event(s) to Compute", len(events))
            return
        if answer.status not in (200, 207):
            LOG.warning("Compute refused events %s: %s %s", events, answer.status,
                        answer.body[:300])
    return notify


def vif_deleted(device_owner: str, device_id: str, port_id: str) -> list[dict[str, Any]]:
    """The event for a deleted port: one when a server (`compute:*`) owned it, else none."""
    if not device_owner.startswith("compute:") or not device_id:
        return []
    return [{"name": "network-vif-deleted", "server_uuid": device_id, "tag": port_id}]


def network_changed(ports: list[tuple[str | None, dict[str, Any] | None]]
                    ) -> list[dict[str, Any]]:
    """The events for floating IPs that changed on these ports ((port id, its
    port_details) before and after): one per server (`compute:*`) port, once each."""
    events: list[dict[str, Any]] = []
    for port_id, details in ports:
        if not port_id or not details:
            continue
        owner, device = str(details.get("device_owner") or ""), details.get("device_id")
        event = {"name": "network-changed", "server_uuid": device, "tag": port_id}
        if owner.startswith("compute:") and device and event not in events:
            events.append(event)
    return events
