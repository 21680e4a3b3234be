"""Glance's metadata definitions: namespaces, resource types and their associations.

A namespace groups the objects, properties and tags (metadef_items.py) that
describe the metadata a kind of resource may carry (an image's `hw_*`
properties, a flavor's extra specs); Horizon reads them to offer
choices. As Glance's database layer decides who sees what: an admin sees
every namespace, anyone else the public ones and those their project owns;
a namespace one may not see is "not found". Policy (who may write: admins, by
default) is the API's to check (api_metadefs.py).

Resource types name the kinds of resource (`OS::Glance::Image`, ...). Glance
loads them with its shipped namespaces (`glance-manage db_load_metadefs`);
here `seed_resource_types` inserts the standard names when the service
starts, so that a new cloud lists them; an association to a resource type
not known yet creates it, as Glance's does.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
import sqlalchemy.exc
from sqlalchemy.engine import Connection

from stowage.context import RequestContext
from stowage.db import Database
from stowage.errors import Conflict, Forbidden, NotFound
from stowage.image import tables as t
from stowage.timeutil import utcnow

__all__ = ["Namespace", "Association", "STANDARD_RESOURCE_TYPES", "seed_resource_types",
           "not_found", "duplicate", "protected", "get", "get_for_update", "list_namespaces",
           "create", "update", "delete", "resource_types", "associations", "associate",
           "dissociate"]

_N = t.metadef_namespaces
_R = t.metadef_resource_types
_A = t.metadef_associations
_CHILDREN = (t.metadef_objects, t.metadef_properties, t.metadef_tags, _A)
# The resource types Glance's shipped namespaces name (glance/etc/metadefs).
STANDARD_RESOURCE_TYPES = ("OS::Glance::Image", "OS::Cinder::Volume", "OS::Nova::Flavor",
                           "OS::Nova::Aggregate", "OS::Nova::Server", "OS::Trove::Instance",
                           "OS::Cinder::Volumetype", "OS::Glance::Metadef")


@dataclass(frozen=True)
class Namespace:
    id: int
    namespace: str
    display_name: str | None
    description: str | None
    visibility: str
    protected: bool
    owner: str
    created_at: datetime.datetime
    updated_at: datetime.datetime | None


@dataclass(frozen=True)
class Association:
    name: str
    prefix: str | None
    properties_target: str | None
    created_at: datetime.datetime
    updated_at: datetime.datetime | None


def seed_resource_types(db: Database) -> None:
    """Insert the standard resource types a cloud does not have yet (idempotent; two
    services starting together may race: the loser's duplicate is ignored)."""
    try:
        with db.write() as conn:
            have = set(conn.execute(sa.select(_R.c.name)).scalars())
            now = utcnow()
            rows = [{"name": n, "protected": True, "created_at": now, "updated_at": now}
                    for n in STANDARD_RESOURCE_TYPES if n not in have]
            if rows:
                conn.execute(_R.insert(), rows)
    except sqlalchemy.exc.IntegrityError:
        pass


def not_found(name: str) -> NotFound:
    return NotFound(f"Metadata definition namespace={name} was not found.")


def _visible(ctx: RequestContext) -> sa.ColumnElement[bool]:
    if ctx.is_admin:
        return sa.true()
    return sa.or_(_N.c.visibility == "public", _N.c.owner == (ctx.project_id or ""))


def _namespace(row: Any) -> Namespace:
    return Namespace(row.id, row.namespace, row.display_name, row.description,
                     row.visibility, bool(row.protected), row.owner, row.created_at,
                     row.updated_at)


def get(conn: Connection, name: str, ctx: RequestContext) -> Namespace:
    row = conn.execute(sa.select(_N).where(_N.c.namespace == name, _visible(ctx))).first()
    if row is None:
        raise not_found(name)
    return _namespace(row)


def get_for_update(conn: Connection, name: str, ctx: RequestContext) -> Namespace:
    """The namespace, its row locked until the transaction ends (writers queue here)."""
    row = conn.execute(sa.select(_N).where(_N.c.namespace == name, _visible(ctx))
                       .with_for_update()).first()
    if row is None:
        raise not_found(name)
    return _namespace(row)


def list_namespaces(conn: Connection, ctx: RequestContext, *, visibility: str | None,
                    resource_types: Sequence[str], limit: int, marker: str | None,
                    sort_key: str, sort_dir: str) -> list[Namespace]:
    """One page, ordered by `sort_key` then id; `marker` is the last namespace seen."""
    query = sa.select(_N).where(_visible(ctx))
    if visibility:
        query = query.where(_N.c.visibility == visibility)
    if resource_types:
        linked = (sa.select(_A.c.namespace_id).join(_R, _R.c.id == _A.c.resource_type_id)
                  .where(_R.c.name.in_(resource_types)))
        query = query.where(_N.c.id.in_(linked))
    key, order = _N.c[sort_key], (sa.desc if sort_dir == "desc" else sa.asc)
    if marker is not None:
        last = get(conn, marker, ctx)
        value = getattr(last, sort_key)
        beyond = key < value if sort_dir == "desc" else key > value
        tie = _N.c.id < last.id if sort_dir == "desc" else _N.c.id > last.id
        query = query.where(sa.or_(beyond, sa.and_(key == value, tie)))
    query = query.order_by(order(key), order(_N.c.id)).limit(limit)
    return [_namespace(row) for row in conn.execute(query)]


def _taken(conn: Connection, name: str) -> bool:
    return conn.execute(sa.select(_N.c.id).where(_N.c.namespace == name)).first() is not None


def duplicate(name: str) -> Conflict:
    return Conflict(f"The metadata definition namespace={name} already exists.")


def create(conn: Connection, values: Mapping[str, Any], ctx: RequestContext) -> Namespace:
    name = values["namespace"]
    if _taken(conn, name):
        raise duplicate(name)
    now = utcnow()
    row: dict[str, Any] = {
           "namespace": name, "display_name": values.get("display_name"),
           "description": values.get("description"),
           "visibility": values.get("visibility") or "private",
           "protected": bool(values.get("protected", False)),
           "owner": values.get("owner") or ctx.project_id or "",
           "created_at": now, "updated_at": now}
    conn.execute(_N.insert().values(**row))
    new_id = conn.execute(sa.select(_N.c.id).where(_N.c.namespace == name)).scalar_one()
    return Namespace(id=int(new_id), **row)


def update(conn: Connection, ns: Namespace, values: Mapping[str, Any],
           ctx: RequestContext) -> Namespace:
    """Glance's PUT: every attribute from the body, absent ones back to their defaults
    (the owner: the caller's project)."""
    name = values.get("namespace") or ns.namespace
    if name != ns.namespace and _taken(conn, name):
        raise duplicate(name)
    row: dict[str, Any] = {
           "namespace": name, "display_name": values.get("display_name"),
           "description": values.get("description"),
           "visibility": values.get("visibility") or "private",
           "protected": bool(values.get("protected", False)),
           "owner": values.get("owner") or ctx.project_id or ns.owner,
           "updated_at": utcnow()}
    conn.execute(_N.update().where(_N.c.id == ns.id).values(**row))
    return Namespace(id=ns.id, created_at=ns.created_at, **row)


def protected(ns: Namespace) -> Forbidden:
    return Forbidden(f"Metadata definition namespace {ns.namespace} is protected and "
                     "cannot be deleted.")


def delete(conn: Connection, ns: Namespace) -> None:
    if ns.protected:
        raise protected(ns)
    for table in _CHILDREN:
        conn.execute(table.delete().where(table.c.namespace_id == ns.id))
    conn.execute(_N.delete().where(_N.c.id == ns.id))


def resource_types(conn: Connection) -> list[dict[str, Any]]:
    rows = conn.execute(sa.select(_R).order_by(_R.c.name))
    return [{"name": r.name, "created_at": r.created_at, "updated_at": r.updated_at}
            for r in rows]


def associations(conn: Connection, ns: Namespace) -> list[Association]:
    rows = conn.execute(sa.select(_A, _R.c.name).join(_R, _R.c.id == _A.c.resource_type_id)
                        .where(_A.c.namespace_id == ns.id).order_by(_R.c.name))
    return [Association(r.name, r.prefix, r.properties_target, r.created_at, r.updated_at)
            for r in rows]


def _association_missing(ns: Namespace, name: str) -> NotFound:
    return NotFound(f"The metadata definition resource-type association of resource-type="
                    f"{name} to namespace={ns.namespace}, was not found.")


def _resource_type_id(conn: Connection, name: str) -> int:
    """The resource type's id; Glance creates one it does not know (not protected)."""
    found = conn.execute(sa.select(_R.c.id).where(_R.c.name == name)).scalar()
    if found is None:
        now = utcnow()
        conn.execute(_R.insert().values(name=name, protected=False, created_at=now,
                                        updated_at=now))
        found = conn.execute(sa.select(_R.c.id).where(_R.c.name == name)).scalar_one()
    return int(found)


def associate(conn: Connection, ns: Namespace, name: str, prefix: str | None,
              properties_target: str | None) -> Association:
    type_id = _resource_type_id(conn, name)
    held = conn.execute(sa.select(_A.c.namespace_id).where(
        _A.c.namespace_id == ns.id, _A.c.resource_type_id == type_id)).first()
    if held is not None:
        raise Conflict(f"The metadata definition resource-type association of resource-type="
                       f"{name} to namespace={ns.namespace} already exists.")
    now = utcnow()
    conn.execute(_A.insert().values(namespace_id=ns.id, resource_type_id=type_id,
                                    prefix=prefix, properties_target=properties_target,
                                    created_at=now, updated_at=now))
    return Association(name, prefix, properties_target, now, now)


def dissociate(conn: Connection, ns: Namespace, name: str) -> None:
    found = conn.execute(sa.select(_R.c.id).where(_R.c.name == name)).scalar()
    if found is None:
        raise NotFound(f"The metadata definition resource-type with name={name}, was not "
                       "found.")
    held = conn.execute(sa.select(_A.c.namespace_id).where(
        _A.c.namespace_id == ns.id, _A.c.resource_type_id == found)).first()
    if held is None:
        raise _association_missing(ns, name)
    if ns.protected:
        raise Forbidden(f"Metadata definition resource-type-association {name} is protected "
                        "and cannot be deleted.")
    conn.execute(_A.delete().where(_A.c.namespace_id == ns.id, _A.c.resource_type_id == found))
