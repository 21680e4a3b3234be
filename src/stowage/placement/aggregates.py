"""Aggregates: named (by uuid) groups of providers, e.g. those sharing a storage pool.

An aggregate exists as soon as some provider names it; nothing validates
that the uuid means anything elsewhere. Setting a provider's aggregates bumps
its generation from microversion 1.19 only, as upstream.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.placement import bulk, changes
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


def _aggregate_ids(conn: Connection, agg_uuids: Iterable[str]) -> dict[str, int]:
    # SELECT uuid, id FROM placement_aggregates WHERE uuid IN (:chunk), chunk by chunk
    rows = bulk.rows_in(conn, lambda part: sa.select(_AGG.c.uuid, _AGG.c.id)
                        .where(_AGG.c.uuid.in_(part)), agg_uuids)
    return {row.uuid: int(row.id) for row in rows}


def _ensure_aggregates(conn: Connection, agg_uuids: Sequence[str]) -> dict[str, int]:
    """Ids of the aggregates, creating the rows of those first mentioned now.

    One executemany insert for all missing rows; when a concurrent writer
    created some of them first (unique violation), insert one by one instead,
    each in its own savepoint, and take theirs.
    """
    ids = _aggregate_ids(conn, agg_uuids)
    missing = [agg_uuid for agg_uuid in agg_uuids if agg_uuid not in ids]
    if not missing:
        return ids
    try:
        with conn.begin_nested():
            conn.execute(_AGG.insert(), [{"uuid": agg_uuid} for agg_uuid in missing])
    except sa.exc.IntegrityError:
        for agg_uuid in missing:
            try:
                with conn.begin_nested():
                    conn.execute(_AGG.insert().values(uuid=agg_uuid))
            except sa.exc.IntegrityError:  # another writer created it first; use theirs
                pass
    ids.update(_aggregate_ids(conn, missing))
    return ids


def set_aggregates(conn: Connection, provider: Provider, agg_uuids: Sequence[str], *,
                   bump_generation: bool) -> int:
    """Make the provider's aggregates exactly `agg_uuids`; returns its generation.

    With `bump_generation` (1.19+) the generation is compare-and-swapped against
    the one in `provider`, raising Conflict when it moved. The work is linear
    in the number of uuids: set lookups, chunked selects and deletes, and one
    executemany per insert (see bulk).
    """
    generation = provider.generation
    if bump_generation:  # first, so that a concurrent writer fails before touching rows
        generation = increment_generation(conn, provider.id, provider.generation)
    wanted = list(dict.fromkeys(agg_uuids))
    keep = set(wanted)
    have = _links(conn, provider.id)
    gone = [agg_id for agg_uuid, agg_id in have.items() if agg_uuid not in keep]
    # DELETE FROM resource_provider_aggregates
    # WHERE resource_provider_id = :id AND aggregate_id IN (:chunk), chunk by chunk
    bulk.delete_in(conn, lambda part: _RP_AGG.delete().where(
        _RP_AGG.c.resource_provider_id == provider.id, _RP_AGG.c.aggregate_id.in_(part)), gone)
    added = [agg_uuid for agg_uuid in wanted if agg_uuid not in have]
    if added:
        ids = _ensure_aggregates(conn, added)
        conn.execute(_RP_AGG.insert(), [{"resource_provider_id": provider.id,
                                         "aggregate_id": ids[agg_uuid]} for agg_uuid in added])
    if not bump_generation:  # increment_generation logs the change otherwise
        changes.record(conn, [provider.id])
    return generation
