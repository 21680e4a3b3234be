"""A server's own host must be up to resize or migrate it (Nova's check_instance_host).

    h1 (the server's host)      h2 (where a move could go)
    8 VCPU, 8192 MB, 100 GB     8 VCPU, 8192 MB, 100 GB

Nova answers 409 "Service is unavailable at this time." to a resize or a
cold migration of a server whose compute service is down (no heartbeat
within service_down_time) or forced down: the host cannot hand its guest
over, and evacuate is the way. A disabled but live service (MAINTENANCE)
still moves its servers away.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

import pytest
import sqlalchemy as sa

from stowage.compute import tables as t
from stowage.timeutil import utcnow
from tests.functional import servers as sv
from tests.functional.conftest import Cloud

UNAVAILABLE = "Service is unavailable at this time."


@pytest.fixture
def booted(cloud: Cloud) -> dict[str, Any]:
    """One server on h1; h2 free; a bigger flavor to resize to."""
    node = cloud.add_host("h1", vcpus=8, memory_mb=8192, disk_gb=100)
    small = sv.flavor(cloud, "small", 1, 512, 5)
    big = sv.flavor(cloud, "big", 2, 1024, 10)
    server = sv.boot(cloud, "vm", small, sv.image(cloud))
    assert sv.host_of(cloud, server) == "h1"
    cloud.add_host("h2", vcpus=8, memory_mb=8192, disk_gb=100)
    return {"server": server, "node": node, "big": big}


def force_down(cloud: Cloud, host: str, down: bool = True) -> None:
    [service] = [s for s in cloud.compute.get("/os-services").json()["services"]
                 if s["host"] == host and s["binary"] == "nova-compute"]
    resp = cloud.compute.put(f"/os-services/{service['id']}", json={"forced_down": down})
    assert resp.status_code == 200, resp.text


def stop_agent(cloud: Cloud, host: str) -> None:
    """The agent dies: no more heartbeats; its last one is older than service_down_time."""
    cloud.plane.stop_host(host)
    long_ago = utcnow() - datetime.timedelta(hours=1)
    with cloud.live.cell_db.write() as conn:
        conn.execute(sa.update(t.services).where(t.services.c.host == host)
                     .values(last_seen_up=long_ago))


def resize_body(booted: dict[str, Any]) -> dict[str, Any]:
    return {"resize": {"flavorRef": booted["big"]}}


def migrate_body(booted: dict[str, Any]) -> dict[str, Any]:
    return {"migrate": None}


def migrate_to_h2_body(booted: dict[str, Any]) -> dict[str, Any]:
    return {"migrate": {"host": "h2"}}


MOVES = [pytest.param(resize_body, id="resize"), pytest.param(migrate_body, id="migrate"),
         pytest.param(migrate_to_h2_body, id="migrate-to-host")]
Body = Callable[[dict[str, Any]], dict[str, Any]]


@pytest.mark.parametrize("body", MOVES)
@pytest.mark.parametrize("take_down", [force_down, stop_agent], ids=["forced-down", "stopped"])
def test_a_move_from_a_down_host_is_refused_and_changes_nothing(
        cloud: Cloud, booted: dict[str, Any], body: Body,
        take_down: Callable[[Cloud, str], None]) -> None:
    server, node = booted["server"], booted["node"]
    before = sv.held(cloud, server)
    take_down(cloud, "h1")
    shown = sv.server(cloud, server)
    assert shown["host_status"] in ("DOWN", "UNKNOWN")

    resp = cloud.compute.post(f"/servers/{server}/action", json=body(booted))
    assert resp.status_code == 409, resp.text
    assert resp.json() == {"conflictingRequest": {"code": 409, "message": UNAVAILABLE}}
    sv.settle(cloud)

    shown = sv.server(cloud, server)
    assert (shown["status"], shown["OS-EXT-STS:task_state"]) == ("ACTIVE", None)
    assert shown["OS-EXT-SRV-ATTR:host"] == "h1"
    assert shown["flavor"]["original_name"] == "small"
    assert sv.migrations_of(cloud, server) == []
    assert sv.held(cloud, server) == before == {node: sv.flavor_amounts(1, 512, 5)}
    actions = cloud.compute.get(f"/servers/{server}/os-instance-actions").json()
    assert [a["action"] for a in actions["instanceActions"]] == ["create"]
    sv.assert_invariants(cloud)


def test_the_move_is_accepted_again_once_the_host_is_back(
        cloud: Cloud, booted: dict[str, Any]) -> None:
    server = booted["server"]
    force_down(cloud, "h1")
    resp = cloud.compute.post(f"/servers/{server}/action", json=resize_body(booted))
    assert resp.status_code == 409, resp.text
    force_down(cloud, "h1", down=False)
    sv.action(cloud, server, resize_body(booted))
    shown = sv.server(cloud, server)
    assert (shown["status"], shown["OS-EXT-SRV-ATTR:host"]) == ("VERIFY_RESIZE", "h2")
    sv.assert_invariants(cloud)


def test_a_disabled_host_still_moves_its_servers_away(
        cloud: Cloud, booted: dict[str, Any]) -> None:
    """MAINTENANCE is not down: disabling a host is how an operator drains it."""
    server = booted["server"]
    [service] = [s for s in cloud.compute.get("/os-services").json()["services"]
                 if s["host"] == "h1" and s["binary"] == "nova-compute"]
    resp = cloud.compute.put(f"/os-services/{service['id']}", json={"status": "disabled"})
    assert resp.status_code == 200, resp.text
    assert sv.server(cloud, server)["host_status"] == "MAINTENANCE"
    sv.action(cloud, server, migrate_body(booted))
    shown = sv.server(cloud, server)
    assert (shown["status"], shown["OS-EXT-SRV-ATTR:host"]) == ("VERIFY_RESIZE", "h2")
    sv.assert_invariants(cloud)
