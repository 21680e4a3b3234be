"""Live migrations the conductor refuses: 400 before 2.34 (Nova's API calls the conductor),
202 and a failed migration from 2.34 (it casts); what the server keeps either way.

    host1 (16 VCPU, 8192 MB, 100 GB)   host2 (same)   host3 (same)
      server (small: 1 VCPU, 512 MB, 5 GB)

Nova's API has no check of the source's compute service for os-migrateLive:
the conductor's `_check_host_is_up(source)` refuses a source that is down or
forced down, as its scheduler refuses a requested host that is. Either way
the server stays ACTIVE on host1 holding its allocation there, and the
migration ends `error` holding nothing.
"""

from __future__ import annotations

from typing import Any

import pytest

from stowage.compute import instances
from tests.functional.conftest import Cloud
from tests.functional.live import SMALL, guests, live_migrate, three_hosts
from tests.functional.servers import (
    assert_invariants,
    held,
    migrations_of,
    server,
)


@pytest.fixture
def hosts(cloud: Cloud) -> dict[str, str]:
    return three_hosts(cloud)


def _force_down(cloud: Cloud, host: str) -> None:
    listed = cloud.compute.get("/os-services", params={"binary": "nova-compute"}).json()
    [service] = [s for s in listed["services"] if s["host"] == host]
    resp = cloud.compute.put(f"/os-services/{service['id']}", json={"forced_down": True})
    assert resp.status_code == 200, resp.text


def _stayed_on_host1(cloud: Cloud, hosts: dict[str, str]) -> dict[str, Any]:
    """ACTIVE on host1 with no task, holding its flavor there, no guest elsewhere; its
    migrations `error` holding nothing; the audit clean. Returns the newest fault."""
    server_id = hosts["server"]
    view = server(cloud, server_id)
    assert (view["status"], view["OS-EXT-STS:task_state"],
            view["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", None, "host1")
    for mig in migrations_of(cloud, server_id):
        assert mig["status"] == "error"
        assert held(cloud, str(mig["uuid"])) == {}
    assert held(cloud, server_id) == {hosts["host1"]: SMALL}
    assert server_id not in guests(cloud, "host2")
    assert_invariants(cloud)
    with cloud.live.cell_db.read() as conn:
        return instances.latest_faults(conn, [server_id])[server_id]


@pytest.mark.parametrize("version", ["2.1", "2.25", "2.33"])
def test_before_2_34_a_source_forced_down_is_a_400(cloud: Cloud, hosts: dict[str, str],
                                                    version: str) -> None:
    cloud.plane.stop_host("host1")
    _force_down(cloud, "host1")
    resp = live_migrate(cloud, hosts["server"], version=version)
    assert resp.status_code == 400, resp.text
    assert resp.json() == {"badRequest": {
        "code": 400, "message": "Compute service of host1 is unavailable at this time."}}
    _stayed_on_host1(cloud, hosts)


def test_from_2_34_a_source_forced_down_fails_the_accepted_migration(
        cloud: Cloud, hosts: dict[str, str]) -> None:
    cloud.plane.stop_host("host1")
    _force_down(cloud, "host1")
    for version in ("2.34", "latest"):
        resp = live_migrate(cloud, hosts["server"], version=version)
        assert resp.status_code == 202, resp.text
    fault = _stayed_on_host1(cloud, hosts)
    assert (fault["code"], fault["message"]) == (
        400, "Compute service of host1 is unavailable at this time.")
    assert [m["status"] for m in migrations_of(cloud, hosts["server"])] == ["error", "error"]


@pytest.mark.parametrize(("version", "extra"), [("2.30", {}), ("2.33", {"force": False})])
def test_before_2_34_a_requested_host_the_scheduler_refuses_is_a_400(
        cloud: Cloud, hosts: dict[str, str], version: str, extra: dict[str, Any]) -> None:
    cloud.plane.stop_host("host3")
    _force_down(cloud, "host3")
    resp = live_migrate(cloud, hosts["server"], host="host3", version=version, **extra)
    assert resp.status_code == 400, resp.text
    assert resp.json()["badRequest"]["message"].startswith("No valid host was found.")
    _stayed_on_host1(cloud, hosts)
    assert held(cloud, hosts["server"]) == {hosts["host1"]: SMALL}


def test_before_2_30_a_forced_host_that_is_down_is_a_400(cloud: Cloud,
                                                         hosts: dict[str, str]) -> None:
    """Before 2.30 a requested host is forced: the conductor checks it is up itself."""
    cloud.plane.stop_host("host3")
    _force_down(cloud, "host3")
    resp = live_migrate(cloud, hosts["server"], host="host3", version="2.29")
    assert resp.status_code == 400, resp.text
    assert resp.json() == {"badRequest": {
        "code": 400, "message": "Compute service of host3 is unavailable at this time."}}
    _stayed_on_host1(cloud, hosts)


def test_from_2_34_a_requested_host_the_scheduler_refuses_is_a_202(
        cloud: Cloud, hosts: dict[str, str]) -> None:
    cloud.plane.stop_host("host3")
    _force_down(cloud, "host3")
    resp = live_migrate(cloud, hosts["server"], host="host3", version="2.34", force=False)
    assert resp.status_code == 202, resp.text
    fault = _stayed_on_host1(cloud, hosts)
    assert fault["code"] == 400
    assert fault["message"].startswith("No valid host was found.")


@pytest.mark.parametrize("version", ["2.1", "2.33"])
def test_before_2_34_an_accepted_live_migration_still_completes(
        cloud: Cloud, hosts: dict[str, str], version: str) -> None:
    """The wait ends at the conductor's checks; the copy goes on and completes."""
    resp = live_migrate(cloud, hosts["server"], version=version)
    assert resp.status_code == 202, resp.text
    view = server(cloud, hosts["server"])
    assert (view["status"], view["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", "host2")
    assert [m["status"] for m in migrations_of(cloud, hosts["server"])] == ["completed"]
    assert held(cloud, hosts["server"]) == {hosts["host2"]: SMALL}
    assert_invariants(cloud)
