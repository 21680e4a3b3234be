"""Every provider's inventory and usage in two reads: what a metrics scrape reports.

`GET /resource_providers/{uuid}/inventories` and `.../usages` answer one
provider each; a scrape of 1,000 hosts asks about all of them at once, so
the same numbers are read here in two grouped queries instead of 2,000, and
handed back as plain tuples (a scrape reads thousands of them). A usage is
reported for each class the provider has inventory of (0 when nothing is
allocated), as `.../usages` reports it.
"""

from __future__ import annotations

from typing import NamedTuple

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.placement import tables as t

__all__ = ["ProviderTotal", "provider_totals"]


class ProviderTotal(NamedTuple):
    """One provider's inventory of one resource class, with what is allocated of it."""

    provider_uuid: str
    provider_name: str
    generation: int
    resource_class: str
    total: int
    reserved: int
    allocation_ratio: float
    used: int


def provider_totals(conn: Connection) -> list[ProviderTotal]:
    """Every inventory record with its provider and its usage, by provider name and class."""
    rp, inv, rc, alloc = t.resource_providers, t.inventories, t.resource_classes, t.allocations
    # SELECT resource_provider_id, resource_class_id, SUM(used) FROM allocations
    #  GROUP BY resource_provider_id, resource_class_id
    used = {(p, c): int(n) for p, c, n in conn.execute(
        sa.select(alloc.c.resource_provider_id, alloc.c.resource_class_id,
                  sa.func.sum(alloc.c.used))
        .group_by(alloc.c.resource_provider_id, alloc.c.resource_class_id)).all()}
    # SELECT rp.id, rp.uuid, rp.name, rp.generation, i.resource_class_id, rc.name, i.total,
    #        i.reserved, i.allocation_ratio
    #   FROM inventories i JOIN resource_providers rp ON rp.id = i.resource_provider_id
    #   JOIN resource_classes rc ON rc.id = i.resource_class_id
    rows = conn.execute(
        sa.select(rp.c.id, rp.c.uuid, rp.c.name, rp.c.generation, inv.c.resource_class_id,
                  rc.c.name, inv.c.total, inv.c.reserved, inv.c.allocation_ratio)
        .select_from(inv.join(rp, rp.c.id == inv.c.resource_provider_id)
                     .join(rc, rc.c.id == inv.c.resource_class_id))
        .order_by(rp.c.name, rc.c.name)).all()
    return [ProviderTotal(uuid, name, gen, rc_name, total, reserved, float(ratio),
                          used.get((rp_id, rc_id), 0))
            for rp_id, uuid, name, gen, rc_id, rc_name, total, reserved, ratio in rows]
