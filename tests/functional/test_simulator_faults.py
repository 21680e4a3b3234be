"""Faults injected from outside, through `/os-simulator/hosts/{host}/faults` (docs/faults.md).

    host1: the server (small)        host2: the first choice        host3: the alternate

The hosts are equal; the spread weigher breaks ties by name, so a server
boots on host1 and a move goes to host2 first, host3 being its alternate.
Each test arms a fault as an operator would (admin, over HTTP), then checks
what the user sees and what Placement says each consumer holds.
"""

from __future__ import annotations

import datetime
from typing import Any

import pytest
import sqlalchemy as sa

from stowage.compute import tables as compute_tables
from stowage.compute.agent.faults import FaultSpec
from stowage.compute.hosts import HostConfig
from stowage.timeutil import utcnow
from tests.functional.conftest import Cloud
from tests.functional.evacuation import evacuate, server_on_host1
from tests.functional.faults import arm, armed, faults_path, wait_killed
from tests.functional.servers import (
    EMPTY,
    action,
    assert_invariants,
    boot,
    flavor,
    flavor_amounts,
    held,
    image,
    migrations_of,
    server,
    start_agent,
    usages,
)

SMALL = flavor_amounts(1, 512, 5)
LARGE = flavor_amounts(2, 1024, 10)
HOSTS = ("host1", "host2", "host3")


@pytest.fixture
def hosts(cloud: Cloud) -> dict[str, str]:
    """The three hosts, the flavors, and the small server on host1."""
    nodes = {name: cloud.add_host(name, vcpus=16, memory_mb=8192, disk_gb=100)
             for name in HOSTS}
    nodes["small"] = flavor(cloud, "small", 1, 512, 5)
    nodes["large"] = flavor(cloud, "large", 2, 1024, 10)
    nodes["server"] = boot(cloud, "vm", nodes["small"], image(cloud))
    assert server(cloud, nodes["server"])["OS-EXT-SRV-ATTR:host"] == "host1"
    return nodes


# --- steps that fail -----------------------------------------------------------------
def test_prep_resize_failing_once_reschedules_the_resize(cloud: Cloud,
                                                         hosts: dict[str, str]) -> None:
    fault = arm(cloud, "host2", "prep_resize", error="no room after all")
    assert (fault["step"], fault["mode"], fault["remaining"], fault["error"]) == (
        "prep_resize", "once", 1, "no room after all")

    action(cloud, hosts["server"], {"resize": {"flavorRef": hosts["large"]}})
    view = server(cloud, hosts["server"])
    assert (view["status"], view["OS-EXT-SRV-ATTR:host"]) == ("VERIFY_RESIZE", "host3")
    [mig] = migrations_of(cloud, hosts["server"])
    assert (mig["status"], mig["dest_compute"]) == ("finished", "host3")
    assert held(cloud, str(mig["uuid"])) == {hosts["host1"]: SMALL}
    assert held(cloud, hosts["server"]) == {hosts["host3"]: LARGE}
    assert usages(cloud, hosts["host2"]) == EMPTY
    assert armed(cloud, "host2") == []  # it fired once and is gone
    assert_invariants(cloud)

    action(cloud, hosts["server"], {"confirmResize": None}, status=204)
    assert held(cloud, hosts["server"]) == {hosts["host3"]: LARGE}
    assert held(cloud, str(mig["uuid"])) == {}
    assert_invariants(cloud)


