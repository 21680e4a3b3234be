"""Instance records: create, read, list, state changes guarded by the expected task_state.

Every state change names the task_state it expects to find, as Nova's
`instance.save(expected_task_state=...)` does: two operations racing on one
instance cannot both win, the loser gets `UnexpectedTaskState` (a 409).
Deleting soft-deletes (`deleted` = id) so that migrations, actions and faults
still resolve the instance afterwards.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.compute import tables as t
from stowage.compute.records import Columns
from stowage.db.statements import Sql
from stowage.errors import Conflict, NotFound
from stowage.timeutil import utcnow

__all__ = ["Instance", "UnexpectedTaskState", "create", "get", "update", "save",
           "task_state", "lock", "save_lock", "soft_delete", "list_instances", "add_fault",
           "latest_faults", "save_request_spec", "request_spec", "ANY", "RECORD", "from_raw"]

_I = t.instances
ANY = object()  # expected_task_state that accepts whatever is there


class UnexpectedTaskState(Conflict):
    pass


@dataclass
class Instance:
    uuid: str
    project_id: str
    user_id: str
    display_name: str
    flavor: dict[str, Any]
    vm_state: str
    hostname: str = ""
    task_state: str | None = None
    power_state: int = 0
    host: str | None = None
    node: str | None = None
    availability_zone: str | None = None
    old_flavor: dict[str, Any] | None = None
    new_flavor: dict[str, Any] | None = None
    image_ref: str | None = None
    volume_backed: bool = False
    key_name: str | None = None
    key_data: str | None = None
    access_ip_v4: str | None = None
    access_ip_v6: str | None = None
    auto_disk_config: bool = False
    user_data: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    networks: Any = None
    config_drive: str | None = None
    display_description: str | None = None
    locked: bool = False
    locked_by: str | None = None
    locked_reason: str | None = None
    progress: int | None = None
    system_metadata: dict[str, Any] | None = None
    reservation_id: str = ""
    launch_index: int = 0
    launched_at: datetime.datetime | None = None
    terminated_at: datetime.datetime | None = None
    created_at: datetime.datetime | None = None
    updated_at: datetime.datetime | None = None
    deleted_at: datetime.datetime | None = None
    deleted: bool = False
    id: int | None = None


_COLUMNS = tuple(f.name for f in fields(Instance) if f.name not in ("deleted",))
# Reads and writes of one instance run on every step of every operation and on
# every GET /servers/{id}: hand-written SQL, typed as Core would type it.
_RECORD = RECORD = Columns(_I, (*_COLUMNS, "deleted"))
_SELECT = f"SELECT {_RECORD.select_list} FROM instances WHERE uuid = :uuid"
_GET = {(deleted, project): Sql(_SELECT + ("" if deleted else " AND deleted = 0")
                                + (" AND project_id = :project_id" if project else ""))
        for deleted in (False, True) for project in (False, True)}
_TASK_STATE = Sql("SELECT task_state FROM instances WHERE uuid = :uuid AND deleted = 0")
_SAVES: dict[tuple[Any, ...], Sql] = {}


def _from_row(row: Any) -> Instance:
    mapping = row._mapping
    values = {name: mapping[name] for name in _COLUMNS}
    return Instance(deleted=bool(mapping["deleted"]), **values)


def from_raw(conn: Connection, row: Sequence[Any]) -> Instance:
    """An instance from a raw row that starts with `RECORD`'s columns."""
    values = _RECORD.load(conn, row[:len(_RECORD.names)])
    values["deleted"] = bool(values["deleted"])
    return Instance(**values)


def create(conn: Connection, inst: Instance) -> Instance:
    now = utcnow()
    values = {name: getattr(inst, name) for name in _COLUMNS if name != "id"}
    values.update(created_at=now, updated_at=None, deleted=0)
    inst.id = int(conn.execute(_I.insert().values(**values)).inserted_primary_key[0])  # type: ignore[index]
    inst.created_at = now
    return inst


