"""The stock `openstack` CLI driving servers and moves against `stowage serve`.

    host1, host2, host3 (simulated, 16 VCPU / 32 GB / 1 TB each)

flavor create -> server create -> list/show -> resize + confirm -> resize +
revert -> migrate to a chosen host + confirm -> migration list, hypervisor
list, compute service list -> server delete; no Keystone anywhere.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.functional.conftest import LiveServer
from tests.functional.osc import needs_osc, osc, serving_hosts, settle

pytestmark = needs_osc


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with serving_hosts("host1", "host2", "host3") as live:
        yield live


def test_server_lifecycle_and_moves(server: LiveServer) -> None:
    osc(server, "flavor", "create", "m1.small", "--id", "1", "--ram", "512", "--vcpus", "1",
        "--disk", "5")
    osc(server, "flavor", "create", "m1.large", "--id", "2", "--ram", "1024", "--vcpus", "2",
        "--disk", "10")
    osc(server, "flavor", "create", "m1.medium", "--id", "3", "--ram", "2048", "--vcpus", "2",
        "--disk", "10")
    osc(server, "image", "create", "cirros")

    made = osc(server, "server", "create", "--flavor", "m1.small", "--image", "cirros",
               "--no-network", "--wait", "vm")
    assert made["status"] == "ACTIVE"
    listed = osc(server, "server", "list")
    assert [(s["Name"], s["Status"]) for s in listed] == [("vm", "ACTIVE")]
    shown = osc(server, "server", "show", "vm")
    first_host = shown["OS-EXT-SRV-ATTR:host"]
    assert first_host in ("host1", "host2", "host3")

    osc(server, "server", "resize", "--flavor", "m1.large", "--wait", "vm", json_out=False)
    assert osc(server, "server", "show", "vm")["status"] == "VERIFY_RESIZE"
    osc(server, "server", "resize", "confirm", "vm", json_out=False)
    settle(server)
    shown = osc(server, "server", "show", "vm")
    assert shown["status"] == "ACTIVE"
    assert "m1.large" in str(shown["flavor"])

    osc(server, "server", "resize", "--flavor", "m1.medium", "--wait", "vm", json_out=False)
    assert osc(server, "server", "show", "vm")["status"] == "VERIFY_RESIZE"
    osc(server, "server", "resize", "revert", "vm", json_out=False)
    settle(server)
    reverted = osc(server, "server", "show", "vm")
    assert reverted["status"] == "ACTIVE"
    assert "m1.large" in str(reverted["flavor"])

    here = osc(server, "server", "show", "vm")["OS-EXT-SRV-ATTR:host"]
    target = next(h for h in ("host1", "host2", "host3") if h != here)
    osc(server, "--os-compute-api-version", "2.56", "server", "migrate", "--host", target,
        "--wait", "vm", json_out=False)
    osc(server, "server", "resize", "confirm", "vm", json_out=False)
    settle(server)
    assert osc(server, "server", "show", "vm")["OS-EXT-SRV-ATTR:host"] == target

    migrations = osc(server, "--os-compute-api-version", "2.80", "server", "migration", "list")
    assert sorted(m["Status"] for m in migrations) == ["confirmed", "confirmed", "reverted"]
    assert {m["Type"] for m in migrations} == {"resize", "migration"}

    hypervisors = osc(server, "hypervisor", "list")
    assert sorted(h["Hypervisor Hostname"] for h in hypervisors) == ["host1", "host2", "host3"]
    services = osc(server, "compute", "service", "list")
    computes = sorted(s["Host"] for s in services if s["Binary"] == "nova-compute")
    assert computes == ["host1", "host2", "host3"]
    assert all(s["State"] == "up" for s in services if s["Binary"] == "nova-compute")

    osc(server, "server", "delete", "--wait", "vm", json_out=False)
    assert osc(server, "server", "list") == []
