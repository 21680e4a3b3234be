"""Rolling upgrade: a move of a server with QoS ports is refused while a compute is too old.

    host1  br-physnet0, ens5 (4 VFs)     the server (a normal and a direct QoS port)
    host2  br-physnet0, ens5 (4 VFs)     the destination; its `service_version` varies
    host3  br-physnet0, ens5 (4 VFs)     an alternate (weighed last), current version

The API refuses resize and migrate (400, Nova's message) while any compute
is older than Nova Ussuri's 49; the conductor skips a destination older than
39, or every destination while `[upgrade_levels] compute` pins the RPC below
5.2, and fails the move with MaxRetriesExceeded when none is left. Whatever is
refused leaves the server where it was: same allocation per provider, ports
bound on host1, VFs on host1's PF, no migration holding anything.

Evacuate and unshelve (offloaded) check each destination the same way in
the conductor (an old host skipped for the next alternate; none left: the
evacuated server ERROR on host1 holding it, the unshelved one still
SHELVED_OFFLOADED holding nothing). Attaching a port with a resource request
is refused (400) while the server's host's compute is older than 55.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from stowage.compute import upgrade
from tests.functional.conftest import Cloud
from tests.functional.evacuation import evacuate
from tests.functional.live import live_migrate
from tests.functional.ports import QOS, QOS_VF, MovingServer, holding, net_host, vf_usage
from tests.functional.servers import (
    action,
    assert_invariants,
    boot,
    flavor,
    flavor_amounts,
    force_down,
    image,
    migrations_of,
    server,
    stop_agent,
)
from tests.functional.shelving import event_names
from tests.functional.test_ports_interfaces import World as AttachWorld

SMALL = flavor_amounts(1, 512, 5)
LARGE = flavor_amounts(2, 1024, 10)
REFUSED = ("action on a server with ports having resource requests, like a port with a QoS "
           "minimum bandwidth policy, is not supported until every nova-compute is upgraded "
           "to Ussuri")


class World(MovingServer):
    def assert_on_host1(self) -> None:
        assert server(self.cloud, self.server)["status"] == "ACTIVE"
        assert server(self.cloud, self.server)["OS-EXT-SRV-ATTR:host"] == "host1"
        assert holding(self.cloud, self.server) == self.on("host1", SMALL)
        for mig in migrations_of(self.cloud, self.server):
            assert holding(self.cloud, str(mig["uuid"])) == {}
        self.assert_ports_on("host1")
        assert {h: vf_usage(self.cloud, h)["ens5"] for h in self.hosts} == {
            h: 1 if h == "host1" else 0 for h in self.hosts}
        assert_invariants(self.cloud)


def _world(cloud: Cloud, host2_version: int | None) -> World:
    made = World(cloud)
    if host2_version is not None:
        _set_version(cloud, "host2", host2_version)
    return made


def _set_version(cloud: Cloud, host: str, version: int) -> None:
    """The host's compute restarted at an older (or newer) version."""
    agent = cloud.plane.agent(host)
    with cloud.live.cell_db.write() as conn:
        from stowage.compute import services
        services.ensure_service(conn, host, services.COMPUTE, agent.host.availability_zone,
                                version)


@pytest.fixture
def world(cloud: Cloud) -> Iterator[World]:
    made = _world(cloud, None)
    yield made
    made.nets.close()


def _bodies(world: World) -> dict[str, dict[str, object]]:
    return {"resize": {"resize": {"flavorRef": world.large}}, "migrate": {"migrate": None}}


@pytest.mark.parametrize("version", [38, 45])
@pytest.mark.parametrize("move", ["resize", "migrate"])
def test_the_api_refuses_while_a_compute_is_older_than_ussuri(
        cloud: Cloud, world: World, move: str, version: int) -> None:
    _set_version(cloud, "host2", version)
    resp = action(cloud, world.server, _bodies(world)[move], status=400)
    assert f"The {move} {REFUSED}" in resp.json()["badRequest"]["message"]
    assert migrations_of(cloud, world.server) == []
    world.assert_on_host1()

    _set_version(cloud, "host2", upgrade.QOS_MOVE_ALL_COMPUTES)  # upgraded: allowed again
    action(cloud, world.server, _bodies(world)[move])
    assert server(cloud, world.server)["status"] == "VERIFY_RESIZE"
    assert server(cloud, world.server)["OS-EXT-SRV-ATTR:host"] == "host2"
    world.assert_ports_on("host2")
    assert_invariants(cloud)


