"""Image records: create, read, list, patch and delete them (their data: image/data.py).

Visibility follows Glance with no image members: an admin sees everything;
anyone else sees public and community images and every image their project
owns. Only the owner (or an admin) may change or delete an image, and a
protected image cannot be deleted at all. A created image is `queued` until
its data is uploaded (image/data.py), then `active`.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.context import RequestContext
from stowage.errors import Conflict, Forbidden, Invalid, NotFound
from stowage.image import tables as t
from stowage.timeutil import utcnow as _now

__all__ = ["Image", "ListQuery", "CORE_FIELDS", "MAX_DB_INT", "create", "get", "list_images",
           "lock", "update", "replace_properties", "exists", "delete", "record_upload",
           "set_status"]

_I = t.images
# As Glance's database layer: min_disk and min_ram are 4-byte INTEGER columns.
MAX_DB_INT = 2**31 - 1

# Attributes with a column of their own; every other key is an extra property.
CORE_FIELDS = ("name", "visibility", "min_disk", "min_ram", "disk_format",
               "container_format", "protected", "tags")



@dataclass
class Image:
    id: str
    name: str | None
    status: str
    visibility: str
    owner: str | None
    min_disk: int
    min_ram: int
    disk_format: str | None
    container_format: str | None
    size: int | None
    protected: bool
    tags: list[str]
    properties: dict[str, str]
    created_at: datetime.datetime
    updated_at: datetime.datetime | None
    # What Glance shows of the stored data (image/data.py); None until it is uploaded.
    checksum: str | None = None
    os_hash_algo: str | None = None
    os_hash_value: str | None = None


@dataclass(frozen=True)
class ListQuery:
    name: str | None = None
    ids: Sequence[str] | None = None
    status: str | None = None
    visibility: str | None = None
    limit: int | None = None
    marker: str | None = None
    # Filters only Nova's image proxy uses: min_ram/min_disk at least this much, changed
    # (updated, or created if never updated) at or after this time, extra properties equal.
    min_ram: int | None = None
    min_disk: int | None = None
    changes_since: datetime.datetime | None = None
    properties: Mapping[str, str] | None = None


def _to_image(row: Any) -> Image:
    return Image(id=row.id, name=row.name, status=row.status, visibility=row.visibility,
                 owner=row.owner, min_disk=row.min_disk, min_ram=row.min_ram,
                 disk_format=row.disk_format, container_format=row.container_format,
                 size=row.size, protected=bool(row.protected), tags=list(row.tags or []),
                 properties=dict(row.properties or {}), created_at=row.created_at,
                 updated_at=row.updated_at, checksum=row.checksum,
                 os_hash_algo=row.os_hash_algo, os_hash_value=row.os_hash_value)


def _visible(ctx: RequestContext) -> sa.ColumnElement[bool]:
    # visibility IN ('public', 'community') OR owner = :project
    return sa.or_(_I.c.visibility.in_(["public", "community"]),
                  _I.c.owner == (ctx.project_id or ""))


def get(conn: Connection, image_id: str, ctx: RequestContext) -> Image:
    query = sa.select(_I).where(_I.c.id == image_id)
    if not ctx.is_admin:
        query = query.where(_visible(ctx))
    row = conn.execute(query).first()
    if row is None:
        raise NotFound(f"No image found with ID {image_id}")
    return _to_image(row)


def _check_db_ints(values: Mapping[str, Any]) -> None:
    """Glance's check before a write: a value its INTEGER columns cannot hold is a 400."""
    for name in ("min_disk", "min_ram"):
        value = values.get(name)
        if value and value > MAX_DB_INT:
            raise Invalid(f"'{name}' value out of range, must not exceed {MAX_DB_INT}.")


def create(conn: Connection, ctx: RequestContext, values: Mapping[str, Any]) -> Image:
    """A new `queued` image (no data yet: image/data.py) owned by the caller's project;
    `values` are already checked."""
    _check_db_ints(values)
    image_id = str(values.get("id") or uuid.uuid4())
    if conn.execute(sa.select(_I.c.id).where(_I.c.id == image_id)).first() is not None:
        raise Conflict(f"Image with identifier {image_id} already exists!")
    extra = {k: v for k, v in values.items() if k not in (*CORE_FIELDS, "id", "owner")}
    conn.execute(_I.insert().values(
        id=image_id, name=values.get("name"), status="queued",
        visibility=values.get("visibility") or "shared",
        owner=values.get("owner") or ctx.project_id,
        min_disk=values.get("min_disk", 0), min_ram=values.get("min_ram", 0),
        disk_format=values.get("disk_format"), container_format=values.get("container_format"),
        size=None, protected=bool(values.get("protected", False)),
        tags=sorted(set(values.get("tags", []))), properties=extra, created_at=_now()))
    return get(conn, image_id, ctx)


def _listing_filter(ctx: RequestContext, visibility: str | None) -> sa.ColumnElement[bool]:
    """Glance's default listing hides other projects' community images."""
    owned = _I.c.owner == (ctx.project_id or "")
    if visibility is not None:
        wanted = _I.c.visibility == visibility
        if ctx.is_admin or visibility in ("public", "community"):
            return wanted
        return sa.and_(wanted, owned)
    if ctx.is_admin:
        return sa.true()
    return sa.or_(_I.c.visibility == "public", owned)