def test_prep_resize_failing_everywhere_rolls_the_resize_back(
        cloud: Cloud, hosts: dict[str, str]) -> None:
    for name in ("host2", "host3"):
        arm(cloud, name, "prep_resize", mode="always")

    action(cloud, hosts["server"], {"resize": {"flavorRef": hosts["large"]}})
    view = server(cloud, hosts["server"])
    assert (view["status"], view["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", "host1")
    [mig] = migrations_of(cloud, hosts["server"])
    assert mig["status"] == "error"
    assert held(cloud, str(mig["uuid"])) == {}
    assert held(cloud, hosts["server"]) == {hosts["host1"]: SMALL}
    assert usages(cloud, hosts["host2"]) == usages(cloud, hosts["host3"]) == EMPTY
    [left] = armed(cloud, "host2")
    assert (left["mode"], left["remaining"]) == ("always", None)
    assert_invariants(cloud)


def test_spawn_failing_always_ends_the_build_in_error(cloud: Cloud) -> None:
    nodes = [cloud.add_host(h, vcpus=16, memory_mb=8192, disk_gb=100)
             for h in ("host1", "host2")]
    for name in ("host1", "host2"):
        arm(cloud, name, "spawn", mode="always", error="disk full")
    small = flavor(cloud, "small", 1, 512, 5)

    server_id = boot(cloud, "vm", small, image(cloud))
    view = server(cloud, server_id)
    assert view["status"] == "ERROR"
    assert "Exceeded maximum number of retries" in view["fault"]["message"]
    assert held(cloud, server_id) == {}
    for node in nodes:
        assert usages(cloud, node) == EMPTY
    assert_invariants(cloud)

    # Cleared, the next build works.
    for name in ("host1", "host2"):
        assert cloud.compute.delete(faults_path(name)).status_code == 204
        assert armed(cloud, name) == []
    assert server(cloud, boot(cloud, "vm2", small, image(cloud)))["status"] == "ACTIVE"


def test_spawn_failing_n_times_counts_down(cloud: Cloud) -> None:
    cloud.add_host("host1", vcpus=16, memory_mb=8192, disk_gb=100)
    small = flavor(cloud, "small", 1, 512, 5)
    fault = arm(cloud, "host1", "spawn", mode="times", times=2)
    assert (fault["mode"], fault["remaining"]) == ("times", 2)

    first = boot(cloud, "vm1", small, image(cloud))
    assert server(cloud, first)["status"] == "ERROR"
    [left] = armed(cloud, "host1")
    assert (left["id"], left["remaining"]) == (fault["id"], 1)
    assert server(cloud, boot(cloud, "vm2", small, image(cloud)))["status"] == "ERROR"
    assert armed(cloud, "host1") == []
    assert server(cloud, boot(cloud, "vm3", small, image(cloud)))["status"] == "ACTIVE"


def test_a_live_migration_pre_check_failing_reschedules(cloud: Cloud,
                                                        hosts: dict[str, str]) -> None:
    arm(cloud, "host2", "check_can_live_migrate_destination")
    with cloud.client("admin") as client:
        resp = client.post(f"/servers/{hosts['server']}/action",
                           json={"os-migrateLive": {"host": None, "block_migration": "auto"}})
    assert resp.status_code == 202, resp.text
    assert cloud.plane.drain(60)

    view = server(cloud, hosts["server"])
    assert (view["status"], view["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", "host3")
    assert held(cloud, hosts["server"]) == {hosts["host3"]: SMALL}
    assert usages(cloud, hosts["host2"]) == EMPTY
    assert_invariants(cloud)


def test_one_fault_is_disarmed_by_id(cloud: Cloud, hosts: dict[str, str]) -> None:
    spawn = arm(cloud, "host2", "spawn", mode="always")
    power = arm(cloud, "host2", "power_off")
    assert cloud.compute.delete(f"{faults_path('host2')}/{spawn['id']}").status_code == 204
    assert [f["id"] for f in armed(cloud, "host2")] == [power["id"]]
    resp = cloud.compute.delete(f"{faults_path('host2')}/{spawn['id']}")
    assert resp.status_code == 404
    assert resp.json()["itemNotFound"]["message"] == f"Fault {spawn['id']} could not be found."


def test_arming_a_step_again_replaces_its_fault(cloud: Cloud, hosts: dict[str, str]) -> None:
    arm(cloud, "host2", "spawn", mode="always")
    again = arm(cloud, "host2", "spawn", mode="times", times=3)
    assert [(f["id"], f["remaining"]) for f in armed(cloud, "host2")] == [(again["id"], 3)]


# --- heartbeats and the agent ------------------------------------------------------
def _last_seen(cloud: Cloud) -> dict[str, datetime.datetime | None]:
    s = compute_tables.services
    with cloud.live.cell_db.read() as conn:
        rows = conn.execute(sa.select(s.c.host, s.c.last_seen_up)
                            .where(s.c.binary == "nova-compute")).all()
    return {r.host: r.last_seen_up for r in rows}


def _age_heartbeats(cloud: Cloud) -> datetime.datetime:
    """Every compute service last seen an hour ago (longer than service_down_time)."""
    long_ago = (utcnow() - datetime.timedelta(hours=1)).replace(microsecond=0)
    s = compute_tables.services
    with cloud.live.cell_db.write() as conn:
        conn.execute(sa.update(s).where(s.c.binary == "nova-compute")
                     .values(last_seen_up=long_ago))
    return long_ago


def _state(cloud: Cloud, host: str) -> str:
    listed = cloud.compute.get("/os-services", params={"binary": "nova-compute"}).json()
    return str(next(s["state"] for s in listed["services"] if s["host"] == host))


def test_stopped_heartbeats_take_the_service_down_and_allow_evacuate(cloud: Cloud) -> None:
    nodes = server_on_host1(cloud)
    fault = arm(cloud, "host1", "heartbeat", mode="always")
    assert fault["step"] == "heartbeat"
    long_ago = _age_heartbeats(cloud)

    cloud.plane._heartbeats()  # one round of this process's heartbeats
    seen = _last_seen(cloud)
    assert seen["host1"] == long_ago
    assert seen["host2"] is not None and seen["host2"] > long_ago
    assert (_state(cloud, "host1"), _state(cloud, "host2")) == ("down", "up")

    evacuate(cloud, nodes["server"])
    view = server(cloud, nodes["server"])
    assert (view["status"], view["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", "host2")
    assert held(cloud, nodes["server"]) == {nodes["host2"]: SMALL}
    assert_invariants(cloud)

    # Cleared, host1 beats again.
    assert cloud.compute.delete(faults_path("host1")).status_code == 204
    cloud.plane._heartbeats()
    assert _state(cloud, "host1") == "up"


def test_a_killed_agent_stops_answering_and_can_be_started_again(
        cloud: Cloud, hosts: dict[str, str]) -> None:
    config = cloud.plane.agent("host1").host
    fault = arm(cloud, "host1", "agent")
    assert (fault["step"], fault["mode"]) == ("agent", "once")
    wait_killed(cloud, "host1")

    resp = cloud.compute.get(faults_path("host1"))
    assert resp.status_code == 409
    assert resp.json()["conflictingRequest"]["message"] == (
        "Compute service of host1 is unavailable at this time.")
    # Its heartbeats stopped with it: once aged, they stay old.
    long_ago = _age_heartbeats(cloud)
    cloud.plane._heartbeats()
    assert _last_seen(cloud)["host1"] == long_ago
    assert _state(cloud, "host1") == "down"

    start_agent(cloud, config)
    assert armed(cloud, "host1") == []
    assert _state(cloud, "host1") == "up"
    assert held(cloud, hosts["server"]) == {hosts["host1"]: SMALL}
    assert_invariants(cloud)


# --- the hosts file ------------------------------------------------------------------
def test_faults_of_the_host_config_are_armed_when_the_agent_starts(cloud: Cloud) -> None:
    cloud.plane.add_host(HostConfig(name="host1", faults=(
        FaultSpec("spawn", None, "configured"), FaultSpec("prep_resize", 2))))
    listed = {f["step"]: (f["mode"], f["remaining"], f["error"])
              for f in armed(cloud, "host1")}
    assert listed == {"spawn": ("always", None, "configured"),
                      "prep_resize": ("times", 2, "injected fault in prep_resize on host1")}

    server_id = boot(cloud, "vm", flavor(cloud, "small", 1, 512, 5), image(cloud))
    view = server(cloud, server_id)
    assert view["status"] == "ERROR"
    assert held(cloud, server_id) == {}


# --- refusals ------------------------------------------------------------------------
class _OtherDriver:
    """Any driver but the simulated hypervisor (it forwards to one, but is not one)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def test_a_host_that_is_not_simulated_is_409(cloud: Cloud) -> None:
    cloud.add_host("host1")
    agent = cloud.plane.agent("host1")
    agent.driver = _OtherDriver(agent.driver)  # type: ignore[assignment]
    for resp in (cloud.compute.get(faults_path("host1")),
                 cloud.compute.post(faults_path("host1"), json={"fault": {"step": "spawn"}}),
                 cloud.compute.delete(faults_path("host1"))):
        assert resp.status_code == 409, resp.text
        assert resp.json()["conflictingRequest"]["message"] == (
            "host host1 does not run the simulated hypervisor; only simulated hosts take "
            "faults")


def test_an_unknown_host_is_404(cloud: Cloud) -> None:
    cloud.add_host("host1")
    for resp in (cloud.compute.get(faults_path("nohost")),
                 cloud.compute.post(faults_path("nohost"), json={"fault": {"step": "spawn"}}),
                 cloud.compute.delete(faults_path("nohost")),
                 cloud.compute.delete(faults_path("nohost") + "/x")):
        assert resp.status_code == 404, resp.text
        assert resp.json()["itemNotFound"]["message"] == "Compute host nohost could not be found."


@pytest.mark.parametrize("fault", [
    {"step": "nosuchstep"},
    {"step": "spawn", "mode": "sometimes"},
    {"step": "spawn", "times": 0},
    {"step": "spawn", "mode": "once", "times": 2},
    {"step": "spawn", "mode": "times"},
    {"step": "spawn", "mode": "always", "times": 2},
    {"step": "spawn", "error": ""},
    {"step": "spawn", "error": "x" * 256},
    {"step": "spawn", "extra": 1},
    {"step": "agent", "mode": "always"},
    {},
])
def test_bad_faults_are_400_and_arm_nothing(cloud: Cloud, fault: dict[str, Any]) -> None:
    cloud.add_host("host1")
    resp = cloud.compute.post(faults_path("host1"), json={"fault": fault})
    assert resp.status_code == 400, resp.text
    assert resp.json()["badRequest"]["message"].startswith("Invalid input for field/attribute")
    assert armed(cloud, "host1") == []
    assert "host1" in cloud.plane.agents


def test_only_admins_may_touch_faults(cloud: Cloud) -> None:
    cloud.add_host("host1")
    arm(cloud, "host1", "spawn")
    with cloud.client("demo:p1", roles=("member", "reader")) as member:
        for resp, rule in (
                (member.get(faults_path("host1")), "index"),
                (member.post(faults_path("host1"), json={"fault": {"step": "agent"}}), "create"),
                (member.delete(faults_path("host1")), "delete"),
                (member.delete(faults_path("host1") + "/x"), "delete")):
            assert resp.status_code == 403, resp.text
            assert f"os_compute_api:os-simulator:faults:{rule}" in (
                resp.json()["forbidden"]["message"])
    assert len(armed(cloud, "host1")) == 1
    assert "host1" in cloud.plane.agents
