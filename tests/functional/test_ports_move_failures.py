"""A failure (or a delete) at every step of a move of a server with QoS ports.

    host1  br-physnet0, ens5 (4 VFs)     the server, with a normal and a direct QoS port
    host2  br-physnet0, ens5 (4 VFs)     the destination (and its faults)

After each failure the ports must point where the server is, with the
allocation it holds there; the migration holds nothing (or, while the resize
stays open, the source); the VFs are held where the allocation says. A
delete at any step leaves no allocation, no VF and no bound port.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.functional.conftest import Cloud
from tests.functional.ports import MovingServer, boot, holding, vf_usage
from tests.functional.servers import (
    action,
    assert_invariants,
    flavor_amounts,
    force_down,
    image,
    migrations_of,
    server,
    settle,
)
from tests.functional.test_delete_during_move import hold

SMALL = flavor_amounts(1, 512, 5)
LARGE = flavor_amounts(2, 1024, 10)


class World(MovingServer):
    def assert_on(self, host: str, flavor: dict[str, int], vfs: dict[str, int]) -> None:
        """The server holds `flavor` and its ports on `host`, its ports are bound there,
        and the hosts' VFs in use are `vfs` (host -> count)."""
        assert holding(self.cloud, self.server) == self.on(host, flavor)
        self.assert_ports_on(host)
        assert {name: vf_usage(self.cloud, name)["ens5"] for name in self.hosts} == vfs
        assert_invariants(self.cloud)

    def assert_gone(self) -> None:
        assert self.cloud.compute.get(f"/servers/{self.server}").status_code == 404
        assert holding(self.cloud, self.server) == {}
        for mig in migrations_of(self.cloud, self.server):
            assert holding(self.cloud, str(mig["uuid"])) == {}
        self.nets.assert_unbound(self.normal)
        self.nets.assert_unbound(self.direct)
        assert {name: vf_usage(self.cloud, name)["ens5"] for name in self.hosts} == {
            "host1": 0, "host2": 0}
        assert_invariants(self.cloud)


@pytest.fixture
def world(cloud: Cloud) -> Iterator[World]:
    made = World(cloud)
    yield made
    made.nets.close()


MOVES = ("resize", "migrate")


def _body(move: str, world: World) -> dict[str, Any]:
    return {"resize": {"flavorRef": world.large}} if move == "resize" else {"migrate": None}
# (agent, driver step that fails, server status afterwards)
STEPS = [
    pytest.param("host2", "claim", "ACTIVE", id="prep_resize"),
    pytest.param("host1", "migrate_disk_and_power_off", "ERROR", id="resize_instance"),
    pytest.param("host2", "finish_migration", "ERROR", id="finish_resize"),
]


@pytest.mark.parametrize("move", MOVES)
@pytest.mark.parametrize(("host", "step", "status"), STEPS)
def test_move_failure_leaves_the_ports_on_the_source(
        cloud: Cloud, world: World, move: str, host: str, step: str, status: str) -> None:
    cloud.plane.agent(host).driver.fail(step, times=None)
    action(cloud, world.server, _body(move, world))
    view = server(cloud, world.server)
    assert (view["status"], view["OS-EXT-SRV-ATTR:host"]) == (status, "host1")
    assert migrations_of(cloud, world.server)[0]["status"] == "error"
    assert holding(cloud, world.migration()) == {}
    world.assert_on("host1", SMALL, {"host1": 1, "host2": 0})


def test_no_valid_host_leaves_the_ports_on_the_source(cloud: Cloud, world: World) -> None:
    assert force_down(cloud, "host2").status_code == 200
    action(cloud, world.server, {"resize": {"flavorRef": world.large}})
    assert server(cloud, world.server)["status"] == "ACTIVE"
    world.assert_on("host1", SMALL, {"host1": 1, "host2": 0})


