"""Shelve, offload and unshelve a server with QoS ports, and a failure at every step.

    host1  br-physnet0, ens5 (4 VFs)     the server (normal + direct QoS port)
    host2  br-physnet0, ens5 (4 VFs)     the other choice on unshelve

A shelved server keeps everything: its allocation (ports' groups included),
its ports bound to host1, its VF. An offloaded one holds nothing, its VF is
freed and its ports are unbound from any host (no binding host, no
allocation nor VF in the profile) but still the server's. Unshelve claims a
host from scratch with the ports' groups and binds them there; a failed one
leaves the server SHELVED_OFFLOADED, holding nothing, its ports unbound.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from stowage.compute.conductor import port_homes, ports
from stowage.messaging import RemoteError
from tests.functional.conftest import Cloud
from tests.functional.ports import MovingServer, holding, vf_usage
from tests.functional.servers import (
    action,
    assert_invariants,
    flavor_amounts,
    force_down,
    server,
    settle,
)
from tests.functional.shelving import images_named

SMALL = flavor_amounts(1, 512, 5)


class World(MovingServer):
    def vfs(self) -> dict[str, int]:
        return {name: vf_usage(self.cloud, name)["ens5"] for name in self.hosts}

    def assert_on(self, host: str, status: str = "ACTIVE") -> None:
        """`status` on `host`, holding it (ports' groups included), ports bound there."""
        view = server(self.cloud, self.server)
        assert (view["status"], view["OS-EXT-SRV-ATTR:host"]) == (status, host)
        assert holding(self.cloud, self.server) == self.on(host, SMALL)
        self.assert_ports_on(host)
        assert self.nets.port(self.direct)["binding:profile"]["physical_network"] == "physnet1"
        assert self.vfs() == {name: int(name == host) for name in self.hosts}
        assert_invariants(self.cloud)

    def assert_offloaded(self) -> None:
        """SHELVED_OFFLOADED, no host, nothing held, no VF, ports the server's but unbound."""
        view = server(self.cloud, self.server)
        assert (view["status"], view["OS-EXT-SRV-ATTR:host"]) == ("SHELVED_OFFLOADED", None)
        assert holding(self.cloud, self.server) == {}
        for port_id in (self.normal, self.direct):
            port = self.nets.port(port_id)
            assert port["device_id"] == self.server, port
            assert port["device_owner"] == "compute:nova", port
            assert port["binding:host_id"] == "", port
            assert not set(port["binding:profile"]) & {"allocation", *ports.PCI_KEYS}, port
        assert self.vfs() == dict.fromkeys(self.hosts, 0)
        assert images_named(self.cloud, "vm-shelved") != []
        assert_invariants(self.cloud)


@pytest.fixture
def world(cloud: Cloud) -> Iterator[World]:
    made = World(cloud)
    yield made
    made.nets.close()


def _offload(cloud: Cloud, world: World) -> None:
    cloud.configure(shelved_offload_time=0)
    action(cloud, world.server, {"shelve": None})
    world.assert_offloaded()


def test_shelve_without_offload_keeps_everything(cloud: Cloud, world: World) -> None:
    cloud.configure(shelved_offload_time=-1)
    before = {p: world.nets.port(p) for p in (world.normal, world.direct)}
    action(cloud, world.server, {"shelve": None})
    world.assert_on("host1", "SHELVED")
    for port_id, port in before.items():
        assert world.nets.port(port_id) == port  # not even written

    action(cloud, world.server, {"unshelve": None})  # powered on where it is
    world.assert_on("host1")


def test_shelve_offload_then_unshelve(cloud: Cloud, world: World) -> None:
    _offload(cloud, world)
    action(cloud, world.server, {"unshelve": None})
    view = server(cloud, world.server)
    assert view["status"] == "ACTIVE"
    world.assert_on(str(view["OS-EXT-SRV-ATTR:host"]))
    assert images_named(cloud, "vm-shelved") == []


def test_shelve_offload_later_then_unshelve_to_another_host(cloud: Cloud, world: World) -> None:
    cloud.configure(shelved_offload_time=-1)
    action(cloud, world.server, {"shelve": None})
    world.assert_on("host1", "SHELVED")
    action(cloud, world.server, {"shelveOffload": None})
    world.assert_offloaded()

    action(cloud, world.server, {"unshelve": {"host": "host2"}})  # 2.91
    world.assert_on("host2")


def test_unshelve_reads_the_ports_requests_again(cloud: Cloud, world: World) -> None:
    """The QoS policy goes from the normal port while shelved: it asks for nothing then."""
    _offload(cloud, world)
    resp = world.nets.client.put(f"/v2.0/ports/{world.normal}",
                                 json={"port": {"qos_policy_id": None}})
    assert resp.status_code == 200, resp.text
    action(cloud, world.server, {"unshelve": {"host": "host2"}})
    h2 = world.hosts["host2"]
    expected = world.on("host2", SMALL)
    assert h2.bridge is not None
    del expected[h2.bridge]
    assert holding(cloud, world.server) == expected
    world.nets.assert_bound(world.direct, world.server, "host2", h2.pf)
    assert world.nets.binding(world.normal) == ("host2", None)
    assert_invariants(cloud)


def test_unshelve_reschedules_to_an_alternate(cloud: Cloud, world: World) -> None:
    _offload(cloud, world)
    cloud.plane.agent("host1").driver.fail("spawn")  # the first choice (names break ties)
    action(cloud, world.server, {"unshelve": None})
    world.assert_on("host2")
    assert cloud.plane.agent("host1").driver.power_state(world.server) == 0


def test_unshelve_failing_everywhere_leaves_it_offloaded(cloud: Cloud, world: World) -> None:
    _offload(cloud, world)
    for name in ("host1", "host2"):
        cloud.plane.agent(name).driver.fail("spawn", times=None)
    action(cloud, world.server, {"unshelve": None})
    world.assert_offloaded()

    for name in ("host1", "host2"):
        cloud.plane.agent(name).driver.clear_faults()
    action(cloud, world.server, {"unshelve": None})  # works once the hosts do
    world.assert_on(str(server(cloud, world.server)["OS-EXT-SRV-ATTR:host"]))


def test_unshelve_with_no_valid_host_leaves_it_offloaded(cloud: Cloud, world: World) -> None:
    _offload(cloud, world)
    for name in ("host1", "host2"):
        assert force_down(cloud, name).status_code == 200
    action(cloud, world.server, {"unshelve": None})
    world.assert_offloaded()


def test_unshelve_failing_on_the_requested_host(cloud: Cloud, world: World) -> None:
    _offload(cloud, world)
    cloud.plane.agent("host2").driver.fail("claim")
    action(cloud, world.server, {"unshelve": {"host": "host2"}})
    world.assert_offloaded()


def test_a_failed_binding_on_unshelve_moves_on(
        cloud: Cloud, world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Network service refuses host2's binding: the guest there is destroyed, the
    ports unbound again, and host1 takes the server."""
    _offload(cloud, world)
    real = ports.bind

    def refusing(ops: Any, server_ports: Any, host: str, *args: Any) -> None:
        if host == "host2":
            raise RemoteError("PortBindingFailed", "Binding failed on host2")
        real(ops, server_ports, host, *args)

    monkeypatch.setattr(ports, "bind", refusing)
    action(cloud, world.server, {"unshelve": {"host": "host2"}})
    world.assert_offloaded()
    assert cloud.plane.agent("host2").driver.power_state(world.server) == 0
    monkeypatch.undo()
    action(cloud, world.server, {"unshelve": None})
    world.assert_on(str(server(cloud, world.server)["OS-EXT-SRV-ATTR:host"]))


@pytest.mark.parametrize("step", ["power_off", "snapshot"])
def test_a_failed_shelve_keeps_the_ports_bound(cloud: Cloud, world: World, step: str) -> None:
    cloud.configure(shelved_offload_time=0)
    cloud.plane.agent("host1").driver.fail(step)
    action(cloud, world.server, {"shelve": None})
    world.assert_on("host1")


def test_a_failed_offload_keeps_the_ports_bound(cloud: Cloud, world: World) -> None:
    cloud.configure(shelved_offload_time=-1)
    action(cloud, world.server, {"shelve": None})
    cloud.plane.agent("host1").driver.fail("destroy")
    action(cloud, world.server, {"shelveOffload": None})
    world.assert_on("host1", "SHELVED")
    action(cloud, world.server, {"shelveOffload": None})  # tried again: it works
    world.assert_offloaded()


def test_offload_with_the_network_failing_ends_in_error_on_the_host(
        cloud: Cloud, world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """The guest is gone, the ports could not be unbound: ERROR on host1, still holding
    its allocation there (as when Placement fails), ports still bound there."""
    def failing(*args: Any) -> None:
        raise RemoteError("NetworkError", "the Network service is down")

    cloud.configure(shelved_offload_time=-1)
    action(cloud, world.server, {"shelve": None})
    monkeypatch.setattr(port_homes, "park", failing)
    action(cloud, world.server, {"shelveOffload": None})
    view = server(cloud, world.server)
    assert (view["status"], view["OS-EXT-SRV-ATTR:host"]) == ("ERROR", "host1")
    assert holding(cloud, world.server) == world.on("host1", SMALL)
    world.assert_ports_on("host1")
    assert_invariants(cloud)


def test_delete_of_an_offloaded_server_lets_its_ports_go(cloud: Cloud, world: World) -> None:
    _offload(cloud, world)
    assert cloud.compute.delete(f"/servers/{world.server}").status_code == 204
    settle(cloud)
    world.nets.assert_unbound(world.normal)
    world.nets.assert_unbound(world.direct)
    assert holding(cloud, world.server) == {}
    assert_invariants(cloud)
