"""The reshaper (1.30): move inventory and the allocations against it in one transaction.

Used when a provider's resources are split into child providers (e.g. VGPU
moving from a compute node to its GPU children). Inventories cannot be
deleted while allocated and allocations cannot land on missing inventory, so
the swap runs in three steps, as upstream:

1. interim inventory per provider: the new inventory plus any old classes the
   request drops (so current allocations stay valid);
2. replace the consumers' allocations (capacity checked against step 1);
3. final inventory per provider (a dropped class still allocated is in use).

Everything happens inside the caller's transaction: any error undoes it all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Connection

from stowage.errors import Conflict, Invalid
from stowage.placement import allocations as allocs
from stowage.placement import codes, providers
from stowage.placement import consumers as cons
from stowage.placement import inventories as invs

__all__ = ["ProviderInventories", "ProviderNotFound", "reshape"]


class ProviderNotFound(Invalid):
    """A provider named under `inventories` does not exist (400)."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail, codes.RESOURCE_PROVIDER_NOT_FOUND)


@dataclass(frozen=True)
class ProviderInventories:
    provider_uuid: str
    generation: int
    inventories: Mapping[str, Mapping[str, Any]]  # class -> inventory fields


def _check_providers(conn: Connection, wanted: Sequence[ProviderInventories]) -> None:
    """Lock the inventory providers and compare generations early, before any write."""
    locked = allocs.lock_providers(conn, [w.provider_uuid for w in wanted])
    for want in wanted:
        found = locked.get(want.provider_uuid)
        if found is None:
            raise ProviderNotFound(
                f"Resource provider {want.provider_uuid} in inventories not found: "
                f"No resource provider with uuid {want.provider_uuid} found")
        if found.generation != want.generation:
            raise Conflict(f"resource provider generation conflict for provider "
                           f"{want.provider_uuid}: actual: {found.generation}, "
                           f"given: {want.generation}", codes.CONCURRENT_UPDATE)


def _interim(conn: Connection, want: ProviderInventories) -> None:
    if not want.inventories:
        return  # replacing the inventory with itself would only bump the generation
    provider = providers.get_provider(conn, want.provider_uuid)
    union: dict[str, Mapping[str, Any]] = {
        inv.resource_class: inv.values() for inv in invs.list_inventories(conn, provider.id)}
    union.update(want.inventories)
    invs.replace_inventories(conn, provider, union, check_usage=False)


def reshape(conn: Connection, inventories: Sequence[ProviderInventories],
            allocations: Sequence[allocs.ConsumerAllocations],
            rules: cons.ConsumerRules) -> None:
    """Replace the inventories and allocations given; see the module docstring for the order.

    Raises the domain errors of `inventories` and `allocations`,
    ProviderNotFound, and Conflict on a stale provider generation.
    """
    cons.lock_consumers(conn, [a.consumer.uuid for a in allocations])  # before providers
    _check_providers(conn, inventories)
    prepared = allocs.prepare_allocations(conn, allocations, rules)
    for want in inventories:
        _interim(conn, want)
    allocs.apply_allocations(conn, prepared)
    for want in inventories:
        provider = providers.get_provider(conn, want.provider_uuid)
        invs.replace_inventories(conn, provider, want.inventories, check_usage=True)
