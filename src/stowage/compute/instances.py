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
from stowage.errors import Conflict, NotFound
from stowage.timeutil import utcnow

__all__ = ["Instance", "UnexpectedTaskState", "create", "get", "update", "soft_delete",
           "list_instances", "add_fault", "latest_faults", "save_request_spec",
           "request_spec", "ANY"]

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
    metadata: dict[str, str] = field(default_factory=dict)
    networks: Any = None
    config_drive: str | None = None
    display_description: str | None = None
    locked: bool = False
    progress: int | None = None
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


def _from_row(row: Any) -> Instance:
    mapping = row._mapping
    values = {name: mapping[name] for name in _COLUMNS}
    return Instance(deleted=bool(mapping["deleted"]), **values)


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
    query = sa.select(_I).where(_I.c.uuid == uuid)
    if not read_deleted:
        query = query.where(_I.c.deleted == 0)
    if project_id is not None:
        query = query.where(_I.c.project_id == project_id)
    row = conn.execute(query).first()
    if row is None:
        raise NotFound(f"Instance {uuid} could not be found.")
    return _from_row(row)


def update(conn: Connection, uuid: str, expected_task_state: Any = ANY,
           expected_vm_state: Any = ANY, **values: Any) -> Instance:
    """Change columns if the instance is still in the expected state; returns the new record.

    `expected_task_state` may be a value or a tuple of accepted values (None included).
    """
    query = _I.update().where(_I.c.uuid == uuid, _I.c.deleted == 0)
    query = _expect(query, _I.c.task_state, expected_task_state)
    query = _expect(query, _I.c.vm_state, expected_vm_state)
    result = conn.execute(query.values(updated_at=utcnow(), **values))
    if result.rowcount != 1:
        current = get(conn, uuid)
        raise UnexpectedTaskState(
            f"Instance {uuid} is in vm_state {current.vm_state}, task_state "
            f"{current.task_state}; expected {_shown(expected_vm_state)}/"
            f"{_shown(expected_task_state)}.")
    return get(conn, uuid)


def _expect(query: Any, column: Any, expected: Any) -> Any:
    if expected is ANY:
        return query
    accepted = expected if isinstance(expected, tuple) else (expected,)
    values = [v for v in accepted if v is not None]
    clause = column.in_(values) if values else sa.false()
    if None in accepted:
        clause = sa.or_(clause, column.is_(None))
    return query.where(clause)


def _shown(expected: Any) -> str:
    return "any" if expected is ANY else str(expected)


def soft_delete(conn: Connection, uuid: str) -> None:
    now = utcnow()
    conn.execute(_I.update().where(_I.c.uuid == uuid, _I.c.deleted == 0).values(
        deleted=_I.c.id, deleted_at=now, terminated_at=now, vm_state="deleted",
        task_state=None, power_state=0, updated_at=now))


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


def request_spec(conn: Connection, uuid: str) -> dict[str, Any]:
    rs = t.request_specs
    spec = conn.execute(sa.select(rs.c.spec).where(rs.c.instance_uuid == uuid)).scalar()
    if spec is None:
        raise NotFound(f"RequestSpec for instance {uuid} could not be found.")
    return dict(spec)
