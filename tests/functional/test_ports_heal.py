"""`heal-allocations` heals the port part of an allocation and the bindings that name it.

    host1  br-physnet0, ens5 (4 VFs)     the server: a normal QoS port (bridge) and a
    host2  br-physnet0, ens5 (4 VFs)     direct one (bandwidth + a VF on the PF)

Run as an operator would: a separate process on the live server's database.
A port whose bandwidth is missing from the instance's allocation gets it back
on the provider its binding names; a port whose binding names no allocation
gets the first candidate of the host's tree, and its binding is written;
`--skip-port-allocations` leaves ports alone, as Nova's; `--dry-run` shows it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.functional.conftest import Cloud
from tests.functional.ports import QOS, MovingServer, holding
from tests.functional.servers import assert_invariants, flavor_amounts
from tests.functional.test_heal import manage

SMALL = flavor_amounts(1, 512, 5)


@pytest.fixture
def world(cloud: Cloud) -> Iterator[MovingServer]:
    cloud.configure(update_resources_interval=86400)  # no periodic reconcile meanwhile
    made = MovingServer(cloud)
    assert holding(cloud, made.server) == made.on("host1", SMALL)
    yield made
    made.nets.close()


def _hold(cloud: Cloud, consumer: str, allocations: dict[str, dict[str, int]]) -> None:
    """Replace what `consumer` holds (an outage's damage, done by hand)."""
    now = cloud.placement.get(f"/allocations/{consumer}").json()
    body = {"allocations": {rp: {"resources": res} for rp, res in allocations.items()},
            "project_id": now["project_id"], "user_id": now["user_id"],
            "consumer_generation": now["consumer_generation"], "consumer_type": "INSTANCE"}
    resp = cloud.placement.put(f"/allocations/{consumer}", json=body)
    assert resp.status_code == 204, resp.text


def _profile(world: MovingServer, port: str, profile: dict[str, Any]) -> None:
    resp = world.nets.client.put(f"/v2.0/ports/{port}", json={"port": {
        "binding:profile": profile}})
    assert resp.status_code == 200, resp.text


def test_missing_port_bandwidth_is_healed_and_dry_run_changes_nothing(
        cloud: Cloud, world: MovingServer) -> None:
    h = world.hosts["host1"]
    broken = {rp: res for rp, res in world.on("host1", SMALL).items() if rp != h.bridge}
    _hold(cloud, world.server, broken)
    assert manage(cloud, "audit").returncode == 1

    dry = manage(cloud, "heal-allocations", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert f"{world.server}: would heal port allocations" in dry.stdout, dry.stdout
    assert holding(cloud, world.server) == broken

    done = manage(cloud, "heal-allocations")
    assert done.returncode == 0, done.stderr
    assert f"{world.server}: port allocations healed" in done.stdout, done.stdout
    assert holding(cloud, world.server) == world.on("host1", SMALL)
    world.assert_ports_on("host1")
    assert_invariants(cloud)
    again = manage(cloud, "heal-allocations")
    assert again.returncode == 4, again.stdout + again.stderr


def test_a_port_binding_without_allocation_is_healed(cloud: Cloud,
                                                     world: MovingServer) -> None:
    h = world.hosts["host1"]
    _hold(cloud, world.server, {h.node: SMALL, h.pf: world.on("host1", SMALL)[h.pf]})
    profile = world.nets.port(world.normal)["binding:profile"]
    _profile(world, world.normal, {k: v for k, v in profile.items() if k != "allocation"})
    direct_profile = world.nets.port(world.direct)["binding:profile"]

    done = manage(cloud, "heal-allocations")
    assert done.returncode == 0, done.stdout + done.stderr
    assert holding(cloud, world.server) == world.on("host1", SMALL)
    world.assert_ports_on("host1")
    assert world.nets.port(world.direct)["binding:profile"] == direct_profile
    assert_invariants(cloud)


def test_skip_port_allocations_leaves_ports_alone(cloud: Cloud, world: MovingServer) -> None:
    h = world.hosts["host1"]
    broken = {rp: res for rp, res in world.on("host1", SMALL).items() if rp != h.bridge}
    _hold(cloud, world.server, broken)
    skipped = manage(cloud, "heal-allocations", "--skip-port-allocations")
    assert skipped.returncode == 4, skipped.stdout + skipped.stderr
    assert world.server not in skipped.stdout  # not a mismatch either
    assert holding(cloud, world.server) == broken


def test_healthy_servers_with_ports_need_nothing(cloud: Cloud, world: MovingServer) -> None:
    done = manage(cloud, "heal-allocations", "--verbose")
    assert done.returncode == 4, done.stdout + done.stderr
    assert f"{world.server}: allocations match the flavor" in done.stdout


def test_no_room_for_the_port_fails_and_changes_nothing(cloud: Cloud,
                                                       world: MovingServer) -> None:
    h = world.hosts["host1"]
    assert h.bridge is not None
    broken = {rp: res for rp, res in world.on("host1", SMALL).items() if rp != h.bridge}
    _hold(cloud, world.server, broken)
    profile = world.nets.port(world.normal)["binding:profile"]
    _profile(world, world.normal, {k: v for k, v in profile.items() if k != "allocation"})
    filler = "c0ffee00-0000-4000-8000-000000000001"
    resp = cloud.placement.put(f"/allocations/{filler}", json={
        "allocations": {h.bridge: {"resources": {rc: 10_000 - n + 1 for rc, n in QOS.items()}}},
        "project_id": "p", "user_id": "u", "consumer_generation": None,
        "consumer_type": "INSTANCE"})
    assert resp.status_code == 204, resp.text

    done = manage(cloud, "heal-allocations", "--instance", world.server)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "no provider of host host1 can serve port" in done.stdout
    assert holding(cloud, world.server) == broken
    assert "allocation" not in world.nets.port(world.normal)["binding:profile"]