def test_not_enough_bandwidth_on_the_destination(cloud: Cloud, world: World) -> None:
    """host2's bridge is nearly full: the move finds no host and changes nothing."""
    filler = world.nets.client.post("/v2.0/qos/policies", json={"policy": {"name": "big"}})
    policy = filler.json()["policy"]["id"]
    world.nets.client.post(f"/v2.0/qos/policies/{policy}/minimum_bandwidth_rules", json={
        "minimum_bandwidth_rule": {"min_kbps": 9500, "direction": "egress"}})
    hog = world.nets.qos_port("hog", qos=False, qos_policy_id=policy)
    other = boot(cloud, "hog", world.large, image(cloud), [{"port": hog}])
    assert server(cloud, other)["OS-EXT-SRV-ATTR:host"] == "host2"
    action(cloud, world.server, {"migrate": None})
    view = server(cloud, world.server)
    assert (view["status"], view["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", "host1")
    assert "fault" not in view or view["status"] != "ERROR"
    world.assert_on("host1", SMALL, {"host1": 1, "host2": 0})


def test_revert_failing_on_the_destination_keeps_the_ports_there(
        cloud: Cloud, world: World) -> None:
    action(cloud, world.server, {"resize": {"flavorRef": world.large}})
    cloud.plane.agent("host2").driver.fail("destroy")
    action(cloud, world.server, {"revertResize": None})
    assert server(cloud, world.server)["status"] == "VERIFY_RESIZE"
    assert holding(cloud, world.migration()) == world.on("host1", SMALL)
    world.assert_on("host2", LARGE, {"host1": 1, "host2": 1})

    action(cloud, world.server, {"revertResize": None})  # the retry works
    assert holding(cloud, world.migration()) == {}
    world.assert_on("host1", SMALL, {"host1": 1, "host2": 0})


def test_revert_failing_on_the_source_binds_the_ports_there(
        cloud: Cloud, world: World) -> None:
    action(cloud, world.server, {"resize": {"flavorRef": world.large}})
    cloud.plane.agent("host1").driver.fail("finish_revert_migration")
    action(cloud, world.server, {"revertResize": None})
    view = server(cloud, world.server)
    assert (view["status"], view["OS-EXT-SRV-ATTR:host"]) == ("ERROR", "host1")
    assert holding(cloud, world.migration()) == {}
    world.assert_on("host1", SMALL, {"host1": 1, "host2": 0})


def test_confirm_failing_keeps_the_resize_open(cloud: Cloud, world: World) -> None:
    action(cloud, world.server, {"resize": {"flavorRef": world.large}})
    cloud.plane.agent("host1").driver.fail("confirm_migration")
    action(cloud, world.server, {"confirmResize": None}, status=204)
    assert server(cloud, world.server)["status"] == "VERIFY_RESIZE"
    assert holding(cloud, world.migration()) == world.on("host1", SMALL)
    world.assert_on("host2", LARGE, {"host1": 1, "host2": 1})

    action(cloud, world.server, {"confirmResize": None}, status=204)
    assert holding(cloud, world.migration()) == {}
    world.assert_on("host2", LARGE, {"host1": 0, "host2": 1})


MOVE_POINTS = [
    pytest.param("scheduler", "select_destinations", True, id="destination-claimed"),
    pytest.param("host2", "prep_resize", True, id="destination-prepared"),
    pytest.param("host1", "resize_instance", True, id="source-guest-set-aside"),
    pytest.param("host2", "finish_resize", False, id="ports-bound-to-destination"),
    pytest.param("host2", "finish_resize", True, id="destination-guest-running"),
]


@pytest.mark.parametrize(("where", "method", "after"), MOVE_POINTS)
def test_delete_during_a_move_releases_the_ports(
        cloud: Cloud, world: World, monkeypatch: pytest.MonkeyPatch,
        where: str, method: str, after: bool) -> None:
    held = hold(cloud, monkeypatch, where, method, after)
    resp = cloud.compute.post(f"/servers/{world.server}/action",
                              json={"resize": {"flavorRef": world.large}})
    assert resp.status_code == 202, resp.text
    assert held.reached.wait(30)
    assert cloud.compute.delete(f"/servers/{world.server}").status_code == 204
    held.release()
    settle(cloud)
    world.assert_gone()


END_POINTS: list[Any] = [
    pytest.param("revertResize", "host2", "revert_resize", True, id="destination-reverted"),
    pytest.param("revertResize", "host1", "finish_revert_resize", False,
                 id="ports-bound-to-source"),
    pytest.param("confirmResize", "host1", "confirm_resize", True, id="source-cleaned"),
]


@pytest.mark.parametrize(("act", "where", "method", "after"), END_POINTS)
def test_delete_while_confirming_or_reverting_releases_the_ports(
        cloud: Cloud, world: World, monkeypatch: pytest.MonkeyPatch,
        act: str, where: str, method: str, after: bool) -> None:
    action(cloud, world.server, {"resize": {"flavorRef": world.large}})
    held = hold(cloud, monkeypatch, where, method, after)
    resp = cloud.compute.post(f"/servers/{world.server}/action", json={act: None})
    assert resp.status_code in (202, 204), resp.text
    assert held.reached.wait(30)
    assert cloud.compute.delete(f"/servers/{world.server}").status_code == 204
    held.release()
    settle(cloud)
    world.assert_gone()
