"""Cells v2: where each compute host and each server keeps its records.

The API database holds the mappings (and flavors, request specs, groups,
quotas, aggregates, key pairs, Placement, ...); each cell's database holds
its hosts' services and nodes and its servers with their migrations,
actions, faults, tags, ports rows and journal (`tables.CELL_TABLES`)::

    cell_mappings      name, uuid, database_connection ("@api": the API database)
    host_mappings      host -> cell     written when a host's agent registers, or by
                                        `stowage manage cell discover-hosts`
    instance_mappings  server -> cell   written with the server, moved by a
                                        cross-cell move

A cell database carries the whole schema (one Alembic history for all);
only its cell tables are used. `Cells` keeps one handle per cell database.
A deployment whose cells all keep their records in one database never
reads a mapping to find a server's database: there is only one place it
can be (`Cells.db_of_instance`).
"""

from __future__ import annotations

import datetime
import threading
import time
import uuid as uuidlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.compute import tables as t
from stowage.config import ComputeSettings
from stowage.db import Database, schema
from stowage.db.engine import API, CELL
from stowage.db.statements import Sql
from stowage.errors import Conflict, NotFound
from stowage.timeutil import utcnow

__all__ = ["CellMapping", "Cells", "CELL0", "CELL1", "SAME_DATABASE", "BESIDE", "bootstrap",
           "bootstrap_with", "map_host", "unmap_host", "map_instance", "move_instance",
           "queue_for_delete", "mapped_in", "mapping_of", "hosts_of", "InstanceMapping",
           "create_cell", "delete_cell", "list_cells"]

# Where servers that could not be scheduled are kept (no host is ever in it).
CELL0 = "cell0"
CELL1 = "cell1"
# Seconds a process trusts the cell mappings it read.
REFRESH = 30.0
# A cell whose records live in the API database itself.
SAME_DATABASE = "@api"

_C, _H, _IM = t.cell_mappings, t.host_mappings, t.instance_mappings
# Read several times per operation (API request, conductor, scheduler): as SQL text, which
# skips Core's statement building (db/statements.py).
_CELL_OF_INSTANCE = Sql("SELECT cell_id FROM instance_mappings WHERE instance_uuid = :uuid")


@dataclass(frozen=True)
class CellMapping:
    id: int
    uuid: str
    name: str
    database_connection: str
    disabled: bool


def _mapping(row: sa.Row[tuple[object, ...]]) -> CellMapping:
    m = row._mapping
    return CellMapping(int(m["id"]), str(m["uuid"]), str(m["name"]),
                       str(m["database_connection"]), bool(m["disabled"]))


def list_cells(conn: Connection) -> list[CellMapping]:
    return [_mapping(row) for row in conn.execute(sa.select(_C).order_by(_C.c.name))]


