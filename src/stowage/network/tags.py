"""Tags on Network records (extension `standard-attr-tag`): which records take them, and
reading and writing them.

A tag names its record by collection and id (`network_tags (resource,
resource_id, tag)`), so a new kind of record becomes taggable by one call,
`register(collection, table, load)`: `load(conn, ctx, id)` returns what the
policy rules see of the record (404 if the caller may not see it), `table`
is the record's table, whose `revision_number` every tag change bumps (as
Neutron's tags are standard attributes). The tag routes
(network/api/tags.py) and the `get_/create_/update_/delete_<collection>_tags`
rules (network/policy.py) exist for every collection in `COLLECTIONS`;
each record kind in it has registered below.

Every write bumps the record's revision first (`standard.lock`), which takes
its row lock: two writers of one record's tags run one after the other.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.context import RequestContext
from stowage.errors import DomainError
from stowage.network import errors as e
from stowage.network import (
    floating_ips,
    networks,
    ports,
    routers,
    security_groups,
    subnetpools,
    subnets,
)
from stowage.network import tables as t
from stowage.network.policy import TAGGED_COLLECTIONS
from stowage.network.standard import lock, try_insert

__all__ = ["Taggable", "register", "taggable", "of", "add", "replace", "remove", "clear",
           "forget", "put_new", "matches", "missing", "tag_missing", "COLLECTIONS", "FILTERS",
           "MAX_TAG_LEN", "TAG_NOT_FOUND"]

# Neutron's MAX_TAG_LEN (60 in older releases, 255 today).
MAX_TAG_LEN = 255
TAG_NOT_FOUND = "TagNotFound"
# Every collection Neutron tags that stowage serves or is about to.
COLLECTIONS = TAGGED_COLLECTIONS
FILTERS = ("tags", "tags-any", "not-tags", "not-tags-any")
_T = t.network_tags

Load = Callable[[Connection, RequestContext, str], Mapping[str, object]]


@dataclass(frozen=True)
class Taggable:
    table: sa.Table
    load: Load


_TAGGABLE: dict[str, Taggable] = {}


def register(collection: str, table: sa.Table, load: Load) -> None:
    """Make `collection`'s records taggable (see the module docstring)."""
    if collection not in COLLECTIONS:
        raise ValueError(f"{collection} has no tag routes")
    _TAGGABLE[collection] = Taggable(table, load)


def taggable(collection: str) -> Taggable | None:
    return _TAGGABLE.get(collection)


def of(conn: Connection, collection: str, ids: Sequence[str]) -> dict[str, list[str]]:
    """Each record's tags, sorted."""
    found: dict[str, list[str]] = {i: [] for i in ids}
    if not ids:
        return found
    rows = conn.execute(sa.select(_T.c.resource_id, _T.c.tag)
                        .where(_T.c.resource == collection,
                               _T.c.resource_id.in_(list(ids)))
                        .order_by(_T.c.resource_id, _T.c.tag))
    for row in rows:
        found[row.resource_id].append(row.tag)
    return found


def missing(collection: str, record_id: str) -> Callable[[], DomainError]:
    return lambda: e.not_found("TagResourceNotFound", f"Resource {collection} {record_id} "
                                                      "could not be found.")


def tag_missing(tag: str) -> DomainError:
    return e.not_found(TAG_NOT_FOUND, f"Tag {tag} could not be found.")


def _bump(conn: Connection, collection: str, record_id: str) -> None:
    lock(conn, _TAGGABLE[collection].table, record_id, None, missing(collection, record_id))


def add(conn: Connection, collection: str, record_id: str, tags: Iterable[str]) -> None:
    """Add tags the record lacks (one already there is no error)."""
    _bump(conn, collection, record_id)
    for tag in tags:
        try_insert(conn, _T, {"resource": collection, "resource_id": record_id, "tag": tag})


def put_new(conn: Connection, collection: str, record_id: str, tags: Sequence[str]) -> None:
    """Insert the tags, bumping nothing: a record being created, or `replace` after its bump."""
    for tag in dict.fromkeys(tags):
        conn.execute(_T.insert().values(resource=collection, resource_id=record_id, tag=tag))


def replace(conn: Connection, collection: str, record_id: str, tags: Sequence[str]) -> None:
    clear(conn, collection, record_id)
    put_new(conn, collection, record_id, tags)


def remove(conn: Connection, collection: str, record_id: str, tag: str) -> None:
    """Remove one tag; 404 TagNotFound if the record does not have it."""
    _bump(conn, collection, record_id)
    gone = conn.execute(_T.delete().where(_T.c.resource == collection,
                                          _T.c.resource_id == record_id, _T.c.tag == tag))
    if gone.rowcount == 0:
        raise tag_missing(tag)


def clear(conn: Connection, collection: str, record_id: str) -> None:
    _bump(conn, collection, record_id)
    forget(conn, collection, [record_id])


def forget(conn: Connection, collection: str, record_ids: Sequence[str]) -> None:
    """Drop the tags of deleted records (the delete's own transaction calls it)."""
    if record_ids:
        conn.execute(_T.delete().where(_T.c.resource == collection,
                                       _T.c.resource_id.in_(list(record_ids))))


def matches(tags: Sequence[str], filters: Mapping[str, Sequence[str]]) -> bool:
    """Neutron's tag filters: `tags` (all of), `tags-any` (one of), `not-tags` (not all
    of), `not-tags-any` (none of); each value is a comma-separated list, several values
    of one filter add up."""
    have = set(tags)

    def wanted(name: str) -> set[str]:
        return {tag for value in filters.get(name, ()) for tag in value.split(",") if tag}

    if "tags" in filters and not wanted("tags") <= have:
        return False
    if "tags-any" in filters and not wanted("tags-any") & have:
        return False
    if "not-tags" in filters and wanted("not-tags") and wanted("not-tags") <= have:
        return False
    return not ("not-tags-any" in filters and wanted("not-tags-any") & have)


def _network(conn: Connection, ctx: RequestContext, record_id: str) -> Mapping[str, Any]:
    return networks.target(networks.get(conn, ctx, record_id))


def _subnet(conn: Connection, ctx: RequestContext, record_id: str) -> Mapping[str, Any]:
    found = subnets.get(conn, ctx, record_id)
    return subnets.targets(conn, [found])[found.id]


def _port(conn: Connection, ctx: RequestContext, record_id: str) -> Mapping[str, Any]:
    return ports.target(ports.get(conn, ctx, record_id))


def _group(conn: Connection, ctx: RequestContext, record_id: str) -> Mapping[str, Any]:
    return security_groups.target(security_groups.get(conn, ctx, record_id))


register("networks", t.networks, _network)
register("subnets", t.subnets, _subnet)
register("ports", t.ports, _port)
register("security_groups", t.security_groups, _group)
register("subnetpools", t.subnetpools, lambda conn, ctx, record_id: subnetpools.target(
    subnetpools.get(conn, ctx, record_id)))
register("routers", t.routers, lambda conn, ctx, record_id: routers.target(
    routers.get(conn, ctx, record_id)))
register("floatingips", t.floatingips, lambda conn, ctx, record_id: floating_ips.target(
    floating_ips.get(conn, ctx, record_id)))
