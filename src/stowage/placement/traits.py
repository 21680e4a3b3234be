"""Traits: qualitative capabilities of providers (standard ones from os-traits, CUSTOM_ ones).

Standard traits are synced into the table at startup and cannot be deleted;
a trait still attached to a provider cannot be deleted either. Replacing a
provider's traits bumps its generation (only when the set actually changes,
as upstream).
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Row

from stowage.errors import Conflict, Invalid, NotFound
from stowage.placement import bulk
from stowage.placement import tables as t
from stowage.placement.providers import Provider, increment_generation
from stowage.timeutil import utcnow as _now

__all__ = ["TraitRow", "list_traits", "get_trait", "ensure_trait", "delete_trait",
           "provider_traits", "set_provider_traits", "is_custom"]

_TRAIT = t.traits
_RP_TRAIT = t.provider_traits

TraitRow = Row[tuple[int, str, datetime.datetime, datetime.datetime | None]]


def is_custom(name: str) -> bool:
    return name.startswith("CUSTOM_")


def _select() -> sa.Select[tuple[int, str, datetime.datetime, datetime.datetime | None]]:
    return sa.select(_TRAIT.c.id, _TRAIT.c.name, _TRAIT.c.created_at,
                     _TRAIT.c.updated_at).order_by(_TRAIT.c.name)


def list_traits(conn: Connection, *, name_in: Iterable[str] | None = None,
                prefix: str | None = None, associated: bool | None = None) -> list[TraitRow]:
    """Traits matching all given filters; `associated` means "on at least one provider".

    A long `name_in` (a client's list) is looked up chunk by chunk (see bulk).
    """
    query = _select()
    if prefix is not None:
        query = query.where(_TRAIT.c.name.startswith(prefix, autoescape=True))
    if associated is not None:
        # WHERE [NOT] EXISTS (SELECT 1 FROM resource_provider_traits WHERE trait_id = traits.id)
        linked = sa.exists().where(_RP_TRAIT.c.trait_id == _TRAIT.c.id)
        query = query.where(linked if associated else ~linked)
    if name_in is None:
        return list(conn.execute(query))
    rows = bulk.rows_in(conn, lambda part: query.where(_TRAIT.c.name.in_(part)), set(name_in))
    return sorted(rows, key=lambda row: row.name)


def get_trait(conn: Connection, name: str) -> TraitRow:
    row = conn.execute(_select().where(_TRAIT.c.name == name)).first()
    if row is None:
        raise NotFound(f"No such trait(s): {name}.")
    return row


def ensure_trait(conn: Connection, name: str) -> tuple[TraitRow, bool]:
    """The trait, created if missing; the flag says whether this call created it."""
    row = conn.execute(_select().where(_TRAIT.c.name == name)).first()
    if row is not None:
        return row, False
    try:
        with conn.begin_nested():
            conn.execute(_TRAIT.insert().values(name=name, created_at=_now()))
    except sa.exc.IntegrityError:  # created concurrently: theirs is as good as ours
        return get_trait(conn, name), False
    return get_trait(conn, name), True


def delete_trait(conn: Connection, name: str) -> None:
    row = get_trait(conn, name)
    if not is_custom(name):
        raise Invalid(f"Cannot delete standard trait {name}.")
    in_use = conn.execute(sa.select(_RP_TRAIT.c.trait_id)
                          .where(_RP_TRAIT.c.trait_id == row.id).limit(1)).first()
    if in_use is not None:
        raise Conflict(f"The trait {name} is in use by a resource provider.")
    conn.execute(_TRAIT.delete().where(_TRAIT.c.id == row.id))


def provider_traits(conn: Connection, provider_id: int) -> list[TraitRow]:
    # SELECT t.* FROM traits t JOIN resource_provider_traits rpt ON rpt.trait_id = t.id
    # WHERE rpt.resource_provider_id = :provider_id ORDER BY t.name
    query = _select().join(_RP_TRAIT, _RP_TRAIT.c.trait_id == _TRAIT.c.id).where(
        _RP_TRAIT.c.resource_provider_id == provider_id)
    return list(conn.execute(query))


def set_provider_traits(conn: Connection, provider: Provider,
                        names: Iterable[str]) -> tuple[list[TraitRow], int]:
    """Replace the provider's traits; returns them and the (possibly bumped) generation.

    Raises Invalid naming every unknown trait, and Conflict when the provider
    generation moved since `provider` was read.
    """
    wanted = set(names)
    rows = list_traits(conn, name_in=wanted)
    missing = wanted - {row.name for row in rows}
    if missing:
        raise Invalid(f"No such trait {', '.join(sorted(missing))}")
    want_ids = {row.id for row in rows}
    have_ids = set(conn.execute(sa.select(_RP_TRAIT.c.trait_id).where(
        _RP_TRAIT.c.resource_provider_id == provider.id)).scalars())
    if want_ids == have_ids:
        return rows, provider.generation
    generation = increment_generation(conn, provider.id, provider.generation)
    # DELETE FROM resource_provider_traits
    # WHERE resource_provider_id = :id AND trait_id IN (:chunk), chunk by chunk
    bulk.delete_in(conn, lambda part: _RP_TRAIT.delete().where(
        _RP_TRAIT.c.resource_provider_id == provider.id, _RP_TRAIT.c.trait_id.in_(part)),
        have_ids - want_ids)
    now = _now()
    added = [{"trait_id": trait_id, "resource_provider_id": provider.id, "created_at": now}
             for trait_id in sorted(want_ids - have_ids)]
    if added:
        conn.execute(_RP_TRAIT.insert(), added)
    return rows, generation
