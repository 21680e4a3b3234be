"""Aggregates: named (by uuid) groups of providers, e.g. those sharing a storage pool.

An aggregate exists as soon as some provider names it; nothing validates
that the uuid means anything elsewhere. Setting a provider's aggregates bumps
its generation from microversion 1.19 only, as upstream.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.placement import changes
from stowage.placement import tables as t
from stowage.placement.providers import Provider, increment_generation

__all__ = ["provider_aggregates", "set_aggregates"]

_AGG = t.aggregates
_RP_AGG = t.provider_aggregates


def _links(conn: Connection, provider_id: int) -> dict[str, int]:
    # SELECT a.uuid, a.id FROM placement_aggregates a
    # JOIN resource_provider_aggregates rpa ON rpa.aggregate_id = a.id
    # WHERE rpa.resource_provider_id = :provider_id ORDER BY a.id
    query = (sa.select(_AGG.c.uuid, _AGG.c.id)
             .join(_RP_AGG, _RP_AGG.c.aggregate_id == _AGG.c.id)
             .where(_RP_AGG.c.resource_provider_id == provider_id).order_by(_AGG.c.id))
    return {agg_uuid: agg_id for agg_uuid, agg_id in conn.execute(query)}


def provider_aggregates(conn: Connection, provider_id: int) -> list[str]:
    return list(_links(conn, provider_id))


def _ensure_aggregate(conn: Connection, agg_uuid: str) -> int:
    """The aggregate's id, creating the row on first mention."""
    query = sa.select(_AGG.c.id).where(_AGG.c.uuid == agg_uuid)
    found = conn.execute(query).scalar()
    if found is not None:
        return int(found)
    try:
        with conn.begin_nested():
            inserted = conn.execute(_AGG.insert().values(uuid=agg_uuid))
            return int(inserted.inserted_primary_key[0])  # type: ignore[index]
    except sa.exc.IntegrityError:  # another writer created it first; use theirs
        return int(conn.execute(query).scalar_one())


def set_aggregates(conn: Connection, provider: Provider, agg_uuids: Sequence[str], *,
                   bump_generation: bool) -> int:
    """Make the provider's aggregates exactly `agg_uuids`; returns its generation.

    With `bump_generation` (1.19+) the generation is compare-and-swapped against
    the one in `provider`, raising Conflict when it moved.
    """
    generation = provider.generation
    if bump_generation:  # first, so that a concurrent writer fails before touching rows
        generation = increment_generation(conn, provider.id, provider.generation)
    have = _links(conn, provider.id)
    gone = [agg_id for agg_uuid, agg_id in have.items() if agg_uuid not in set(agg_uuids)]
    if gone:
        conn.execute(_RP_AGG.delete().where(_RP_AGG.c.resource_provider_id == provider.id,
                                            _RP_AGG.c.aggregate_id.in_(gone)))
    for agg_uuid in dict.fromkeys(agg_uuids):
        if agg_uuid not in have:
            conn.execute(_RP_AGG.insert().values(resource_provider_id=provider.id,
                                                 aggregate_id=_ensure_aggregate(conn, agg_uuid)))
    if not bump_generation:  # increment_generation logs the change otherwise
        changes.record(conn, [provider.id])
    return generation