class Cells:
    """The cells of one deployment: their mappings (re-read when asked for one not
    known yet) and one database handle per cell, opened when first needed."""

    def __init__(self, api: Database) -> None:
        self.api = api.view(API)
        self._lock = threading.Lock()
        self._cells: list[CellMapping] = []
        self._read_at = 0.0
        self._handles: dict[str, Database] = {}

    # --- the cells --------------------------------------------------------------
    def all(self) -> list[CellMapping]:
        """The cells by name, re-read every `REFRESH` seconds: a cell an operator creates
        (`stowage manage cell create`) is found without a restart."""
        if not self._cells or time.monotonic() - self._read_at > REFRESH:
            self.reload()
        return list(self._cells)

    def reload(self) -> list[CellMapping]:
        """Read the mappings again; a cell whose database moved gets a new handle."""
        with self.api.read() as conn:
            found = list_cells(conn)
        stale: list[Database] = []
        with self._lock:
            self._read_at = time.monotonic()
            where = {c.uuid: c.database_connection for c in found}
            for cell in self._cells:
                if where.get(cell.uuid) != cell.database_connection:
                    handle = self._handles.pop(cell.uuid, None)
                    if handle is not None and handle.engine is not self.api.engine:
                        stale.append(handle)
            self._cells = found
        for handle in stale:
            handle.dispose()
        return list(found)

    def by_id(self, cell_id: int) -> CellMapping:
        return self._find(lambda cell: cell.id == cell_id, str(cell_id))

    def by_uuid(self, cell_uuid: str) -> CellMapping:
        return self._find(lambda cell: cell.uuid == cell_uuid, cell_uuid)

    def by_name(self, name: str) -> CellMapping:
        return self._find(lambda cell: cell.name == name, name)

    def _find(self, match: Callable[[CellMapping], bool], named: str) -> CellMapping:
        """The cell `match` picks, read again before giving up (it may be new)."""
        for attempt in (self.all, self.reload):
            for cell in attempt():
                if match(cell):
                    return cell
        raise NotFound(f"Cell {named} could not be found.")

    def default(self) -> CellMapping:
        """Where a host that names no cell belongs, and where the API writes a new
        server: cell1, else the first cell by name that can have hosts."""
        cells = self.compute_cells()
        if not cells:
            raise NotFound("This deployment has no cell; run `stowage manage db upgrade`.")
        return next((c for c in cells if c.name == CELL1), cells[0])

    def cell0(self) -> CellMapping | None:
        return next((c for c in self.all() if c.name == CELL0), None)

    def compute_cells(self) -> list[CellMapping]:
        """The cells that can have hosts: all but cell0."""
        return [c for c in self.all() if c.name != CELL0]

    def only_compute_cell(self) -> CellMapping | None:
        """The one cell with hosts, when there is one only: where every server being built
        or moved is (a server in cell0 is neither)."""
        cells = self.compute_cells()
        return cells[0] if len(cells) == 1 else None

    def one_database(self) -> Database | None:
        """The database every cell keeps its records in, when they all share one: a
        server's database is then known without reading its mapping."""
        cells = self.all()
        if len({c.database_connection for c in cells}) == 1:
            return self.database(cells[0])
        return None

    def database(self, cell: CellMapping) -> Database:
        """The cell's database, as a CELL handle (opened once per process)."""
        handle = self._handles.get(cell.uuid)
        if handle is not None:
            return handle
        with self._lock:
            handle = self._handles.get(cell.uuid)
            if handle is None:
                handle = (self.api if cell.database_connection == SAME_DATABASE
                          else Database(cell.database_connection)).view(CELL)
                self._handles[cell.uuid] = handle
        return handle

    def location(self, cell: CellMapping) -> str | None:
        """Where the cell keeps its records, password masked; None: the API database."""
        if cell.database_connection == SAME_DATABASE:
            return None
        return self.database(cell).engine.url.render_as_string(hide_password=True)

    def databases(self) -> list[tuple[CellMapping, Database]]:
        return [(cell, self.database(cell)) for cell in self.all()]

    def distinct(self, cells: list[CellMapping] | None = None
                 ) -> list[tuple[list[CellMapping], Database]]:
        """Each database once with the cells that keep their records in it (cells may
        share one): what a scatter-gather read visits."""
        found: dict[str, tuple[list[CellMapping], Database]] = {}
        for cell in self.all() if cells is None else cells:
            entry = found.setdefault(cell.database_connection, ([], self.database(cell)))
            entry[0].append(cell)
        return list(found.values())

    def dispose(self) -> None:
        with self._lock:
            handles, self._handles = list(self._handles.values()), {}
        for handle in handles:
            if handle.engine is not self.api.engine:
                handle.dispose()

    # --- hosts and servers --------------------------------------------------------
    def of_host(self, host: str) -> CellMapping | None:
        with self.api.read() as conn:
            cell_id = conn.execute(sa.select(_H.c.cell_id).where(_H.c.host == host)).scalar()
        return None if cell_id is None else self.by_id(int(cell_id))

    def of_instance(self, instance_uuid: str) -> CellMapping:
        """The cell the server's mapping names (read every time: moves change it);
        NotFound when no cell holds it."""
        with self.api.read() as conn:
            cell_id = _CELL_OF_INSTANCE.scalar(conn, uuid=instance_uuid)
        if cell_id is None:
            raise NotFound(f"Instance {instance_uuid} could not be found.")
        return self.by_id(int(cell_id))

    def db_of_instance(self, instance_uuid: str) -> Database:
        shared = self.one_database()
        if shared is not None:
            return shared
        return self.database(self.of_instance(instance_uuid))


