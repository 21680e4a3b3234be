"""Resize, cold migrate, confirm, revert and reschedule of a server with QoS ports.

    host1  br-physnet0, ens5 (4 VFs)     the server starts here
    host2  br-physnet0, ens5 (4 VFs)     the destination
    host3  br-physnet0, ens5 (4 VFs)     an alternate, smaller (weighed last)

The server has a `normal` QoS port on br-physnet0 and a `direct` QoS port on
ens5 (bandwidth and a VF). After each operation the test checks what the
instance and the migration hold per provider (device providers included),
where each port is bound and to which provider its allocation points, which
PF each host's VFs come from, and the audit.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.functional.conftest import Cloud
from tests.functional.ports import QOS_VF, MovingServer, boot, holding, net_host, vf_usage
from tests.functional.servers import (
    action,
    assert_invariants,
    flavor_amounts,
    force_down,
    image,
    server,
    settle,
)

SMALL = flavor_amounts(1, 512, 5)
LARGE = flavor_amounts(2, 1024, 10)


@pytest.fixture
def world(cloud: Cloud) -> Iterator[MovingServer]:
    made = MovingServer(cloud)
    assert holding(cloud, made.server) == made.on("host1", SMALL)
    made.assert_ports_on("host1")
    yield made
    made.nets.close()


def _verify_resize(cloud: Cloud, world: MovingServer, body: dict[str, object]) -> str:
    action(cloud, world.server, body)
    assert server(cloud, world.server)["status"] == "VERIFY_RESIZE"
    return world.migration()


@pytest.mark.parametrize("move", ["resize", "migrate"])
def test_move_then_confirm(cloud: Cloud, world: MovingServer, move: str) -> None:
    body: dict[str, object] = ({"resize": {"flavorRef": world.large}} if move == "resize"
                               else {"migrate": None})
    new = LARGE if move == "resize" else SMALL
    mig = _verify_resize(cloud, world, body)
    assert holding(cloud, world.server) == world.on("host2", new)
    assert holding(cloud, mig) == world.on("host1", SMALL)
    world.assert_ports_on("host2")
    assert vf_usage(cloud, "host1") == vf_usage(cloud, "host2") == {"ens5": 1}
    assert cloud.plane.agent("host2").pci.vfs_held((world.server, mig)) == {"ens5": 1}
    assert_invariants(cloud)

    action(cloud, world.server, {"confirmResize": None}, status=204)
    assert server(cloud, world.server)["status"] == "ACTIVE"
    assert holding(cloud, mig) == {}
    assert holding(cloud, world.server) == world.on("host2", new)
    world.assert_ports_on("host2")
    assert vf_usage(cloud, "host1") == {"ens5": 0}
    assert vf_usage(cloud, "host2") == {"ens5": 1}
    assert_invariants(cloud)


@pytest.mark.parametrize("move", ["resize", "migrate"])
def test_move_then_revert(cloud: Cloud, world: MovingServer, move: str) -> None:
    body: dict[str, object] = ({"resize": {"flavorRef": world.large}} if move == "resize"
                               else {"migrate": None})
    slot = world.nets.port(world.direct)["binding:profile"]["pci_slot"]
    mig = _verify_resize(cloud, world, body)
    world.assert_ports_on("host2")

    action(cloud, world.server, {"revertResize": None})
    view = server(cloud, world.server)
    assert (view["status"], view["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", "host1")
    assert holding(cloud, mig) == {}
    assert holding(cloud, world.server) == world.on("host1", SMALL)
    world.assert_ports_on("host1")
    assert world.nets.port(world.direct)["binding:profile"]["pci_slot"] == slot
    assert vf_usage(cloud, "host1") == {"ens5": 1}
    assert vf_usage(cloud, "host2") == {"ens5": 0}
    assert_invariants(cloud)


def test_same_host_resize_keeps_the_ports_on_the_host(cloud: Cloud, world: MovingServer) -> None:
    assert force_down(cloud, "host2").status_code == 200
    cloud.configure(allow_resize_to_same_host=True)
    mig = _verify_resize(cloud, world, {"resize": {"flavorRef": world.large}})
    assert holding(cloud, world.server) == world.on("host1", LARGE)
    assert holding(cloud, mig) == world.on("host1", SMALL)
    world.assert_ports_on("host1")
    assert vf_usage(cloud, "host1") == {"ens5": 2}
    assert_invariants(cloud)

    action(cloud, world.server, {"revertResize": None})
    assert holding(cloud, world.server) == world.on("host1", SMALL)
    world.assert_ports_on("host1")
    assert vf_usage(cloud, "host1") == {"ens5": 1}
    assert_invariants(cloud)

    mig = _verify_resize(cloud, world, {"resize": {"flavorRef": world.large}})
    action(cloud, world.server, {"confirmResize": None}, status=204)
    assert holding(cloud, world.server) == world.on("host1", LARGE)
    assert holding(cloud, mig) == {}
    world.assert_ports_on("host1")
    assert vf_usage(cloud, "host1") == {"ens5": 1}
    assert_invariants(cloud)


def test_resize_reschedules_to_an_alternate(cloud: Cloud, world: MovingServer) -> None:
    world.hosts["host3"] = net_host(cloud, "host3", vfs=4, memory_mb=16384)
    cloud.plane.agent("host2").driver.fail("claim")  # prep_resize on the first choice
    mig = _verify_resize(cloud, world, {"resize": {"flavorRef": world.large}})
    assert server(cloud, world.server)["OS-EXT-SRV-ATTR:host"] == "host3"
    assert holding(cloud, world.server) == world.on("host3", LARGE)
    assert holding(cloud, mig) == world.on("host1", SMALL)
    world.assert_ports_on("host3")
    assert vf_usage(cloud, "host2") == {"ens5": 0}
    assert vf_usage(cloud, "host3") == {"ens5": 1}
    assert_invariants(cloud)


def test_build_reschedules_to_an_alternate(cloud: Cloud, world: MovingServer) -> None:
    cloud.plane.agent("host2").driver.fail("spawn")
    port = world.nets.qos_port("c", vnic="direct")
    vm = boot(cloud, "vm2", world.large, image(cloud), [{"port": port}])
    assert server(cloud, vm)["OS-EXT-SRV-ATTR:host"] == "host1"
    h1 = world.hosts["host1"]
    assert holding(cloud, vm) == {h1.node: LARGE, h1.pf: QOS_VF}
    world.nets.assert_bound(port, vm, "host1", h1.pf)
    assert vf_usage(cloud, "host1") == {"ens5": 2}
    assert vf_usage(cloud, "host2") == {"ens5": 0}
    assert_invariants(cloud)


def test_delete_in_verify_resize_releases_everything(cloud: Cloud, world: MovingServer) -> None:
    mig = _verify_resize(cloud, world, {"resize": {"flavorRef": world.large}})
    assert cloud.compute.delete(f"/servers/{world.server}").status_code == 204
    settle(cloud)
    assert holding(cloud, world.server) == holding(cloud, mig) == {}
    world.nets.assert_unbound(world.normal)
    world.nets.assert_unbound(world.direct)
    assert vf_usage(cloud, "host1") == vf_usage(cloud, "host2") == {"ens5": 0}
    assert_invariants(cloud)
