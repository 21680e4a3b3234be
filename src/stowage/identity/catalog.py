"""The service catalog: stowage's own endpoints, as Keystone lists them.

One service per served API plus identity itself, each with a public, an
internal and an admin endpoint in one region, all at the same URL::

    identity   keystone    <base>/identity
    compute    nova        <base>/compute/v2.1
    placement  placement   <base>/placement
    image      glance      <base>/image
    network    neutron     <base>/network

`<base>` is `[identity] public_url` or the scheme and host of the request.
Ids are derived from the type and interface, so they are stable.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Service", "Endpoint", "Catalog", "INTERFACES", "name_and_path"]

_NAMESPACE = uuid.UUID("0b7c1f2e-8d4a-4e0b-a7f3-5e1c9d2b6a44")
INTERFACES = ("public", "internal", "admin")
# service type -> (name, path below the base URL, description)
_KNOWN = {
    "identity": ("keystone", "/identity", "Identity Service (stowage built-in)"),
    "compute": ("nova", "/compute/v2.1", "Compute Service"),
    "placement": ("placement", "/placement", "Placement Service"),
    "image": ("glance", "/image", "Image Service"),
    "network": ("neutron", "/network", "Network Service"),
}


def name_and_path(service_type: str) -> tuple[str, str]:
    """The catalog's name of a service type and its endpoint path below the base URL."""
    name, path, _ = _KNOWN[service_type]
    return name, path


@dataclass(frozen=True)
class Service:
    id: str
    type: str
    name: str
    description: str

    def view(self) -> dict[str, Any]:
        return {"id": self.id, "type": self.type, "name": self.name,
                "description": self.description, "enabled": True,
                "links": {"self": None}}


@dataclass(frozen=True)
class Endpoint:
    id: str
    service_id: str
    interface: str
    region: str
    url: str

    def view(self) -> dict[str, Any]:
        return {"id": self.id, "service_id": self.service_id, "interface": self.interface,
                "region": self.region, "region_id": self.region, "url": self.url,
                "enabled": True, "links": {"self": None}}


def _id(*parts: str) -> str:
    return uuid.uuid5(_NAMESPACE, ":".join(parts)).hex


class Catalog:
    """The services and endpoints for one base URL (built per request; no I/O)."""

    def __init__(self, base: str, served: Sequence[str], region: str) -> None:
        self.region = region
        types = ["identity"] + [s for s in served if s in _KNOWN and s != "identity"]
        self.services = tuple(Service(_id(kind), kind, _KNOWN[kind][0], _KNOWN[kind][2])
                              for kind in types)
        self.endpoints = tuple(
            Endpoint(_id(s.type, interface), s.id, interface, region,
                     base.rstrip("/") + _KNOWN[s.type][1])
            for s in self.services for interface in INTERFACES)

    def token_view(self) -> list[dict[str, Any]]:
        """The catalog as a token (and `GET /v3/auth/catalog`) shows it."""
        return [{"id": s.id, "type": s.type, "name": s.name,
                 "endpoints": [{"id": e.id, "interface": e.interface, "region": e.region,
                                "region_id": e.region, "url": e.url}
                               for e in self.endpoints if e.service_id == s.id]}
                for s in self.services]
