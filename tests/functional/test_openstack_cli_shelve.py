"""The stock `openstack` CLI shelving, offloading and unshelving servers on `stowage serve`.

    host1 (zone az1)      host2 (zone az2)      shelved_offload_time = -1

server shelve --wait -> SHELVED on its host; shelve --offload -> SHELVED_OFFLOADED;
unshelve --wait -> ACTIVE; unshelve --availability-zone (2.77) lands in that
zone; unshelve --host needs 2.91 (asked for at 2.80, the CLI refuses before
sending anything; at 2.91 it lands on that host).
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
from collections.abc import Iterator

import pytest

from stowage.compute.hosts import HostConfig
from tests.functional.conftest import LiveServer, serving
from tests.functional.osc import needs_osc, osc, settle

pytestmark = needs_osc


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with serving("sqlite") as live:
        plane = live.plane
        assert plane is not None
        plane.reconfigure(dataclasses.replace(plane.settings, shelved_offload_time=-1))
        for name, zone in (("host1", "az1"), ("host2", "az2")):
            plane.add_host(HostConfig(name=name, availability_zone=zone))
        yield live


def _show(live: LiveServer, name: str) -> tuple[str, str | None, str]:
    shown = osc(live, "server", "show", name)
    return shown["status"], shown["OS-EXT-SRV-ATTR:host"], shown["OS-EXT-AZ:availability_zone"]


def test_shelve_offload_and_unshelve_with_the_cli(server: LiveServer) -> None:
    osc(server, "flavor", "create", "m1.small", "--id", "1", "--ram", "512", "--vcpus", "1",
        "--disk", "5")
    osc(server, "image", "create", "cirros")
    made = osc(server, "server", "create", "--flavor", "m1.small", "--image", "cirros",
               "--no-network", "--availability-zone", "az1", "--wait", "vm")
    assert made["status"] == "ACTIVE"

    osc(server, "server", "shelve", "--wait", "vm", json_out=False)
    assert _show(server, "vm")[:2] == ("SHELVED", "host1")
    images = osc(server, "image", "list", "--name", "vm-shelved")
    assert [i["Name"] for i in images] == ["vm-shelved"]

    osc(server, "server", "unshelve", "--wait", "vm", json_out=False)
    assert _show(server, "vm")[:2] == ("ACTIVE", "host1")
    assert osc(server, "image", "list", "--name", "vm-shelved") == []

    osc(server, "server", "shelve", "--offload", "--wait", "vm", json_out=False)
    assert _show(server, "vm")[:2] == ("SHELVED_OFFLOADED", None)
    listed = osc(server, "server", "list")
    assert [(s["Name"], s["Status"]) for s in listed] == [("vm", "SHELVED_OFFLOADED")]

    osc(server, "--os-compute-api-version", "2.77", "server", "unshelve",
        "--availability-zone", "az2", "--wait", "vm", json_out=False)
    assert _show(server, "vm") == ("ACTIVE", "host2", "az2")
    settle(server)
    osc(server, "server", "delete", "--wait", "vm", json_out=False)
    assert osc(server, "server", "list") == []


def test_unshelve_to_a_host_at_2_91(server: LiveServer) -> None:
    """An offloaded server unshelved onto the host the admin names (2.91)."""
    osc(server, "server", "create", "--flavor", "m1.small", "--image", "cirros",
        "--no-network", "--wait", "vm2")
    before = _show(server, "vm2")[1]
    other = {"host1": "host2", "host2": "host1"}[str(before)]
    osc(server, "server", "shelve", "--offload", "--wait", "vm2", json_out=False)
    assert _show(server, "vm2")[:2] == ("SHELVED_OFFLOADED", None)
    osc(server, "--os-compute-api-version", "2.91", "server", "unshelve", "--host", other,
        "--wait", "vm2", json_out=False)
    assert _show(server, "vm2")[:2] == ("ACTIVE", other)
    settle(server)
    osc(server, "server", "delete", "--wait", "vm2", json_out=False)


def test_unshelve_to_a_host_needs_2_91(server: LiveServer) -> None:
    """Asked for at 2.80, the CLI refuses --host before it sends anything."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    env.update(OS_AUTH_TYPE="admin_token", OS_TOKEN="admin",
               OS_COMPUTE_ENDPOINT_OVERRIDE=f"{server.url}/compute/v2.1",
               OS_ENDPOINT=f"{server.url}/placement")
    result = subprocess.run(
        ["openstack", "--os-compute-api-version", "2.80", "server", "unshelve", "--host",
         "host2", "whatever"], env=env, capture_output=True, text=True, timeout=120,
        check=False, stdin=subprocess.DEVNULL)
    assert result.returncode != 0
    assert "2.91 or greater is required" in result.stderr
