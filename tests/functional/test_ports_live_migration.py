"""Live migration of a server with QoS ports: an inactive binding on the destination.

    host1  br-physnet0, ens5 (4 VFs)     the server starts here
    host2  br-physnet0, ens5 (4 VFs)     the destination (and its faults)
    host3  br-physnet0, ens5 (4 VFs)     an alternate, when a test adds it

The server has a `normal` QoS port on br-physnet0 and a `direct` QoS port on
ens5 (bandwidth and a VF). While the guest is copied each port keeps its
ACTIVE binding on host1 and has an INACTIVE one on the destination carrying
the destination's providers and VF; success activates the destination one and
deletes the source one, any failure before the guest moved deletes the
destination one and leaves the source one as it was. After each operation the
test checks what the instance and the migration hold per provider (device
providers included), each port's bindings and allocation key, which PF each
host's VFs come from, and the audit.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from stowage.network import mechanism
from stowage.network import tables as network_tables
from tests.functional.conftest import Cloud
from tests.functional.live import events, live_migrate, wait_copying
from tests.functional.ports import QOS, QOS_VF, holding, net_host, vf_usage
from tests.functional.servers import (
    assert_invariants,
    flavor_amounts,
    migrations_of,
    server,
    settle,
)
from tests.functional.test_live_migration_failures import BEFORE_THE_GUEST_MOVED
from tests.functional.test_ports_move_failures import World

SMALL = flavor_amounts(1, 512, 5)
ENS5_BUS = "0000:81:"  # the PCI bus of a host's first PF (ens5): its VFs' pci_slot prefix


class LiveWorld(World):
    def bindings(self, port_id: str) -> dict[str, tuple[str, dict[str, Any]]]:
        """host -> (status, profile) of each binding the port has."""
        resp = self.nets.client.get(f"/v2.0/ports/{port_id}/bindings")
        assert resp.status_code == 200, resp.text
        return {b["host"]: (b["status"], b["profile"]) for b in resp.json()["bindings"]}

    def assert_settled(self, host: str, status: str = "ACTIVE") -> None:
        """The server is `status` on `host`, holds its flavor and ports there, the migration
        holds nothing; each port has one binding, ACTIVE on `host`, with `host`'s providers
        and (the direct port) a VF of its ens5; VFs are used only there."""
        view = server(self.cloud, self.server)
        assert (view["status"], view["OS-EXT-SRV-ATTR:host"]) == (status, host)
        for mig in migrations_of(self.cloud, self.server):
            assert holding(self.cloud, str(mig["uuid"])) == {}
        self.assert_on(host, SMALL, {name: int(name == host) for name in self.hosts})
        for port in (self.normal, self.direct):
            assert {h: s for h, (s, _) in self.bindings(port).items()} == {host: "ACTIVE"}
        profile = self.nets.port(self.direct)["binding:profile"]
        assert profile["pci_slot"].startswith(ENS5_BUS), profile
        assert profile["physical_network"] == "physnet1", profile


@pytest.fixture
def world(cloud: Cloud) -> Iterator[LiveWorld]:
    made = LiveWorld(cloud)
    yield made
    made.nets.close()


@pytest.fixture
def slow(cloud: Cloud) -> Iterator[LiveWorld]:
    """The same, with copies that last 20 s unless forced or aborted."""
    cloud.configure(sim_live_migration_seconds=20.0)
    made = LiveWorld(cloud)
    yield made
    made.nets.close()


@pytest.mark.parametrize(("host", "version", "extra"), [
    pytest.param(None, "latest", {}, id="scheduled"),
    pytest.param("host2", "latest", {}, id="requested"),
    pytest.param("host2", "2.67", {"force": True}, id="forced"),
    pytest.param("host2", "2.25", {}, id="forced-before-2.30"),
])
def test_live_migration_moves_the_bindings_and_the_bandwidth(
        cloud: Cloud, world: LiveWorld, host: str | None, version: str,
        extra: dict[str, Any]) -> None:
    source_profile = world.nets.port(world.direct)["binding:profile"]
    assert source_profile["pci_slot"].startswith(ENS5_BUS)

    resp = live_migrate(cloud, world.server, host=host, version=version, **extra)
    assert resp.status_code == 202, resp.text
    world.assert_settled("host2")
    [mig] = migrations_of(cloud, world.server)
    assert mig["status"] == "completed"
    assert cloud.plane.agent("host2").pci.vfs_held((world.server, str(mig["uuid"]))) == {
        "ens5": 1}


def test_while_copying_the_destination_binding_is_inactive_then_abort(
        cloud: Cloud, slow: LiveWorld) -> None:
    world = slow
    before = {p: world.bindings(p) for p in (world.normal, world.direct)}
    assert live_migrate(cloud, world.server, wait=False).status_code == 202
    running = wait_copying(cloud, world.server)
    mig, h1, h2 = str(running["uuid"]), world.hosts["host1"], world.hosts["host2"]

    # The migration holds the source (its bandwidth too), the instance the destination.
    assert holding(cloud, mig) == world.on("host1", SMALL)
    assert holding(cloud, world.server) == world.on("host2", SMALL)
    assert vf_usage(cloud, "host1") == vf_usage(cloud, "host2") == {"ens5": 1}
    # The source bindings are untouched, the destination ones inactive with host2's keys.
    world.assert_ports_on("host1")
    normal, direct = world.bindings(world.normal), world.bindings(world.direct)
    assert normal["host1"] == before[world.normal]["host1"]
    assert direct["host1"] == before[world.direct]["host1"]
    assert normal["host2"] == ("INACTIVE", {"allocation": {
        world.nets.group_id(world.normal): h2.bridge}})
    status, profile = direct["host2"]
    assert status == "INACTIVE"
    assert profile["allocation"] == {world.nets.group_id(world.direct): h2.pf}
    assert profile["pci_slot"].startswith(ENS5_BUS)
    assert profile["physical_network"] == "physnet1"
    assert h1.pf != h2.pf

    with cloud.client("admin", "2.24") as client:
        resp = client.delete(f"/servers/{world.server}/migrations/{running['id']}")
    assert resp.status_code == 202, resp.text
    settle(cloud)
    world.assert_settled("host1")
    assert {p: world.bindings(p) for p in (world.normal, world.direct)} == before
    assert migrations_of(cloud, world.server)[0]["status"] == "cancelled"


def test_force_complete_while_copying_activates_the_destination(
        cloud: Cloud, slow: LiveWorld) -> None:
    world = slow
    live_migrate(cloud, world.server, wait=False)
    running = wait_copying(cloud, world.server)
    resp = cloud.compute.post(f"/servers/{world.server}/migrations/{running['id']}/action",
                              json={"force_complete": None})
    assert resp.status_code == 202, resp.text
    settle(cloud)
    world.assert_settled("host2")


@pytest.mark.parametrize("version", ["latest", "2.67"])
def test_a_live_migration_to_another_zone_gives_the_ports_its_owner(
        cloud: Cloud, world: LiveWorld, version: str) -> None:
    """host3 is in zone az2: after the switch-over each port is owned by compute:az2
    (Nova rewrites device_owner when the host changed); another live migration back
    to host1's zone gives them compute:nova again."""
    world.hosts["host3"] = net_host(cloud, "host3", vfs=4, availability_zone="az2")
    for port in (world.normal, world.direct):
        assert world.nets.port(port)["device_owner"] == "compute:nova"
    extra = {"force": True} if version == "2.67" else {}
    assert live_migrate(cloud, world.server, "host3", version,
                        **extra).status_code == 202
    view = server(cloud, world.server)
    assert (view["status"], view["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", "host3")
    [mig] = migrations_of(cloud, world.server)
    assert holding(cloud, str(mig["uuid"])) == {}
    assert holding(cloud, world.server) == world.on("host3", SMALL)
    h3 = world.hosts["host3"]
    for port, rp in ((world.normal, h3.bridge), (world.direct, h3.pf)):
        assert {h: st for h, (st, _) in world.bindings(port).items()} == {"host3": "ACTIVE"}
        found = world.nets.port(port)
        assert (found["device_owner"], found["device_id"], found["binding:host_id"]) == (
            "compute:az2", world.server, "host3")
        assert found["binding:profile"]["allocation"] == {world.nets.group_id(port): rp}
    assert world.nets.port(world.direct)["binding:profile"]["pci_slot"].startswith(ENS5_BUS)
    assert {h: vf_usage(cloud, h)["ens5"] for h in world.hosts} == {
        "host1": 0, "host2": 0, "host3": 1}
    assert_invariants(cloud)

    assert live_migrate(cloud, world.server, "host1").status_code == 202
    world.assert_settled("host1")
    for port in (world.normal, world.direct):
        assert world.nets.port(port)["device_owner"] == "compute:nova"


@pytest.mark.parametrize(("host", "step"), [
    pytest.param("host2", "check_can_live_migrate_destination", id="dest-check"),
    pytest.param("host1", "check_can_live_migrate_source", id="source-check"),
])
def test_a_refused_destination_loses_its_bindings_and_vfs_to_the_alternate(
        cloud: Cloud, world: LiveWorld, host: str, step: str) -> None:
    """host2 refuses (its own check, or the source's check after host2 claimed its VF):
    host3 gets the inactive bindings, then the active ones; host2 keeps nothing."""
    world.hosts["host3"] = net_host(cloud, "host3", vfs=4)
    cloud.plane.agent(host).driver.fail(step, times=1)

    live_migrate(cloud, world.server)
    world.assert_settled("host3")
    h3 = world.hosts["host3"]
    assert holding(cloud, world.server)[h3.bridge] == QOS
    assert holding(cloud, world.server)[h3.pf] == QOS_VF
    found = events(cloud, world.server, "live-migration")
    assert (f"compute_{step}", host, "Error") in found


def test_a_refused_binding_reschedules(cloud: Cloud, world: LiveWorld,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The Network service cannot bind the ports on host2: a pre-check error (Nova's
    PortBindingFailed in `_bind_ports_on_destination`); host3 takes the server."""
    world.hosts["host3"] = net_host(cloud, "host3", vfs=4)
    real = mechanism.bind

    def refuse_host2(host: str, *args: Any) -> mechanism.Binding:
        if host == "host2":
            return mechanism.Binding(mechanism.VIF_BINDING_FAILED, {})
        return real(host, *args)

    monkeypatch.setattr(mechanism, "bind", refuse_host2)
    live_migrate(cloud, world.server)
    monkeypatch.undo()
    world.assert_settled("host3")
    assert ("compute_check_can_live_migrate_destination", "host2", "Success") in events(
        cloud, world.server, "live-migration")


@pytest.mark.parametrize(("host", "step", "event"), BEFORE_THE_GUEST_MOVED)
def test_a_failure_before_the_guest_moved_leaves_the_source_binding_alone(
        cloud: Cloud, world: LiveWorld, host: str, step: str, event: str) -> None:
    before = {p: world.bindings(p) for p in (world.normal, world.direct)}
    cloud.plane.agent(host).driver.fail(step, times=None)

    assert live_migrate(cloud, world.server).status_code == 202
    world.assert_settled("host1")
    assert {p: world.bindings(p) for p in (world.normal, world.direct)} == before
    assert migrations_of(cloud, world.server)[0]["status"] == "error"
    assert (event, host, "Error") in events(cloud, world.server, "live-migration")


@pytest.mark.parametrize(("host", "step"), [("host2", "post_live_migration_at_destination"),
                                            ("host1", "post_live_migration")])
def test_a_failure_after_the_guest_moved_leaves_the_ports_on_the_destination(
        cloud: Cloud, world: LiveWorld, host: str, step: str) -> None:
    cloud.plane.agent(host).driver.fail(step, times=None)
    live_migrate(cloud, world.server)
    world.assert_settled("host2", status="ERROR")
    assert migrations_of(cloud, world.server)[0]["status"] == "error"


def test_a_server_deleted_while_copying_leaves_no_binding(cloud: Cloud,
                                                          slow: LiveWorld) -> None:
    world = slow
    live_migrate(cloud, world.server, wait=False)
    wait_copying(cloud, world.server)
    assert cloud.compute.delete(f"/servers/{world.server}").status_code == 204
    settle(cloud)
    world.assert_gone()
    # No binding with a host is left (read from the table: the ports are no server's).
    b = network_tables.port_bindings
    with cloud.live.db.read() as conn:
        left = conn.execute(sa.select(b.c.port_id, b.c.host, b.c.status)
                            .where(b.c.port_id.in_([world.normal, world.direct]))).all()
    assert sorted((r.port_id, r.host, r.status) for r in left) == sorted(
        [(world.normal, "", "ACTIVE"), (world.direct, "", "ACTIVE")])
    assert_invariants(cloud)
