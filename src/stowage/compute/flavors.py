"""Flavors: create, read, list, describe and delete them, their extra specs and access lists.

Who sees what follows Nova: an admin sees every flavor; anyone else sees
public flavors plus the private ones their project was given access to, and
a flavor they cannot see does not exist for them (404, never 403). Deleting a
flavor soft-deletes its row (`deleted = id`) so that its name and id can be
reused while the row stays for instances built from it.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.compute import extra_specs as specs_rules
from stowage.compute import tables as t
from stowage.compute.records import Columns
from stowage.context import RequestContext
from stowage.db.statements import Sql
from stowage.errors import Conflict, Invalid, NotFound
from stowage.timeutil import utcnow as _now

__all__ = ["Flavor", "NewFlavor", "ListQuery", "SORT_KEYS", "create", "get", "list_flavors",
           "delete", "set_description", "extra_specs", "extra_spec", "set_extra_specs",
           "delete_extra_spec", "access_list", "add_access", "remove_access", "snapshot"]

_F = t.flavors
_ES = t.flavor_extra_specs
_FP = t.flavor_projects

# Nova's accepted `sort_key` values (the flavor columns, plus its vcpu_weight).
SORT_KEYS = ("created_at", "description", "disabled", "ephemeral_gb", "flavorid", "id",
             "is_public", "memory_mb", "name", "root_gb", "rxtx_factor", "swap",
             "updated_at", "vcpu_weight", "vcpus")



@dataclass
class Flavor:
    id: int
    flavorid: str
    name: str
    memory_mb: int
    vcpus: int
    root_gb: int
    ephemeral_gb: int
    swap: int
    rxtx_factor: float
    is_public: bool
    disabled: bool
    description: str | None
    created_at: datetime.datetime
    updated_at: datetime.datetime | None
    extra_specs: dict[str, str] = field(default_factory=dict)

    def sort_value(self, key: str) -> Any:
        value = None if key == "vcpu_weight" else getattr(self, key)
        # None sorts first, as NULL does on MySQL; the internal id breaks ties.
        return (value is not None, value if value is not None else 0, self.id)


@dataclass(frozen=True)
class NewFlavor:
    name: str
    memory_mb: int
    vcpus: int
    root_gb: int
    flavorid: str | None = None
    ephemeral_gb: int = 0
    swap: int = 0
    rxtx_factor: float = 1.0
    is_public: bool = True
    description: str | None = None


@dataclass(frozen=True)
class ListQuery:
    # True: public (plus the caller's private ones); False: private only; None: all.
    is_public: bool | None = True
    min_memory_mb: int | None = None
    min_root_gb: int | None = None
    sort_key: str = "flavorid"
    sort_dir: str = "asc"
    limit: int | None = None
    marker: str | None = None


def _row_to_flavor(row: Any) -> Flavor:
    return Flavor(id=row.id, flavorid=row.flavorid, name=row.name, memory_mb=row.memory_mb,
                  vcpus=row.vcpus, root_gb=row.root_gb, ephemeral_gb=row.ephemeral_gb,
                  swap=row.swap, rxtx_factor=row.rxtx_factor, is_public=bool(row.is_public),
                  disabled=bool(row.disabled), description=row.description,
                  created_at=row.created_at, updated_at=row.updated_at)


def _visible_to(ctx: RequestContext) -> sa.ColumnElement[bool]:
    # is_public OR EXISTS (SELECT 1 FROM flavor_projects
    #                      WHERE flavor_id = flavors.id AND project_id = :project)
    has_access = sa.exists().where(_FP.c.flavor_id == _F.c.id,
                                   _FP.c.project_id == (ctx.project_id or ""))
    return sa.or_(_F.c.is_public == sa.true(), has_access)


def _load_specs(conn: Connection, flavors: Sequence[Flavor]) -> None:
    by_id = {f.id: f for f in flavors}
    if not by_id:
        return
    rows = conn.execute(sa.select(_ES.c.flavor_id, _ES.c.key, _ES.c.value)
                        .where(_ES.c.flavor_id.in_(sorted(by_id))))
    for flavor_id, key, value in rows:
        by_id[flavor_id].extra_specs[key] = value


def _find(conn: Connection, flavorid: str, ctx: RequestContext | None) -> Flavor:
    """The live flavor `flavorid` as `ctx` may see it (None: as the system)."""
    query = sa.select(_F).where(_F.c.flavorid == flavorid, _F.c.deleted == 0)
    if ctx is not None and not ctx.is_admin:
        query = query.where(_visible_to(ctx))
    row = conn.execute(query).first()
    if row is None:
        raise NotFound(f"Flavor {flavorid} could not be found.")
    return _row_to_flavor(row)


# `get` runs on every resize and server create: hand-written, per dialect (`key` is
# reserved on MySQL).
_RECORD = Columns(_F, ("id", "flavorid", "name", "memory_mb", "vcpus", "root_gb",
                       "ephemeral_gb", "swap", "rxtx_factor", "is_public", "disabled",
                       "description", "created_at", "updated_at"))
_GET: dict[tuple[str, bool], tuple[Sql, Sql]] = {}


def _get_sql(dialect: Any, visible_only: bool) -> tuple[Sql, Sql]:
    found = _GET.get((dialect.name, visible_only))
    if found is None:
        quote = dialect.identifier_preparer.quote
        # SELECT ... FROM flavors WHERE flavorid = :flavorid AND deleted = 0
        #   [AND (is_public = :public OR EXISTS (SELECT 1 FROM flavor_projects p
        #         WHERE p.flavor_id = flavors.id AND p.project_id = :project))]
        visible = (" AND (is_public = :public OR EXISTS (SELECT 1 FROM flavor_projects p "
                   "WHERE p.flavor_id = flavors.id AND p.project_id = :project))")
        found = _GET[(dialect.name, visible_only)] = (
            Sql(f"SELECT {_RECORD.select_list} FROM flavors WHERE flavorid = :flavorid "
                f"AND deleted = 0{visible if visible_only else ''}"),
            Sql(f"SELECT {quote('key')}, value FROM flavor_extra_specs "
                "WHERE flavor_id = :flavor_id"))
    return found


def get(conn: Connection, flavorid: str, ctx: RequestContext | None = None) -> Flavor:
    """The live flavor with its extra specs, as `ctx` may see it (None: as the system)."""
    visible_only = ctx is not None and not ctx.is_admin
    flavor_sql, specs_sql = _get_sql(conn.dialect, visible_only)
    row = flavor_sql.first(conn, flavorid=flavorid,
                           public=_RECORD.dump(conn, {"is_public": True})["is_public"],
                           project=(ctx.project_id or "") if ctx is not None else "")
    if row is None:
        raise NotFound(f"Flavor {flavorid} could not be found.")
    values = _RECORD.load(conn, row)
    flavor = Flavor(**{**values, "is_public": bool(values["is_public"]),
                       "disabled": bool(values["disabled"])})
    flavor.extra_specs = {str(k): str(v) for k, v in specs_sql.rows(conn, flavor_id=flavor.id)}
    return flavor


def _check_unique(conn: Connection, name: str, flavorid: str) -> None:
    live = sa.select(_F.c.id).where(_F.c.deleted == 0)
    if conn.execute(live.where(_F.c.name == name)).first() is not None:
        raise Conflict(f"Flavor with name {name} already exists.")
    if conn.execute(live.where(_F.c.flavorid == flavorid)).first() is not None:
        raise Conflict(f"Flavor with ID {flavorid} already exists.")


def create(conn: Connection, new: NewFlavor) -> Flavor:
    flavorid = new.flavorid if new.flavorid is not None else str(uuid.uuid4())
    _check_unique(conn, new.name, flavorid)
    values = {"flavorid": flavorid, "name": new.name, "memory_mb": new.memory_mb,
              "vcpus": new.vcpus, "root_gb": new.root_gb, "ephemeral_gb": new.ephemeral_gb,
              "swap": new.swap, "rxtx_factor": new.rxtx_factor, "is_public": new.is_public,
              "disabled": False, "description": new.description, "created_at": _now(),
              "deleted": 0}
    try:
        conn.execute(_F.insert().values(**values))
    except sa.exc.IntegrityError:
        # A concurrent create won the unique (name|flavorid, deleted) race.
        raise Conflict(f"Flavor with ID {flavorid} or name {new.name} already exists.") \
            from None
    return get(conn, flavorid)


def _after_marker(flavors: list[Flavor], marker: Flavor, key: str, desc: bool) -> list[Flavor]:
    edge = marker.sort_value(key)
    if desc:
        return [f for f in flavors if f.sort_value(key) < edge]
    return [f for f in flavors if f.sort_value(key) > edge]


def list_flavors(conn: Connection, ctx: RequestContext, query: ListQuery) -> list[Flavor]:
    """Flavors `ctx` may list, filtered, sorted and paged by `query`.

    Sorting happens here rather than in SQL so that every backend orders
    strings the same way; flavor tables hold dozens of rows, not millions.
    """
    if query.sort_key not in SORT_KEYS:
        raise Invalid(f"Invalid sort_key: {query.sort_key}")
    select = sa.select(_F).where(_F.c.deleted == 0)
    if not ctx.is_admin:
        select = select.where(_F.c.disabled == sa.false())
    if query.is_public is True:
        select = select.where(_visible_to(ctx))
    elif query.is_public is False:
        select = select.where(_F.c.is_public == sa.false())
    if query.min_memory_mb is not None:
        select = select.where(_F.c.memory_mb >= query.min_memory_mb)
    if query.min_root_gb is not None:
        select = select.where(_F.c.root_gb >= query.min_root_gb)
    found = [_row_to_flavor(row) for row in conn.execute(select)]
    desc = query.sort_dir == "desc"
    found.sort(key=lambda f: f.sort_value(query.sort_key), reverse=desc)
    if query.marker is not None:
        try:
            marker = _find(conn, query.marker, ctx)
        except NotFound:
            raise Invalid(f"marker [{query.marker}] not found") from None
        found = _after_marker(found, marker, query.sort_key, desc)
    if query.limit is not None:
        found = found[:query.limit]
    _load_specs(conn, found)
    return found


def delete(conn: Connection, flavorid: str) -> None:
    flavor = _find(conn, flavorid, None)
    conn.execute(_ES.delete().where(_ES.c.flavor_id == flavor.id))
    conn.execute(_FP.delete().where(_FP.c.flavor_id == flavor.id))
    conn.execute(_F.update().where(_F.c.id == flavor.id)
                 .values(deleted=flavor.id, updated_at=_now()))


def set_description(conn: Connection, flavorid: str, description: str | None) -> Flavor:
    flavor = _find(conn, flavorid, None)
    conn.execute(_F.update().where(_F.c.id == flavor.id)
                 .values(description=description, updated_at=_now()))
    return get(conn, flavorid)


def extra_specs(conn: Connection, flavorid: str, ctx: RequestContext) -> dict[str, str]:
    return get(conn, flavorid, ctx).extra_specs


def extra_spec(conn: Connection, flavorid: str, key: str, ctx: RequestContext) -> str:
    specs = extra_specs(conn, flavorid, ctx)
    if key not in specs:
        raise NotFound(f"Flavor {flavorid} has no extra specs with key {key}.")
    return specs[key]


def set_extra_specs(conn: Connection, flavorid: str, specs: Mapping[str, str]) -> None:
    """Add or overwrite the given keys; other keys stay as they are."""
    specs_rules.validate(specs)
    flavor = get(conn, flavorid)
    now = _now()
    for key, value in specs.items():
        if key in flavor.extra_specs:
            conn.execute(_ES.update().where(_ES.c.flavor_id == flavor.id, _ES.c.key == key)
                         .values(value=value, updated_at=now))
        else:
            conn.execute(_ES.insert().values(flavor_id=flavor.id, key=key, value=value,
                                             created_at=now))


def delete_extra_spec(conn: Connection, flavorid: str, key: str) -> None:
    flavor = _find(conn, flavorid, None)
    gone = conn.execute(_ES.delete().where(_ES.c.flavor_id == flavor.id, _ES.c.key == key))
    if gone.rowcount == 0:
        raise NotFound(f"Flavor {flavorid} has no extra specs with key {key}.")


def access_list(conn: Connection, flavorid: str, ctx: RequestContext) -> list[str]:
    """Projects with access to a private flavor, in the order they were added."""
    flavor = _find(conn, flavorid, ctx)
    if flavor.is_public:
        raise NotFound("Access list not available for public flavors.")
    return _projects(conn, flavor.id)


def _projects(conn: Connection, flavor_id: int) -> list[str]:
    return list(conn.execute(sa.select(_FP.c.project_id).where(_FP.c.flavor_id == flavor_id)
                             .order_by(_FP.c.id)).scalars())


def add_access(conn: Connection, flavorid: str, project_id: str,
               refuse_public: bool = True) -> list[str]:
    flavor = _find(conn, flavorid, None)
    if refuse_public and flavor.is_public:
        raise Conflict("Can not add access to a public flavor.")
    if project_id in _projects(conn, flavor.id):
        raise Conflict(f"Flavor access already exists for flavor {flavorid} and project "
                       f"{project_id} combination.")
    conn.execute(_FP.insert().values(flavor_id=flavor.id, project_id=project_id,
                                     created_at=_now()))
    return _projects(conn, flavor.id)


def remove_access(conn: Connection, flavorid: str, project_id: str) -> list[str]:
    flavor = _find(conn, flavorid, None)
    gone = conn.execute(_FP.delete().where(_FP.c.flavor_id == flavor.id,
                                           _FP.c.project_id == project_id))
    if gone.rowcount == 0:
        raise NotFound(f"Flavor access not found for {flavorid} / {project_id} combination.")
    return _projects(conn, flavor.id)


def snapshot(flavor: Flavor) -> dict[str, Any]:
    """The flavor as an instance keeps it (JSON): unchanged by later flavor edits or deletes."""
    return {"id": flavor.id, "flavorid": flavor.flavorid, "name": flavor.name,
            "vcpus": flavor.vcpus, "memory_mb": flavor.memory_mb, "root_gb": flavor.root_gb,
            "ephemeral_gb": flavor.ephemeral_gb, "swap": flavor.swap,
            "rxtx_factor": flavor.rxtx_factor, "is_public": flavor.is_public,
            "disabled": flavor.disabled, "description": flavor.description,
            "extra_specs": dict(flavor.extra_specs)}