def map_host(conn: Connection, host: str, cell: CellMapping) -> bool:
    """Map `host` to `cell`; False when it already was (to it). A host mapped to another
    cell is a Conflict: moving a host between cells moves nothing of its servers."""
    found = conn.execute(sa.select(_H.c.cell_id).where(_H.c.host == host)).scalar()
    if found == cell.id:
        return False
    if found is not None:
        raise Conflict(f"Host {host} is already mapped to another cell.")
    conn.execute(_H.insert().values(host=host, cell_id=cell.id, created_at=utcnow()))
    return True


def unmap_host(conn: Connection, host: str) -> None:
    """The host's service was deleted: a new one of that name may register anywhere."""
    conn.execute(_H.delete().where(_H.c.host == host))


def map_instance(conn: Connection, instance_uuid: str, cell: CellMapping, project_id: str,
                 user_id: str | None) -> None:
    conn.execute(_IM.insert().values(instance_uuid=instance_uuid, cell_id=cell.id,
                                     project_id=project_id, user_id=user_id,
                                     created_at=utcnow()))


def queue_for_delete(conn: Connection, instance_uuid: str, queued: bool = True) -> None:
    """A delete was accepted (`queued` False: os-restore undid a soft delete)."""
    conn.execute(_IM.update().where(_IM.c.instance_uuid == instance_uuid)
                 .values(queued_for_delete=queued, updated_at=utcnow()))


@dataclass(frozen=True)
class InstanceMapping:
    instance_uuid: str
    project_id: str
    user_id: str | None
    created_at: datetime.datetime
    queued_for_delete: bool


def mapping_of(conn: Connection, instance_uuid: str) -> InstanceMapping | None:
    row = conn.execute(sa.select(_IM.c.instance_uuid, _IM.c.project_id, _IM.c.user_id,
                                 _IM.c.created_at, _IM.c.queued_for_delete)
                       .where(_IM.c.instance_uuid == instance_uuid)).first()
    return None if row is None else InstanceMapping(
        str(row.instance_uuid), str(row.project_id), row.user_id, row.created_at,
        bool(row.queued_for_delete))


def hosts_of(conn: Connection, cell: CellMapping) -> list[str]:
    return [str(h) for h in conn.execute(sa.select(_H.c.host).where(
        _H.c.cell_id == cell.id).order_by(_H.c.host)).scalars()]


def mapped_in(conn: Connection, cell: CellMapping, project_id: str | None
              ) -> list[sa.Row[tuple[object, ...]]]:
    """The live servers mapped to `cell` (of one project, when given), newest first:
    what a listing shows of a cell whose database does not answer."""
    query = sa.select(_IM.c.instance_uuid, _IM.c.project_id, _IM.c.user_id,
                      _IM.c.created_at).where(_IM.c.cell_id == cell.id,
                                              _IM.c.queued_for_delete == sa.false())
    if project_id is not None:
        query = query.where(_IM.c.project_id == project_id)
    return list(conn.execute(query.order_by(_IM.c.created_at.desc(), _IM.c.id.desc())))


def move_instance(conn: Connection, instance_uuid: str, cell: CellMapping) -> None:
    """Point the server's mapping at `cell` (a build carried or buried, a cross-cell move)."""
    conn.execute(_IM.update().where(_IM.c.instance_uuid == instance_uuid)
                 .values(cell_id=cell.id, updated_at=utcnow()))


def delete_cell(conn: Connection, name: str, force: bool = False) -> CellMapping:
    """Remove a cell's mapping. Refused while hosts are mapped to it (`force` unmaps
    them) or servers are: the records in its database would be lost to the API."""
    row = conn.execute(sa.select(_C).where(_C.c.name == name)).first()
    if row is None:
        raise NotFound(f"Cell {name} could not be found.")
    cell = _mapping(row)
    servers = conn.execute(sa.select(sa.func.count()).select_from(_IM).where(
        _IM.c.cell_id == cell.id)).scalar_one()
    if servers:
        raise Conflict(f"Cell {name} still holds {servers} server(s); delete them first.")
    hosts = conn.execute(sa.select(sa.func.count()).select_from(_H).where(
        _H.c.cell_id == cell.id)).scalar_one()
    if hosts and not force:
        raise Conflict(f"Cell {name} still has {hosts} host(s) mapped to it; stop their "
                       "agents and delete it with --force to unmap them.")
    conn.execute(_H.delete().where(_H.c.cell_id == cell.id))
    conn.execute(_C.delete().where(_C.c.id == cell.id))
    return cell