def _filtered(select: sa.Select[Any], query: ListQuery) -> sa.Select[Any]:
    if query.name is not None:
        select = select.where(_I.c.name == query.name)
    if query.ids is not None:
        select = select.where(_I.c.id.in_(list(query.ids)))
    if query.status is not None:
        select = select.where(_I.c.status == query.status)
    for column, least in ((_I.c.min_ram, query.min_ram), (_I.c.min_disk, query.min_disk)):
        if least is not None:
            # Beyond what the column holds nothing matches (and no backend takes the bound).
            select = select.where(column >= least if least <= MAX_DB_INT else sa.false())
    if query.changes_since is not None:
        changed = sa.func.coalesce(_I.c.updated_at, _I.c.created_at)
        select = select.where(changed >= query.changes_since)
    return select


def list_images(conn: Connection, ctx: RequestContext, query: ListQuery) -> list[Image]:
    """Newest first (created_at, then id, descending), as Glance sorts by default.

    Property filters run here rather than in SQL: the JSON column is queried
    differently by each backend, and the listing is sorted in Python anyway."""
    select = _filtered(sa.select(_I).where(_listing_filter(ctx, query.visibility)), query)
    found = [_to_image(r) for r in conn.execute(select)]
    if query.properties:
        wanted = dict(query.properties)
        found = [i for i in found
                 if all(i.properties.get(k) == v for k, v in wanted.items())]
    found.sort(key=lambda i: (i.created_at, i.id), reverse=True)
    if query.marker is not None:
        marker = get(conn, query.marker, ctx)
        found = [i for i in found if (i.created_at, i.id) < (marker.created_at, marker.id)]
    return found[:query.limit] if query.limit is not None else found


def _owned(conn: Connection, image_id: str, ctx: RequestContext) -> Image:
    image = get(conn, image_id, ctx)
    if not ctx.is_admin and image.owner != ctx.project_id:
        raise Forbidden(f"You are not permitted to modify image {image_id}.")
    return image


def lock(conn: Connection, image_id: str) -> None:
    """Hold the image's row to the commit, for a read-modify-write of its properties
    (PostgreSQL and MySQL lock it; SQLite's writers are serialised)."""
    # SELECT id FROM images WHERE id = :id FOR UPDATE
    conn.execute(sa.select(_I.c.id).where(_I.c.id == image_id).with_for_update()).first()


def update(conn: Connection, image_id: str, ctx: RequestContext,
           changes: Iterable[tuple[str, str, Any]]) -> Image:
    """Apply (op, attribute, value) changes: add, replace or remove, all or none."""
    image = _owned(conn, image_id, ctx)
    core = {name: getattr(image, name) for name in CORE_FIELDS}
    core["owner"] = image.owner
    extra = dict(image.properties)
    for op, name, value in changes:
        if name == "owner" and op != "remove":
            if value != image.owner and not ctx.is_admin:
                raise Forbidden("You are not permitted to modify 'owner' on this image.")
            core["owner"] = value
        elif name in (*CORE_FIELDS, "owner"):
            if op == "remove":
                raise Forbidden(f"Properties {name} cannot be removed.")
            core[name] = sorted(set(value)) if name == "tags" else value
        elif op == "remove" or (op == "replace" and name not in extra):
            if name not in extra:
                raise Conflict(f"Property {name} does not exist.")
            del extra[name]
        else:
            extra[name] = value
    _check_db_ints(core)
    conn.execute(_I.update().where(_I.c.id == image.id)
                 .values(**core, properties=extra, updated_at=_now()))
    return get(conn, image_id, ctx)


def replace_properties(conn: Connection, image_id: str, ctx: RequestContext,
                       properties: Mapping[str, str]) -> Image:
    """Make `properties` the image's whole set of extra properties (Nova's image
    metadata API writes with Glance's purge_props); only its owner or an admin may."""
    image = _owned(conn, image_id, ctx)
    conn.execute(_I.update().where(_I.c.id == image.id)
                 .values(properties=dict(properties), updated_at=_now()))
    return get(conn, image_id, ctx)


def exists(conn: Connection, image_id: str) -> bool:
    return conn.execute(sa.select(_I.c.id).where(_I.c.id == image_id)).first() is not None


def delete(conn: Connection, image_id: str, ctx: RequestContext) -> None:
    image = _owned(conn, image_id, ctx)
    if image.protected:
        raise Forbidden(f"Image {image_id} is protected and cannot be deleted.")
    conn.execute(_I.delete().where(_I.c.id == image.id))


def record_upload(conn: Connection, image_id: str, ctx: RequestContext, size: int) -> None:
    """Make a queued image active with `size` and no stored data (the shelve and
    cross-cell snapshot paths of the simulated compute; uploads go through data.py)."""
    image = _owned(conn, image_id, ctx)
    conn.execute(_I.update().where(_I.c.id == image.id)
                 .values(size=size, status="active", updated_at=_now()))


def set_status(conn: Connection, image_id: str, status: str) -> None:
    """Set the status the caller has checked (deactivate/reactivate), the row locked."""
    conn.execute(_I.update().where(_I.c.id == image_id)
                 .values(status=status, updated_at=_now()))