def test_a_server_without_qos_ports_moves_among_old_computes(cloud: Cloud,
                                                             world: World) -> None:
    _set_version(cloud, "host2", 38)
    vm = boot(cloud, "plain", flavor(cloud, "tiny", 1, 256, 1), image(cloud, "i2"))
    action(cloud, vm, {"migrate": None})
    assert server(cloud, vm)["status"] == "VERIFY_RESIZE"


@pytest.mark.parametrize("pin", ["5.1", "4.22"])
def test_a_compute_rpc_pinned_below_5_2_refuses_every_destination(
        cloud: Cloud, world: World, pin: str) -> None:
    cloud.configure(upgrade_levels_compute=pin)
    action(cloud, world.server, {"resize": {"flavorRef": world.large}})
    [mig] = migrations_of(cloud, world.server)
    assert mig["status"] == "error"
    world.assert_on_host1()
    fault = cloud.compute.get(f"/servers/{world.server}").json()["server"]
    events = cloud.compute.get(f"/servers/{world.server}/os-instance-actions").json()
    assert events["instanceActions"][0]["action"] == "resize"
    assert fault["status"] == "ACTIVE"

    cloud.configure(upgrade_levels_compute="auto")  # every compute is current: 6.2
    action(cloud, world.server, {"resize": {"flavorRef": world.large}})
    assert server(cloud, world.server)["status"] == "VERIFY_RESIZE"


