"""Evacuate a server with QoS ports, the source coming back, and a failure at every step.

    host1  br-physnet0, ens5 (4 VFs)     the server (normal + direct QoS port); dies
    host2  br-physnet0, ens5 (4 VFs)     the destination (and its faults)
    host3  br-physnet0, ens5 (4 VFs)     an alternate, or the requested host (some tests)

After the evacuation the instance holds the flavor and the ports' groups on
the destination's providers and the migration the same on the source's; the
ports are bound to the destination with its providers and a VF of its PF.
When the source's agent starts again it deletes the migration's allocation
(bandwidth and VF included) and frees its VFs, and leaves the ports exactly
as they were (same revision). A failed evacuation leaves the server ERROR on
the source, holding the source, its ports bound there as before.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from stowage.compute.conductor import ports
from stowage.messaging import RemoteError
from tests.functional.conftest import Cloud
from tests.functional.evacuation import evacuate
from tests.functional.ports import EGR, IGR, VF, MovingServer, holding, net_host, vf_usage
from tests.functional.servers import (
    EMPTY,
    action,
    assert_invariants,
    flavor_amounts,
    guests,
    migrations_of,
    server,
    settle,
    start_agent,
    stop_agent,
    usages,
)
from tests.functional.test_evacuate_recovery import crash_at

SMALL = flavor_amounts(1, 512, 5)


class World(MovingServer):
    """MovingServer (host1, host2; the server on host1), host1's agent stopped."""

    def __init__(self, cloud: Cloud, host3: bool = False) -> None:
        super().__init__(cloud)
        if host3:
            self.hosts["host3"] = net_host(cloud, "host3", vfs=4, memory_mb=16384)
        self.before = {p: self.nets.port(p) for p in (self.normal, self.direct)}
        self.host1 = stop_agent(cloud, "host1")

    def vfs(self, *names: str) -> dict[str, int]:
        return {name: vf_usage(self.cloud, name)["ens5"] for name in names}

    def assert_evacuated_to(self, host: str) -> str:
        """ACTIVE on `host`, holding it; the migration holds host1; ports bound to `host`."""
        view = server(self.cloud, self.server)
        assert (view["status"], view["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", host)
        [mig] = migrations_of(self.cloud, self.server)
        assert (mig["status"], mig["dest_compute"]) == ("done", host)
        assert holding(self.cloud, self.server) == self.on(host, SMALL)
        assert holding(self.cloud, mig["uuid"]) == self.on("host1", SMALL)
        self.assert_ports_on(host)
        profile = self.nets.port(self.direct)["binding:profile"]
        assert profile["pci_slot"].startswith("0000:81:")  # the host's first (only) PF
        assert profile["physical_network"] == "physnet1"
        assert self.vfs(host) == {host: 1}
        assert_invariants(self.cloud)
        return str(mig["uuid"])

    def assert_back_on_host1(self, status: str) -> None:
        """ERROR on host1 holding it; the migration nothing; ports as before the move."""
        view = server(self.cloud, self.server)
        assert (view["status"], view["OS-EXT-SRV-ATTR:host"]) == ("ERROR", "host1")
        [mig] = migrations_of(self.cloud, self.server)
        assert mig["status"] == status
        assert holding(self.cloud, mig["uuid"]) == {}
        assert holding(self.cloud, self.server) == self.on("host1", SMALL)
        self.assert_ports_on("host1")
        for port_id, before in self.before.items():
            now = self.nets.port(port_id)
            assert now["binding:profile"] == before["binding:profile"], port_id
        others = [h for h in self.hosts if h != "host1"]
        assert self.vfs(*others) == dict.fromkeys(others, 0)
        assert_invariants(self.cloud)


@pytest.fixture
def world(cloud: Cloud) -> Iterator[World]:
    made = World(cloud)
    yield made
    made.nets.close()


@pytest.fixture
def world3(cloud: Cloud) -> Iterator[World]:
    made = World(cloud, host3=True)
    yield made
    made.nets.close()


def test_evacuate_then_the_source_cleans_up_without_touching_the_ports(
        cloud: Cloud, world: World) -> None:
    evacuate(cloud, world.server)
    mig = world.assert_evacuated_to("host2")
    bound = {p: world.nets.port(p) for p in (world.normal, world.direct)}

    start_agent(cloud, world.host1)  # host1 comes back: clean_evacuated
    assert migrations_of(cloud, world.server)[0]["status"] == "completed"
    assert holding(cloud, mig) == {}
    assert holding(cloud, world.server) == world.on("host2", SMALL)
    h1 = world.hosts["host1"]
    assert h1.bridge is not None and h1.pf is not None
    assert usages(cloud, h1.node) == EMPTY
    assert usages(cloud, h1.bridge) == {EGR: 0, IGR: 0}
    assert usages(cloud, h1.pf) == {EGR: 0, IGR: 0, VF: 0}
    for port_id, port in bound.items():  # not written at all: same revision
        assert world.nets.port(port_id) == port
    world.assert_ports_on("host2")
    assert ("host1", "") not in guests(cloud, world.server)
    assert world.vfs("host1", "host2") == {"host1": 0, "host2": 1}
    assert_invariants(cloud)


def test_evacuate_to_a_requested_host(cloud: Cloud, world3: World) -> None:
    evacuate(cloud, world3.server, {"host": "host3"})
    world3.assert_evacuated_to("host3")
    assert world3.vfs("host2") == {"host2": 0}


def test_evacuate_forced_to_a_host(cloud: Cloud, world3: World) -> None:
    evacuate(cloud, world3.server, {"host": "host3", "force": True}, version="2.29")
    world3.assert_evacuated_to("host3")


def test_a_refused_claim_moves_on_to_the_alternate(cloud: Cloud, world3: World) -> None:
    cloud.plane.agent("host2").driver.fail("claim")
    evacuate(cloud, world3.server)
    world3.assert_evacuated_to("host3")
    assert world3.vfs("host2") == {"host2": 0}


def test_no_free_vf_on_the_pf_moves_on_to_the_alternate(cloud: Cloud, world3: World) -> None:
    """host2's PF has VFs in Placement but its agent finds none free (PCI claim refused)."""
    agent = cloud.plane.agent("host2")
    agent.pci.claim_vfs(("someone", ""), {"ens5": 4})
    evacuate(cloud, world3.server)
    world3.assert_evacuated_to("host3")


# (host whose driver step fails, step, stop the server first?, migration status afterwards)
FAILURES = [
    pytest.param("claim", False, "error", id="rebuild-claim-refused"),
    pytest.param("spawn", False, "failed", id="spawn"),
    pytest.param("power_off", True, "failed", id="power-off-of-a-stopped-server"),
]


@pytest.mark.parametrize(("step", "stopped", "status"), FAILURES)
def test_a_failed_evacuation_leaves_the_ports_on_the_source(
        cloud: Cloud, world: World, step: str, stopped: bool, status: str) -> None:
    if stopped:
        start_agent(cloud, world.host1)
        action(cloud, world.server, {"os-stop": None})
        world.host1 = stop_agent(cloud, "host1")
    cloud.plane.agent("host2").driver.fail(step, times=None)
    evacuate(cloud, world.server)
    world.assert_back_on_host1(status)
    assert f"injected fault in {step} on host2" in server(cloud, world.server)["fault"]["message"]


def test_every_host_refusing_leaves_the_ports_on_the_source(
        cloud: Cloud, world3: World) -> None:
    for name in ("host2", "host3"):
        cloud.plane.agent(name).driver.fail("claim", times=None)
    evacuate(cloud, world3.server)
    world3.assert_back_on_host1("error")


def test_no_valid_host_leaves_the_ports_on_the_source(cloud: Cloud, world: World) -> None:
    stop_agent(cloud, "host2")
    evacuate(cloud, world.server)
    view = server(cloud, world.server)
    assert (view["status"], view["fault"]["code"]) == ("ERROR", 400)
    [mig] = migrations_of(cloud, world.server)
    assert mig["status"] == "error"
    assert holding(cloud, mig["uuid"]) == {}
    assert holding(cloud, world.server) == world.on("host1", SMALL)
    world.assert_ports_on("host1")
    assert_invariants(cloud)


def test_a_failed_binding_on_the_destination_is_undone(
        cloud: Cloud, world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Network service refuses the destination binding: the guest is not rebuilt, the
    claim is dropped, and the ports stay bound to the source."""
    real = ports.bind

    def refusing(ops: Any, server_ports: Any, host: str, *args: Any) -> None:
        if host == "host2":
            raise RemoteError("PortBindingFailed", "Binding failed for port on host2")
        real(ops, server_ports, host, *args)

    monkeypatch.setattr(ports, "bind", refusing)
    evacuate(cloud, world.server)
    world.assert_back_on_host1("failed")
    assert ("host2", "") not in guests(cloud, world.server)


def test_the_source_back_after_a_failed_evacuation_keeps_guest_vf_and_ports(
        cloud: Cloud, world: World) -> None:
    cloud.plane.agent("host2").driver.fail("spawn")
    evacuate(cloud, world.server)
    start_agent(cloud, world.host1)
    world.assert_back_on_host1("failed")
    assert world.vfs("host1") == {"host1": 1}
    assert guests(cloud, world.server) == {("host1", ""): 1}


def test_a_second_start_of_the_source_changes_nothing(cloud: Cloud, world: World) -> None:
    evacuate(cloud, world.server)
    mig = world.assert_evacuated_to("host2")
    bound = {p: world.nets.port(p) for p in (world.normal, world.direct)}
    start_agent(cloud, world.host1)
    config = stop_agent(cloud, "host1")
    start_agent(cloud, config)
    assert holding(cloud, mig) == {}
    for port_id, port in bound.items():
        assert world.nets.port(port_id) == port
    assert world.vfs("host1", "host2") == {"host1": 0, "host2": 1}
    assert_invariants(cloud)


def test_a_crash_before_the_rebuild_goes_on_with_the_ports(
        cloud: Cloud, world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """Recovery runs the rebuild again on its journaled destination: the mapping then
    comes from what the instance holds there (no candidate to read it from)."""
    crash_at(monkeypatch, "evacuate:rebuild_instance:executing")
    evacuate(cloud, world.server)
    assert server(cloud, world.server)["status"] == "REBUILD"  # cut off
    monkeypatch.undo()
    cloud.plane.conductor.recover()
    settle(cloud)
    world.assert_evacuated_to("host2")


def test_a_rebuild_failing_after_a_crash_binds_the_ports_back_as_they_were(
        cloud: Cloud, world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """The VFs the ports had on the dead source come from the journal then."""
    cloud.plane.agent("host2").driver.fail("spawn", times=None)
    crash_at(monkeypatch, "evacuate:rebuild_instance:executing")
    evacuate(cloud, world.server)
    monkeypatch.undo()
    cloud.plane.conductor.recover()
    settle(cloud)
    world.assert_back_on_host1("failed")