def get(conn: Connection, uuid: str, read_deleted: bool = False,
        project_id: str | None = None) -> Instance:
    """The instance; NotFound when missing, deleted (unless asked) or in another project."""
    row = _GET[read_deleted, project_id is not None].first(conn, uuid=uuid,
                                                           project_id=project_id)
    if row is None:
        raise NotFound(f"Instance {uuid} could not be found.")
    return from_raw(conn, row)


def lock(conn: Connection, uuid: str) -> None:
    """Hold the live instance's row to the commit, for a read-modify-write of its
    metadata or tags (PostgreSQL and MySQL lock it; SQLite's writers are serialised).

    Also the first statement of a transaction that writes a migration before its
    instance: every transaction takes the instance's row before its migrations'
    (a delete soft-deletes the migrations after the instance), or two of them
    wait for each other until the database kills one as a deadlock victim."""
    # SELECT id FROM instances WHERE uuid = :uuid AND deleted = 0 FOR UPDATE
    conn.execute(sa.select(_I.c.id).where(_I.c.uuid == uuid, _I.c.deleted == 0)
                 .with_for_update()).first()


def task_state(conn: Connection, uuid: str) -> str | None:
    """The live instance's task_state; NotFound when it is missing or deleted."""
    row = _TASK_STATE.first(conn, uuid=uuid)
    if row is None:
        raise NotFound(f"Instance {uuid} could not be found.")
    return None if row[0] is None else str(row[0])


def update(conn: Connection, uuid: str, expected_task_state: Any = ANY,
           expected_vm_state: Any = ANY, **values: Any) -> Instance:
    """Change columns if the instance is still in the expected state; returns the new record.

    `expected_task_state` may be a value or a tuple of accepted values (None included).
    """
    save(conn, uuid, expected_task_state, expected_vm_state, **values)
    return get(conn, uuid)


def save(conn: Connection, uuid: str, expected_task_state: Any = ANY,
         expected_vm_state: Any = ANY, **values: Any) -> None:
    """`update` without reading the record back (Nova's `instance.save()`)."""
    expect_task, task_params = _expected("task_state", expected_task_state)
    expect_vm, vm_params = _expected("vm_state", expected_vm_state)
    names = tuple(sorted(values))
    key = (names, expect_task, expect_vm)
    statement = _SAVES.get(key)
    if statement is None:
        # UPDATE instances SET <names>, updated_at = :updated_at
        #  WHERE uuid = :uuid AND deleted = 0 [AND (task_state IN :task_state_in
        #  OR task_state IS NULL)] [AND (vm_state ...)]
        sets = ", ".join(f"{name} = :{name}" for name in (*names, "updated_at"))
        statement = _SAVES[key] = Sql(f"UPDATE instances SET {sets} WHERE uuid = :uuid "
                                      f"AND deleted = 0{expect_task}{expect_vm}")
    params = _RECORD.dump(conn, {**values, "updated_at": utcnow()})
    if statement.run(conn, uuid=uuid, **params, **task_params, **vm_params) != 1:
        current = get(conn, uuid)
        raise UnexpectedTaskState(
            f"Instance {uuid} is in vm_state {current.vm_state}, task_state "
            f"{current.task_state}; expected {_shown(expected_vm_state)}/"
            f"{_shown(expected_task_state)}.")


def _expected(column: str, expected: Any) -> tuple[str, dict[str, Any]]:
    """The WHERE clause accepting `expected` values of `column`, and its parameters."""
    if expected is ANY:
        return "", {}
    accepted = expected if isinstance(expected, tuple) else (expected,)
    values = [v for v in accepted if v is not None]
    clauses = [f"{column} IN :{column}_in"] if values else []
    if None in accepted:
        clauses.append(f"{column} IS NULL")
    return f" AND ({' OR '.join(clauses) or '1 = 0'})", {f"{column}_in": values} if values else {}


def _shown(expected: Any) -> str:
    return "any" if expected is ANY else str(expected)