def test_the_conductor_skips_an_old_destination_for_a_new_alternate(
        cloud: Cloud, world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """The API's check passed (a compute was downgraded right after it): the conductor
    drops host2's claim and moves the server to host3. (With `auto`, host2's version
    would pin the RPC below 5.2 and refuse host3 too: the pin is set here.)"""
    world.hosts["host3"] = net_host(cloud, "host3", vfs=4, memory_mb=16384)
    cloud.configure(upgrade_levels_compute="6.2")
    monkeypatch.setattr(upgrade, "refusal", lambda *args: None)
    _set_version(cloud, "host2", upgrade.QOS_MOVE_HOST - 1)
    action(cloud, world.server, {"resize": {"flavorRef": world.large}})
    view = server(cloud, world.server)
    assert (view["status"], view["OS-EXT-SRV-ATTR:host"]) == ("VERIFY_RESIZE", "host3")
    [mig] = migrations_of(cloud, world.server)
    assert holding(cloud, world.server) == world.on("host3", LARGE)
    assert holding(cloud, str(mig["uuid"])) == world.on("host1", SMALL)
    assert holding(cloud, world.hosts["host2"].node) == {}
    world.assert_ports_on("host3")
    assert vf_usage(cloud, "host2") == {"ens5": 0}
    assert_invariants(cloud)


def test_no_new_enough_destination_fails_the_move(cloud: Cloud, world: World,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(upgrade, "refusal", lambda *args: None)
    _set_version(cloud, "host2", upgrade.QOS_MOVE_HOST - 1)
    action(cloud, world.server, {"migrate": None})
    [mig] = migrations_of(cloud, world.server)
    assert mig["status"] == "error"
    world.assert_on_host1()


def test_an_agent_reports_its_service_version(cloud: Cloud) -> None:
    net_host(cloud, "old1", service_version=38)
    net_host(cloud, "new1")
    from stowage.compute import services
    with cloud.live.cell_db.read() as conn:
        assert upgrade.host_version(conn, "old1") == 38
        assert upgrade.host_version(conn, "new1") == upgrade.SERVICE_VERSION
        assert upgrade.min_compute_version(conn) == 38
        assert upgrade.rpc_pin(conn, "auto") == (5, 0)
        assert upgrade.rpc_pin(conn, "5.1") == (5, 1)
        assert services.compute_service(conn, "old1") is not None


def test_the_api_refuses_a_live_migration_while_a_compute_is_older_than_ussuri(
        cloud: Cloud, world: World) -> None:
    _set_version(cloud, "host2", upgrade.QOS_MOVE_ALL_COMPUTES - 1)
    resp = live_migrate(cloud, world.server)
    assert resp.status_code == 400, resp.text
    assert f"The os-migrateLive {REFUSED}" in resp.json()["badRequest"]["message"]
    assert migrations_of(cloud, world.server) == []
    world.assert_on_host1()


def test_the_api_refuses_to_unshelve_an_offloaded_server_while_a_compute_is_old(
        cloud: Cloud, world: World) -> None:
    action(cloud, world.server, {"shelve": None})
    if server(cloud, world.server)["status"] == "SHELVED":
        action(cloud, world.server, {"shelveOffload": None})
    assert server(cloud, world.server)["status"] == "SHELVED_OFFLOADED"
    _set_version(cloud, "host2", upgrade.QOS_MOVE_ALL_COMPUTES - 1)
    resp = action(cloud, world.server, {"unshelve": None}, status=400)
    assert f"The unshelve {REFUSED}" in resp.json()["badRequest"]["message"]
    assert server(cloud, world.server)["status"] == "SHELVED_OFFLOADED"
    assert holding(cloud, world.server) == {}
    assert_invariants(cloud)

    _set_version(cloud, "host2", upgrade.QOS_MOVE_ALL_COMPUTES)
    action(cloud, world.server, {"unshelve": None})
    view = server(cloud, world.server)
    assert view["status"] == "ACTIVE"
    world.assert_ports_on(str(view["OS-EXT-SRV-ATTR:host"]))
    assert_invariants(cloud)


def test_a_live_migration_skips_an_old_destination_for_a_new_alternate(
        cloud: Cloud, world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """host2 fails the pre-check (too old) and host3 takes the guest."""
    world.hosts["host3"] = net_host(cloud, "host3", vfs=4, memory_mb=16384)
    cloud.configure(upgrade_levels_compute="6.2")
    monkeypatch.setattr(upgrade, "refusal", lambda *args: None)
    _set_version(cloud, "host2", upgrade.QOS_MOVE_HOST - 1)
    assert live_migrate(cloud, world.server).status_code == 202
    view = server(cloud, world.server)
    assert (view["status"], view["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", "host3")
    assert holding(cloud, world.server) == world.on("host3", SMALL)
    for mig in migrations_of(cloud, world.server):
        assert holding(cloud, str(mig["uuid"])) == {}
    world.assert_ports_on("host3")
    assert {h: vf_usage(cloud, h)["ens5"] for h in world.hosts} == {
        "host1": 0, "host2": 0, "host3": 1}
    assert_invariants(cloud)


@pytest.mark.parametrize("how", ["old_dest", "pinned"])
def test_a_live_migration_to_a_forced_old_host_fails_and_stays(
        cloud: Cloud, world: World, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    monkeypatch.setattr(upgrade, "refusal", lambda *args: None)
    if how == "old_dest":
        _set_version(cloud, "host2", upgrade.QOS_MOVE_HOST - 1)
    else:
        cloud.configure(upgrade_levels_compute="5.1")
    # Before 2.34 the API waits for the conductor's checks, as Nova's synchronous call:
    # the refused destination is a 400, and the migration record ends in error.
    assert live_migrate(cloud, world.server, "host2", version="2.30",
                        force=True).status_code == 400
    [mig] = migrations_of(cloud, world.server)
    assert mig["status"] in ("error", "failed")
    world.assert_on_host1()
    ports_on_host2 = vf_usage(cloud, "host2")
    assert ports_on_host2 == {"ens5": 0}


# --- evacuate and unshelve: each destination checked by the conductor -----------------------
def _old_computes_allowed(cloud: Cloud, monkeypatch: pytest.MonkeyPatch) -> None:
    """The API's check passed (computes downgraded right after it); the RPC pinned at 6.2
    so that only each destination's own version counts."""
    cloud.configure(upgrade_levels_compute="6.2")
    monkeypatch.setattr(upgrade, "refusal", lambda *args: None)


def _assert_evacuated_to(world: World, host: str) -> None:
    cloud = world.cloud
    view = server(cloud, world.server)
    assert (view["status"], view["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", host)
    [mig] = migrations_of(cloud, world.server)
    assert (mig["status"], mig["dest_compute"]) == ("done", host)
    assert holding(cloud, world.server) == world.on(host, SMALL)
    assert holding(cloud, str(mig["uuid"])) == world.on("host1", SMALL)
    world.assert_ports_on(host)
    assert {h: vf_usage(cloud, h)["ens5"] for h in world.hosts if h != "host1"} == {
        h: int(h == host) for h in world.hosts if h != "host1"}
    assert_invariants(cloud)


def test_the_api_refuses_to_evacuate_while_a_compute_is_older_than_ussuri(
        cloud: Cloud, world: World) -> None:
    assert force_down(cloud, "host1").status_code == 200
    _set_version(cloud, "host2", upgrade.QOS_MOVE_ALL_COMPUTES - 1)
    resp = evacuate(cloud, world.server, status=400)
    assert f"The evacuate {REFUSED}" in resp.json()["badRequest"]["message"]
    assert migrations_of(cloud, world.server) == []
    world.assert_on_host1()

    _set_version(cloud, "host2", upgrade.QOS_MOVE_ALL_COMPUTES)  # upgraded: allowed again
    evacuate(cloud, world.server)
    _assert_evacuated_to(world, "host2")


def test_an_evacuation_skips_an_old_destination_for_a_new_alternate(
        cloud: Cloud, world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    world.hosts["host3"] = net_host(cloud, "host3", vfs=4, memory_mb=16384)
    _old_computes_allowed(cloud, monkeypatch)
    _set_version(cloud, "host2", upgrade.QOS_MOVE_HOST - 1)
    stop_agent(cloud, "host1")
    evacuate(cloud, world.server)
    _assert_evacuated_to(world, "host3")
    assert holding(cloud, world.hosts["host2"].node) == {}


def test_an_evacuation_skips_an_old_alternate_after_a_refused_claim(
        cloud: Cloud, world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """host2 refuses the rebuild's claim; host3, the next alternate, is too old: host4."""
    world.hosts["host3"] = net_host(cloud, "host3", vfs=4, memory_mb=16384)
    world.hosts["host4"] = net_host(cloud, "host4", vfs=4, memory_mb=32768)
    _old_computes_allowed(cloud, monkeypatch)
    _set_version(cloud, "host3", upgrade.QOS_MOVE_HOST - 1)
    cloud.plane.agent("host2").driver.fail("claim")
    stop_agent(cloud, "host1")
    evacuate(cloud, world.server)
    _assert_evacuated_to(world, "host4")


@pytest.mark.parametrize("how", ["old_dest", "pinned"])
def test_an_evacuation_with_no_new_enough_destination_fails_on_the_source(
        cloud: Cloud, world: World, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    _old_computes_allowed(cloud, monkeypatch)
    if how == "old_dest":
        _set_version(cloud, "host2", upgrade.QOS_MOVE_HOST - 1)
    else:
        cloud.configure(upgrade_levels_compute="5.1")
    before = {p: world.nets.port(p)["binding:profile"] for p in (world.normal, world.direct)}
    stop_agent(cloud, "host1")
    evacuate(cloud, world.server)
    view = server(cloud, world.server)
    assert (view["status"], view["OS-EXT-SRV-ATTR:host"]) == ("ERROR", "host1")
    assert view["fault"]["code"] == 400
    assert "compute service level check" in view["fault"]["message"]
    [mig] = migrations_of(cloud, world.server)
    assert mig["status"] == "error"
    assert holding(cloud, str(mig["uuid"])) == {}
    assert holding(cloud, world.server) == world.on("host1", SMALL)
    assert holding(cloud, world.hosts["host2"].node) == {}
    world.assert_ports_on("host1")
    assert {p: world.nets.port(p)["binding:profile"] for p in before} == before
    assert vf_usage(cloud, "host2") == {"ens5": 0}
    assert_invariants(cloud)


def _offloaded(cloud: Cloud, world: World) -> None:
    cloud.configure(shelved_offload_time=0)
    action(cloud, world.server, {"shelve": None})
    assert server(cloud, world.server)["status"] == "SHELVED_OFFLOADED"


def _assert_offloaded(world: World) -> None:
    cloud = world.cloud
    view = server(cloud, world.server)
    assert (view["status"], view["OS-EXT-SRV-ATTR:host"]) == ("SHELVED_OFFLOADED", None)
    assert holding(cloud, world.server) == {}
    for name, h in world.hosts.items():
        assert holding(cloud, h.node) == {}, name
        assert vf_usage(cloud, name) == {"ens5": 0}, name
    for port_id in (world.normal, world.direct):
        port = world.nets.port(port_id)
        assert (port["device_id"], port["binding:host_id"]) == (world.server, "")
        assert "allocation" not in port["binding:profile"]
    assert_invariants(cloud)


def _assert_unshelved_on(world: World, host: str) -> None:
    cloud = world.cloud
    view = server(cloud, world.server)
    assert (view["status"], view["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", host)
    assert holding(cloud, world.server) == world.on(host, SMALL)
    world.assert_ports_on(host)
    assert {h: vf_usage(cloud, h)["ens5"] for h in world.hosts} == {
        h: int(h == host) for h in world.hosts}
    assert_invariants(cloud)


def test_an_unshelve_skips_old_hosts_for_a_new_one(
        cloud: Cloud, world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """host1 and host2 (weighed first) are too old: host3 takes the server."""
    world.hosts["host3"] = net_host(cloud, "host3", vfs=4)
    _offloaded(cloud, world)
    _old_computes_allowed(cloud, monkeypatch)
    for name in ("host1", "host2"):
        _set_version(cloud, name, upgrade.QOS_MOVE_HOST - 1)
    action(cloud, world.server, {"unshelve": None})
    _assert_unshelved_on(world, "host3")


def test_an_unshelve_skips_an_old_alternate_after_a_failed_spawn(
        cloud: Cloud, world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """host1's spawn fails; host2, the next alternate, is too old: host3."""
    world.hosts["host3"] = net_host(cloud, "host3", vfs=4)
    _offloaded(cloud, world)
    _old_computes_allowed(cloud, monkeypatch)
    _set_version(cloud, "host2", upgrade.QOS_MOVE_HOST - 1)
    cloud.plane.agent("host1").driver.fail("spawn")
    action(cloud, world.server, {"unshelve": None})
    _assert_unshelved_on(world, "host3")


@pytest.mark.parametrize("how", ["old_hosts", "pinned"])
def test_an_unshelve_with_no_new_enough_host_stays_offloaded(
        cloud: Cloud, world: World, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    _offloaded(cloud, world)
    _old_computes_allowed(cloud, monkeypatch)
    if how == "old_hosts":
        for name in ("host1", "host2"):
            _set_version(cloud, name, upgrade.QOS_MOVE_HOST - 1)
    else:
        cloud.configure(upgrade_levels_compute="5.1")
    action(cloud, world.server, {"unshelve": None})
    _assert_offloaded(world)
    assert event_names(cloud, world.server, "unshelve") == [("schedule_instances", "Error")]

    cloud.configure(upgrade_levels_compute="6.2")
    _set_version(cloud, "host2", upgrade.SERVICE_VERSION)
    action(cloud, world.server, {"unshelve": None})  # works once upgraded or unpinned
    _assert_unshelved_on(world, "host2" if how == "old_hosts" else "host1")


# --- interface attach: the server's host's compute must be new enough ----------------------
@pytest.mark.parametrize("vnic", ["normal", "direct"])
def test_attaching_a_qos_port_is_refused_while_the_servers_compute_is_old(
        cloud: Cloud, vnic: str) -> None:
    attaching = AttachWorld(cloud)
    try:
        _set_version(cloud, "host1", upgrade.QOS_ATTACH - 1)
        port = attaching.nets.qos_port("a", vnic=vnic)
        body = attaching.attach(400, port_id=port)
        assert body["badRequest"]["message"] == (
            f"Attaching interfaces with QoS policy is not supported for instance "
            f"{attaching.server}.")
        attaching.assert_unchanged(port)

        plain = attaching.nets.qos_port("plain", qos=False)  # no resource request: allowed
        attaching.attach(port_id=plain)
        attaching.nets.assert_bound(plain, attaching.server, "host1", None)
        attaching.detach(plain)

        _set_version(cloud, "host1", upgrade.QOS_ATTACH)  # upgraded: allowed
        attaching.attach(port_id=port)
        h = attaching.h
        held = {h.node: SMALL, h.bridge: QOS} if vnic == "normal" else {
            h.node: SMALL, h.pf: QOS_VF}
        assert holding(cloud, attaching.server) == held
        attaching.nets.assert_bound(port, attaching.server, "host1",
                                    h.bridge if vnic == "normal" else h.pf)
        assert vf_usage(cloud, "host1") == {"ens5": int(vnic == "direct")}
        assert_invariants(cloud)
    finally:
        attaching.nets.close()
