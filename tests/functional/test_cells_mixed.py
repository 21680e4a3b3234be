"""Cells on different backends: the API database and cell1 on PostgreSQL or MySQL,
cell2 in a SQLite file (docs/cells.md: any database URL works per cell)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from stowage.compute import tables as t
from tests.conftest import BACKENDS
from tests.functional.conftest import Cloud, LiveServer, serving
from tests.functional.servers import (
    action,
    assert_invariants,
    boot,
    count_rows,
    flavor,
    flavor_amounts,
    flavor_id,
    held,
    image,
    server,
    settle,
)
from tests.functional.two_cells import add_cell

SMALL = flavor_amounts(1, 512, 5)


@pytest.fixture(scope="module", params=[b for b in BACKENDS if b != "sqlite"])
def live_stowage(request: pytest.FixtureRequest,
                 tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    cell2_url = f"sqlite:///{tmp_path_factory.mktemp('cell2') / 'cell2.db'}"
    with serving(request.param) as live:
        add_cell(live, "cell2", cell2_url)
        yield live


def test_a_sqlite_cell_beside_a_server_database(cloud: Cloud) -> None:
    nodes = {name: cloud.add_host(name, vcpus=8, memory_mb=4096, disk_gb=50,
                                  **({"cell": "cell2"} if name != "host1" else {}))
             for name in ("host1", "host2", "host3")}
    flavor(cloud, "small", 1, 512, 5)
    ids = {host: boot(cloud, f"on-{host}", flavor_id(cloud, "small"), image(cloud),
                      availability_zone=f"nova:{host}") for host in ("host1", "host2")}
    cells = cloud.live.cells
    assert cells is not None
    cell2_db = cells.database(cells.by_name("cell2"))
    assert cell2_db.engine.url.get_backend_name() == "sqlite"
    assert count_rows(cell2_db, t.instances, uuid=ids["host2"]) == 1
    assert cells.of_instance(ids["host1"]).name == "cell1"
    listed = {s["id"]: s["OS-EXT-SRV-ATTR:host"]
              for s in cloud.compute.get("/servers/detail").json()["servers"]}
    assert listed == {ids["host1"]: "host1", ids["host2"]: "host2"}
    action(cloud, ids["host2"], {"migrate": None})
    action(cloud, ids["host2"], {"confirmResize": None}, status=204)
    assert server(cloud, ids["host2"])["OS-EXT-SRV-ATTR:host"] == "host3"
    assert held(cloud, ids["host2"]) == {nodes["host3"]: SMALL}
    for server_id in ids.values():
        assert cloud.compute.delete(f"/servers/{server_id}").status_code == 204
    settle(cloud)
    assert all(held(cloud, server_id) == {} for server_id in ids.values())
    assert_invariants(cloud)
