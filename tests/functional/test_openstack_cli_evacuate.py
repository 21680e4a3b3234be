"""The stock `openstack` CLI evacuating the servers of a dead host from `stowage serve`.

    host1 (dies): vm1, vm2        host2: where they are rebuilt

server create (both pinned to host1) -> compute service set --down host1
(2.11) -> server evacuate vm1 (2.1: onSharedStorage false, a password back)
-> server evacuate --host host2 vm2 (2.29) -> server migration list
(evacuation, done) -> host1's agent starts again -> migrations completed ->
compute service set --up host1; no Keystone anywhere.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from stowage.compute.hosts import HostConfig
from tests.functional.conftest import LiveServer
from tests.functional.osc import needs_osc, osc, serving_hosts, settle

pytestmark = needs_osc


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with serving_hosts("host1", "host2") as live:
        yield live


def _migrations(server: LiveServer) -> list[tuple[str, str, str, str]]:
    listed = osc(server, "--os-compute-api-version", "2.80", "server", "migration", "list")
    return sorted((m["Type"], m["Status"], m["Source Compute"], m["Dest Compute"])
                  for m in listed)


def test_evacuate_the_servers_of_a_dead_host(server: LiveServer) -> None:
    assert server.plane is not None
    osc(server, "flavor", "create", "m1.small", "--id", "1", "--ram", "512", "--vcpus", "1",
        "--disk", "5")
    osc(server, "image", "create", "cirros")
    for name in ("vm1", "vm2"):
        made = osc(server, "server", "create", "--flavor", "m1.small", "--image", "cirros",
                   "--no-network", "--availability-zone", "nova:host1", "--wait", name)
        assert made["status"] == "ACTIVE"
        assert osc(server, "server", "show", name)["OS-EXT-SRV-ATTR:host"] == "host1"

    server.plane.stop_host("host1")  # the host dies; the operator fences it and says so
    osc(server, "--os-compute-api-version", "2.11", "compute", "service", "set", "--down",
        "host1", "nova-compute", json_out=False)
    services = osc(server, "compute", "service", "list")
    assert [s["State"] for s in services if s["Host"] == "host1"] == ["down"]

    osc(server, "server", "evacuate", "vm1")  # 2.1: onSharedStorage false, a new password
    osc(server, "--os-compute-api-version", "2.29", "server", "evacuate", "--host", "host2",
        "vm2")
    settle(server)
    for name in ("vm1", "vm2"):
        shown = osc(server, "server", "show", name)
        assert (shown["status"], shown["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", "host2")
    assert _migrations(server) == [("evacuation", "done", "host1", "host2")] * 2

    server.plane.add_host(HostConfig(name="host1"))  # back: it cleans up as it starts
    assert _migrations(server) == [("evacuation", "completed", "host1", "host2")] * 2
    osc(server, "--os-compute-api-version", "2.11", "compute", "service", "set", "--up",
        "host1", "nova-compute", json_out=False)
    services = osc(server, "compute", "service", "list")
    assert [s["State"] for s in services if s["Host"] == "host1"] == ["up"]