def create_cell(conn: Connection, name: str, database_connection: str) -> CellMapping:
    if conn.execute(sa.select(_C.c.id).where(_C.c.name == name)).first() is not None:
        raise Conflict(f"Cell {name} already exists.")
    conn.execute(_C.insert().values(uuid=str(uuidlib.uuid4()), name=name,
                                    database_connection=database_connection,
                                    disabled=False, created_at=utcnow()))
    row = conn.execute(sa.select(_C).where(_C.c.name == name)).one()
    return _mapping(row)


def bootstrap(api: Database, cell1_database: str = "", cell0_database: str = "") -> Cells:
    """The deployment's cells, cell1 and cell0 made on a fresh API database (cell0 is
    added to one from before it), every cell database at the schema's head. An API
    database that already holds hosts or servers (a deployment from before cells) gets
    both cells in itself, its rows mapped to cell1."""
    api = api.view(API)
    with api.write() as conn:
        found = list_cells(conn)
        legacy = not found and _has_compute_rows(conn)
        if not found:
            url = SAME_DATABASE if legacy else _cell_url(api, CELL1, cell1_database)
            cell1 = create_cell(conn, CELL1, url)
            if legacy:
                _map_legacy(conn, cell1)
        if not any(cell.name == CELL0 for cell in found):
            create_cell(conn, CELL0, SAME_DATABASE if legacy
                        else _cell_url(api, CELL0, cell0_database))
    cells = Cells(api)
    upgraded: set[str] = set()
    for cell, database in cells.databases():
        if cell.database_connection not in (SAME_DATABASE, *upgraded):
            schema.upgrade(database)
            upgraded.add(cell.database_connection)
    return cells


def bootstrap_with(api: Database, settings: ComputeSettings) -> Cells:
    """`bootstrap` where `[compute] cell1_database` and `cell0_database` say."""
    return bootstrap(api, settings.cell1_database, settings.cell0_database)


# `[compute] cell1_database` asking for a SQLite file beside a SQLite API database.
BESIDE = "beside"


def _cell_url(api: Database, name: str, setting: str) -> str:
    """A new cell's database, as `[compute] cell1_database` (`cell0_database`) says
    (config.py): by default a file beside a SQLite API database's file, else the API
    database itself."""
    url = sa.make_url(api.url)
    in_a_file = url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:")
    if setting == BESIDE and not in_a_file:
        raise ValueError(f"{name}_database = 'beside' needs a SQLite API database in a file")
    if setting not in ("", BESIDE) or not in_a_file:
        return setting or SAME_DATABASE
    path = Path(str(url.database))
    cell_file = path.with_name(f"{path.stem}_{name}{path.suffix}")
    cell_url = url.set(database=str(cell_file)).render_as_string(hide_password=False)
    if cell_file.exists() and _holds_compute_rows(cell_url):
        # The API file was deleted and its cell file left: its servers and hosts would
        # come back without their allocations, ports or mappings.
        raise ValueError(
            f"{cell_file} holds the servers or hosts of an earlier deployment whose API "
            f"database {path} is gone; to start over, remove it with `stowage manage db "
            f"reset --yes --database {api.url}` (or delete it)")
    return cell_url


def _holds_compute_rows(url: str) -> bool:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return (sa.inspect(conn).has_table(t.instances.name)
                    and _has_compute_rows(conn))
    finally:
        engine.dispose()


def _has_compute_rows(conn: Connection) -> bool:
    return any(conn.execute(sa.select(table.c.id).limit(1)).first() is not None
               for table in (t.instances, t.services))


def _map_legacy(conn: Connection, cell: CellMapping) -> None:
    """Map the hosts and servers a pre-cells deployment has: all in `cell`."""
    s, i = t.services, t.instances
    for host in conn.execute(sa.select(s.c.host).distinct().where(
            s.c.binary == "nova-compute", s.c.deleted == 0)).scalars():
        map_host(conn, str(host), cell)
    for row in conn.execute(sa.select(i.c.uuid, i.c.project_id, i.c.user_id)).all():
        map_instance(conn, row.uuid, cell, row.project_id, row.user_id)
