"""A live server with two compute cells: cell1 and cell2 each in a throw-away database of
their own on the test's backend (cell0 where the deployment default puts it), and the
helpers the multi-cell tests share."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa

from stowage.compute import cells as cell_records
from stowage.compute import tables as t
from stowage.config import ComputeSettings
from stowage.db import Database, schema
from tests.dbs import migrated_database
from tests.functional.conftest import Cloud, LiveServer, serving
from tests.functional.servers import boot, flavor_id, image, server


@contextmanager
def serving_two_cells(backend: str, **overrides: Any) -> Iterator[LiveServer]:
    """cell2 created as an operator would (`overrides`: more settings, e.g. policy)."""
    with migrated_database(backend) as cell1_url, \
            migrated_database(backend) as cell2_url, \
            serving(backend, compute=ComputeSettings(cell1_database=cell1_url),
                    **overrides) as live:
        add_cell(live, "cell2", cell2_url)
        yield live


def add_cell(live: LiveServer, name: str, url: str) -> None:
    """A cell in `url` (its schema made first) that the running service knows at once."""
    assert live.cells is not None
    cell_db = Database(url)
    schema.upgrade(cell_db)
    cell_db.dispose()
    with live.cells.api.write() as conn:
        cell_records.create_cell(conn, name, url)
    live.cells.reload()


def cells_of(cloud: Cloud) -> cell_records.Cells:
    assert cloud.live.cells is not None
    return cloud.live.cells


def holders(cells: cell_records.Cells, server_id: str) -> list[str]:
    """The cells whose database has a row of the server, "(hidden)" after a hidden one."""
    found = []
    for members, db in cells.distinct():
        # A database cell0 shares (with cell1, on PostgreSQL/MySQL) is named for the other.
        name = next((c.name for c in members if c.name != cell_records.CELL0),
                    members[0].name)
        with db.view(None).read() as conn:
            rows = conn.execute(sa.select(t.instances.c.hidden).where(
                t.instances.c.uuid == server_id)).all()
        found += [f"{name}{' (hidden)' if row.hidden else ''}" for row in rows]
    return found


def boot_on(cloud: Cloud, host: str, name: str = "vm", flavor: str = "small") -> str:
    server_id = boot(cloud, name, flavor_id(cloud, flavor), image(cloud),
                     availability_zone=f"nova:{host}")
    assert server(cloud, server_id)["status"] == "ACTIVE"
    return server_id