def save_lock(conn: Connection, uuid: str, expected: tuple[bool, str | None],
              locked: bool, locked_by: str | None, locked_reason: str | None) -> None:
    """Lock or unlock if (locked, locked_by) is still `expected`; Conflict otherwise.

    A compare-and-swap, so of two concurrent lock changes one wins and the
    other learns it lost (the API's lock and unlock, Nova's `instance.save()`).
    """
    was_locked, was_by = expected
    by = _I.c.locked_by.is_(None) if was_by is None else _I.c.locked_by == was_by
    done = conn.execute(_I.update().where(
        _I.c.uuid == uuid, _I.c.deleted == 0, _I.c.locked == was_locked, by).values(
        locked=locked, locked_by=locked_by, locked_reason=locked_reason,
        updated_at=utcnow()))
    if done.rowcount != 1:
        raise Conflict(f"Instance {uuid} was locked or unlocked meanwhile.")


def soft_delete(conn: Connection, uuid: str) -> None:
    """Mark the instance deleted; its tags go with it, as Nova's instance_destroy drops them,
    and its migrations are soft-deleted with it, as there (an evacuation `done` then owns
    nothing: the delete dropped its allocation first, `migrations.awaiting_source_cleanup`)."""
    now = utcnow()
    conn.execute(_I.update().where(_I.c.uuid == uuid, _I.c.deleted == 0).values(
        deleted=_I.c.id, deleted_at=now, terminated_at=now, vm_state="deleted",
        task_state=None, power_state=0, updated_at=now))
    conn.execute(t.tags.delete().where(t.tags.c.resource_id == uuid))
    m = t.migrations
    # UPDATE migrations SET deleted = id, updated_at = :now
    #  WHERE instance_uuid = :uuid AND deleted = 0
    conn.execute(m.update().where(m.c.instance_uuid == uuid, m.c.deleted == 0)
                 .values(deleted=m.c.id, updated_at=now))


def list_instances(conn: Connection, filters: Mapping[str, Any] | None = None,
                   read_deleted: bool = False, host: str | None = None,
                   uuids: Sequence[str] | None = None) -> list[Instance]:
    """Instances matching exact-value column filters, oldest first."""
    query = sa.select(_I).order_by(_I.c.created_at, _I.c.id)
    if not read_deleted:
        query = query.where(_I.c.deleted == 0)
    for name, value in (filters or {}).items():
        column = _I.c[name]
        query = query.where(column.in_(value) if isinstance(value, (list, tuple))
                            else column == value)
    if host is not None:
        query = query.where(_I.c.host == host)
    if uuids is not None:
        query = query.where(_I.c.uuid.in_(list(uuids)))
    return [_from_row(row) for row in conn.execute(query)]


def add_fault(conn: Connection, uuid: str, code: int, message: str,
              details: str | None = None, host: str | None = None) -> None:
    conn.execute(t.instance_faults.insert().values(
        instance_uuid=uuid, code=code, message=message[:255], details=details, host=host,
        created_at=utcnow()))


def latest_faults(conn: Connection, uuids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """instance uuid -> its newest fault (code, message, details, created)."""
    f = t.instance_faults
    rows = conn.execute(sa.select(f).where(f.c.instance_uuid.in_(list(uuids)))
                        .order_by(f.c.created_at, f.c.id)).all()
    return {row.instance_uuid: {"code": row.code, "message": row.message,
                                "details": row.details, "created": row.created_at}
            for row in rows}


def save_request_spec(conn: Connection, uuid: str, spec: Mapping[str, Any]) -> None:
    rs = t.request_specs
    now = utcnow()
    done = conn.execute(rs.update().where(rs.c.instance_uuid == uuid)
                        .values(spec=dict(spec), updated_at=now))
    if done.rowcount == 0:
        conn.execute(rs.insert().values(instance_uuid=uuid, spec=dict(spec), created_at=now))


# Read by every build and move (the conductor, the ports' groups): SQL text, typed as Core.
_SPEC = Columns(t.request_specs, ("spec",))
_GET_SPEC = Sql("SELECT spec FROM request_specs WHERE instance_uuid = :uuid")


def request_spec(conn: Connection, uuid: str) -> dict[str, Any]:
    row = _GET_SPEC.first(conn, uuid=uuid)
    spec = None if row is None else _SPEC.load(conn, row)["spec"]
    if spec is None:
        raise NotFound(f"RequestSpec for instance {uuid} could not be found.")
    return dict(spec)
