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
A deployment with a single cell never reads a mapping to find a server's
cell: there is only one place it can be.
"""

from __future__ import annotations

import threading
import uuid as uuidlib
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.compute import tables as t
from stowage.db import Database, schema
from stowage.db.engine import API, CELL
from stowage.errors import Conflict, NotFound
from stowage.timeutil import utcnow

__all__ = ["CellMapping", "Cells", "CELL1", "SAME_DATABASE", "BESIDE", "bootstrap", "map_host",
           "map_instance", "create_cell", "list_cells"]

CELL1 = "cell1"
# A cell whose records live in the API database itself.
SAME_DATABASE = "@api"

_C, _H, _IM = t.cell_mappings, t.host_mappings, t.instance_mappings


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
        self._handles: dict[str, Database] = {}

    # --- the cells --------------------------------------------------------------
    def all(self) -> list[CellMapping]:
        if not self._cells:
            self.reload()
        return list(self._cells)

    def reload(self) -> list[CellMapping]:
        with self.api.read() as conn:
            found = list_cells(conn)
        with self._lock:
            self._cells = found
        return list(found)

    def by_id(self, cell_id: int) -> CellMapping:
        for attempt in (self.all, self.reload):
            for cell in attempt():
                if cell.id == cell_id:
                    return cell
        raise NotFound(f"Cell {cell_id} could not be found.")

    def default(self) -> CellMapping:
        """Where a host that names no cell belongs: cell1, else the first cell by name."""
        cells = self.all()
        if not cells:
            raise NotFound("This deployment has no cell; run `stowage manage db upgrade`.")
        return next((c for c in cells if c.name == CELL1), cells[0])

    def single(self) -> CellMapping | None:
        """The only cell, when there is just one (no mapping needs reading then)."""
        cells = self.all()
        return cells[0] if len(cells) == 1 else None

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
        """The server's cell; NotFound when no cell holds it."""
        single = self.single()
        if single is not None:
            return single
        with self.api.read() as conn:
            cell_id = conn.execute(sa.select(_IM.c.cell_id).where(
                _IM.c.instance_uuid == instance_uuid)).scalar()
        if cell_id is None:
            raise NotFound(f"Instance {instance_uuid} could not be found.")
        return self.by_id(int(cell_id))

    def db_of_instance(self, instance_uuid: str) -> Database:
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


def map_instance(conn: Connection, instance_uuid: str, cell: CellMapping, project_id: str,
                 user_id: str | None) -> None:
    conn.execute(_IM.insert().values(instance_uuid=instance_uuid, cell_id=cell.id,
                                     project_id=project_id, user_id=user_id,
                                     created_at=utcnow()))


def create_cell(conn: Connection, name: str, database_connection: str) -> CellMapping:
    if conn.execute(sa.select(_C.c.id).where(_C.c.name == name)).first() is not None:
        raise Conflict(f"Cell {name} already exists.")
    conn.execute(_C.insert().values(uuid=str(uuidlib.uuid4()), name=name,
                                    database_connection=database_connection,
                                    disabled=False, created_at=utcnow()))
    row = conn.execute(sa.select(_C).where(_C.c.name == name)).one()
    return _mapping(row)


def bootstrap(api: Database, cell1_database: str = "") -> Cells:
    """The deployment's cells, cell1 made on a fresh API database, every cell database
    at the schema's head. An API database that already holds hosts or servers (a
    deployment from before cells) gets its cell1 in itself, its rows mapped to it."""
    api = api.view(API)
    with api.write() as conn:
        if not list_cells(conn):
            legacy = _has_compute_rows(conn)
            url = SAME_DATABASE if legacy else _cell1_url(api, cell1_database)
            cell1 = create_cell(conn, CELL1, url)
            if legacy:
                _map_legacy(conn, cell1)
    cells = Cells(api)
    for cell, database in cells.databases():
        if cell.database_connection != SAME_DATABASE:
            schema.upgrade(database)
    return cells


# `[compute] cell1_database` asking for a SQLite file beside a SQLite API database.
BESIDE = "beside"


def _cell1_url(api: Database, setting: str) -> str:
    """cell1's database, as `[compute] cell1_database` says (config.py): by default a
    file beside a SQLite API database's file, else the API database itself."""
    url = sa.make_url(api.url)
    in_a_file = url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:")
    if setting == BESIDE and not in_a_file:
        raise ValueError("cell1_database = 'beside' needs a SQLite API database in a file")
    if setting not in ("", BESIDE) or not in_a_file:
        return setting or SAME_DATABASE
    path = Path(str(url.database))
    cell_file = path.with_name(f"{path.stem}_{CELL1}{path.suffix}")
    return url.set(database=str(cell_file)).render_as_string(hide_password=False)


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
