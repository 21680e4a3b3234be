"""The stock `openstack` CLI: a server's snapshot saved to a file, a server booted from it,
and rescue / unrescue, on `stowage serve` (one simulated host).

    server image create --wait vm  ->  image save --file  ->  the guest's disk bytes
    server create --image <snapshot>  ->  ACTIVE
    server rescue  ->  RESCUE;  server unrescue  ->  ACTIVE
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from stowage.compute.agent.sim_console import disk_bytes
from stowage.compute.hosts import HostConfig
from tests.functional.conftest import LiveServer, serving
from tests.functional.osc import needs_osc, osc, settle

pytestmark = needs_osc


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with serving("sqlite") as live:
        assert live.plane is not None
        live.plane.add_host(HostConfig(name="host1"))
        yield live


def test_snapshot_save_boot_from_it_rescue(server: LiveServer, tmp_path: Path) -> None:
    osc(server, "flavor", "create", "m1.small", "--id", "1", "--ram", "512", "--vcpus", "1",
        "--disk", "5")
    base = tmp_path / "base.img"
    base.write_bytes(b"base image")
    osc(server, "image", "create", "cirros", "--file", str(base))
    made = osc(server, "server", "create", "--flavor", "m1.small", "--image", "cirros",
               "--no-network", "--wait", "vm")
    assert made["status"] == "ACTIVE"

    snap = osc(server, "server", "image", "create", "--name", "vm-snap", "--wait", "vm")
    assert snap["name"] == "vm-snap"
    saved = tmp_path / "vm-snap.img"
    osc(server, "image", "save", "--file", str(saved), "vm-snap", json_out=False)
    assert saved.read_bytes() == disk_bytes(made["id"])
    shown = osc(server, "image", "show", "vm-snap")
    assert (shown["status"], shown["size"]) == ("active", len(saved.read_bytes()))

    again = osc(server, "server", "create", "--flavor", "m1.small", "--image", "vm-snap",
                "--no-network", "--wait", "from-snap")
    assert again["status"] == "ACTIVE"

    osc(server, "server", "rescue", "vm", json_out=False)
    settle(server)
    assert osc(server, "server", "show", "vm")["status"] == "RESCUE"
    osc(server, "server", "unrescue", "vm", json_out=False)
    settle(server)
    assert osc(server, "server", "show", "vm")["status"] == "ACTIVE"
