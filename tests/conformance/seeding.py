"""Write fixture data through the Placement HTTP API.

Upstream's fixtures call placement's object layer directly; the helpers here
are their HTTP equivalents, one request per upstream call where it matters,
so that provider generations end up the same as upstream's:

    upstream (tb.*)              here
    create_provider(n, *aggs)    POST /resource_providers (+ aggregates)
    add_inventory(rp, rc, n)     POST /resource_providers/{u}/inventories
                                 (custom class first: PUT /resource_classes)
    set_traits(rp, *t)           PUT /resource_providers/{u}/traits
                                 (custom traits first: PUT /traits/{t})
    rp.set_aggregates(aggs)      PUT .../aggregates at microversion 1.18:
                                 the list form, which, like upstream's
                                 object call, does not bump the generation
    ensure_consumer+set_allocation
                                 PUT /allocations/{consumer} at 1.37: the
                                 last version without consumer_type, so the
                                 consumer has no type, as upstream's does

Every request carries ``X-Auth-Token: admin`` (noauth2 admin) and asks for the
latest microversion unless a step needs an older one.
"""

from __future__ import annotations

import uuid
from typing import Any

import httpx

__all__ = ["Seeder", "SeedError"]

LATEST = "placement latest"
AGGREGATES_NO_GENERATION = "placement 1.18"
ALLOCATIONS_UNTYPED = "placement 1.37"


class SeedError(RuntimeError):
    """A fixture write was refused by the server."""


class Seeder:
    """Writes providers, inventories, traits, aggregates and allocations."""

    def __init__(self, base_url: str) -> None:
        self.client = httpx.Client(
            base_url=base_url, timeout=30.0,
            headers={"X-Auth-Token": "admin",
                     "OpenStack-API-Version": LATEST,
                     "Accept": "application/json"})

    def close(self) -> None:
        self.client.close()

    def _call(self, method: str, url: str, body: Any = None,
              version: str = LATEST) -> Any:
        resp = self.client.request(
            method, url, json=body,
            headers={"OpenStack-API-Version": version})
        if resp.status_code >= 400:
            raise SeedError(f"{method} {url} -> {resp.status_code}: "
                            f"{resp.text[:500]}")
        return resp.json() if resp.content else None

    def _generation(self, rp_uuid: str) -> int:
        body = self._call("GET", f"/resource_providers/{rp_uuid}")
        return int(body["generation"])

    def create_provider(self, name: str, *aggs: str, parent: str | None = None,
                        rp_uuid: str | None = None) -> str:
        """Create a provider (optionally in aggregates); return its uuid."""
        rp_uuid = rp_uuid or str(uuid.uuid4())
        body = {"name": name, "uuid": rp_uuid}
        if parent:
            body["parent_provider_uuid"] = parent
        self._call("POST", "/resource_providers", body)
        if aggs:
            self.set_aggregates(rp_uuid, *aggs)
        return rp_uuid

    def ensure_resource_class(self, name: str) -> None:
        if name.startswith("CUSTOM_"):
            self._call("PUT", f"/resource_classes/{name}")

    def add_inventory(self, rp_uuid: str, rc: str, total: int,
                      **fields: Any) -> None:
        """Add one inventory record; max_unit defaults to total, as upstream."""
        self.ensure_resource_class(rc)
        fields.setdefault("max_unit", total)
        body = {"resource_class": rc, "total": total,
                "resource_provider_generation": self._generation(rp_uuid),
                **fields}
        self._call("POST", f"/resource_providers/{rp_uuid}/inventories", body)

    def set_traits(self, rp_uuid: str, *traits: str) -> None:
        """Replace the provider's traits, creating custom ones first."""
        for trait in traits:
            if trait.startswith("CUSTOM_"):
                self._call("PUT", f"/traits/{trait}")
        body = {"traits": list(traits),
                "resource_provider_generation": self._generation(rp_uuid)}
        self._call("PUT", f"/resource_providers/{rp_uuid}/traits", body)

    def set_aggregates(self, rp_uuid: str, *aggs: str) -> None:
        self._call("PUT", f"/resource_providers/{rp_uuid}/aggregates",
                   list(aggs), version=AGGREGATES_NO_GENERATION)

    def set_allocation(self, consumer: str, rp_uuid: str,
                       used: dict[str, int], *, project_id: str,
                       user_id: str) -> None:
        """Replace ``consumer``'s allocations with ``used`` against one
        provider; the consumer (and its user/project) springs into being."""
        body = {"allocations": {rp_uuid: {"resources": used}},
                "project_id": project_id, "user_id": user_id,
                "consumer_generation": None}
        self._call("PUT", f"/allocations/{consumer}", body,
                   version=ALLOCATIONS_UNTYPED)
