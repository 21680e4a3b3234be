"""Where a deployment's cell1 goes the first time the service starts (compute/cells.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from stowage.compute import cells, instances, services
from stowage.compute import tables as t
from stowage.db import Database, schema
from stowage.db.engine import API, CELL, LockOrderViolation
from stowage.errors import Conflict


def _api(tmp_path: Path, name: str = "api.db") -> Database:
    db = Database(f"sqlite:///{tmp_path / name}")
    schema.upgrade(db)
    return db


def test_a_sqlite_file_gets_its_cell_in_a_file_beside_it(tmp_path: Path) -> None:
    found = cells.bootstrap(_api(tmp_path))
    cell0, cell1 = found.all()
    assert (cell0.name, cell1.name) == (cells.CELL0, cells.CELL1)
    assert cell1.database_connection == f"sqlite:///{tmp_path / 'api_cell1.db'}"
    assert cell0.database_connection == f"sqlite:///{tmp_path / 'api_cell0.db'}"
    for cell in (cell0, cell1):  # upgraded to head with the API's
        assert schema.is_current(found.database(cell))
    assert found.default() == cell1 and found.compute_cells() == [cell1]
    assert found.one_database() is None
    found.dispose()


def test_a_deployment_from_before_cell0_gets_it_beside_its_api_database(
        tmp_path: Path) -> None:
    api = _api(tmp_path)
    with api.write() as conn:
        cells.create_cell(conn, cells.CELL1, cells.SAME_DATABASE)
    found = cells.bootstrap(api)
    assert [c.name for c in found.all()] == [cells.CELL0, cells.CELL1]
    assert found.cell0() is not None
    assert found.cell0().database_connection.endswith("api_cell0.db")  # type: ignore[union-attr]
    found.dispose()


def test_the_setting_names_the_cell_database(tmp_path: Path) -> None:
    shared = cells.bootstrap(_api(tmp_path, "a.db"), cells.SAME_DATABASE, cells.SAME_DATABASE)
    assert shared.default().database_connection == cells.SAME_DATABASE
    assert shared.database(shared.default()).engine is shared.api.engine
    assert shared.one_database() is not None  # no mapping read to find a server's
    own = f"sqlite:///{tmp_path / 'elsewhere.db'}"
    apart = cells.bootstrap(_api(tmp_path, "b.db"), own)
    assert apart.default().database_connection == own
    apart.dispose()


def test_beside_needs_a_sqlite_file() -> None:
    db = Database("sqlite://")
    schema.upgrade(db)
    with pytest.raises(ValueError, match="SQLite API database in a file"):
        cells.bootstrap(db, cells.BESIDE)


def test_a_deployment_from_before_cells_keeps_its_records_where_they_are(
        tmp_path: Path) -> None:
    api = _api(tmp_path)
    with api.write() as conn:
        services.ensure_service(conn, "host1", services.COMPUTE)
        instances.create(conn, instances.Instance(
            uuid="11111111-2222-3333-4444-555555555555", project_id="p", user_id="u",
            display_name="vm", flavor={}, vm_state="active", host="host1"))
    found = cells.bootstrap(api)
    cell1 = found.default()
    assert cell1.database_connection == cells.SAME_DATABASE
    cell0 = found.cell0()
    assert cell0 is not None and cell0.database_connection == cells.SAME_DATABASE
    assert found.of_host("host1") == cell1
    with api.read() as conn:
        mapped = conn.execute(sa.select(t.instance_mappings.c.instance_uuid,
                                        t.instance_mappings.c.cell_id)).all()
    assert [tuple(row) for row in mapped] == [("11111111-2222-3333-4444-555555555555",
                                               cell1.id)]
    # A second start changes nothing.
    assert cells.bootstrap(api).all() == [cell0, cell1]


def test_a_cell_holding_servers_or_hosts_is_not_deleted(tmp_path: Path) -> None:
    found = cells.bootstrap(_api(tmp_path), cells.SAME_DATABASE, cells.SAME_DATABASE)
    with found.api.write() as conn:
        cell2 = cells.create_cell(conn, "cell2", cells.SAME_DATABASE)
        cells.map_host(conn, "host9", cell2)
        cells.map_instance(conn, "11111111-2222-3333-4444-555555555555", cell2, "p", "u")
    with pytest.raises(Conflict, match="1 server"), found.api.write() as conn:
        cells.delete_cell(conn, "cell2", force=True)
    with found.api.write() as conn:
        cells.move_instance(conn, "11111111-2222-3333-4444-555555555555", found.default())
    with pytest.raises(Conflict, match="--force"), found.api.write() as conn:
        cells.delete_cell(conn, "cell2")
    with found.api.write() as conn:
        cells.delete_cell(conn, "cell2", force=True)
    assert [c.name for c in found.reload()] == [cells.CELL0, cells.CELL1]
    assert found.of_host("host9") is None
    assert found.of_instance("11111111-2222-3333-4444-555555555555") == found.default()


def test_a_host_is_never_moved_to_another_cell_silently(tmp_path: Path) -> None:
    found = cells.bootstrap(_api(tmp_path), cells.SAME_DATABASE)
    with found.api.write() as conn:
        other = cells.create_cell(conn, "cell2", cells.SAME_DATABASE)
        assert cells.map_host(conn, "host1", found.default()) is True
        assert cells.map_host(conn, "host1", found.default()) is False
    with pytest.raises(Conflict), found.api.write() as conn:
        cells.map_host(conn, "host1", other)


def test_the_lock_order_is_a_cells_then_the_apis(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Checked in the tests (db/roles.py): a cell's write inside the API's is refused."""
    monkeypatch.setattr(Database, "check_order", True)
    api = Database(f"sqlite:///{tmp_path / 'api.db'}").view(API)
    cell = Database(f"sqlite:///{tmp_path / 'cell.db'}").view(CELL)
    with cell.write() as conn, api.using(conn, write=True) as lent:
        lent.execute(sa.text("SELECT 1"))
    with pytest.raises(LockOrderViolation), api.write(), cell.write():
        pass
