"""Live migration: the server moves while it runs; who holds what, before, during and after.

    host1 (16 VCPU, 8192 MB, 100 GB)   host2 (same)   host3 (same)
      server (small: 1 VCPU, 512 MB, 5 GB)

During the copy the migration (by its uuid) holds the source allocation and
the instance the destination one; success drops the migration's, an abort
gives it back to the instance, and nothing leaks.
"""

from __future__ import annotations

import threading
import time

import pytest
import sqlalchemy as sa

from stowage.compute import tables as t
from tests.functional.conftest import Cloud
from tests.functional.faults import arm
from tests.functional.live import (
    MIB,
    SMALL,
    events,
    guests,
    in_progress,
    live_migrate,
    three_hosts,
    wait_copying,
)
from tests.functional.servers import (
    EMPTY,
    assert_invariants,
    held,
    migrations_of,
    server,
    settle,
    usages,
)


@pytest.fixture
def hosts(cloud: Cloud) -> dict[str, str]:
    return three_hosts(cloud)


@pytest.fixture
def slow(cloud: Cloud) -> dict[str, str]:
    """The same, with copies that last 20 s unless forced or aborted."""
    cloud.configure(sim_live_migration_seconds=20.0)
    return three_hosts(cloud)


def _assert_on(cloud: Cloud, hosts: dict[str, str], host: str) -> dict[str, object]:
    """ACTIVE on `host`, holding its flavor there and nothing elsewhere; the migration none."""
    server_id = hosts["server"]
    view = server(cloud, server_id)
    assert (view["status"], view["OS-EXT-STS:task_state"]) == ("ACTIVE", None)
    assert view["OS-EXT-SRV-ATTR:host"] == host
    [mig] = migrations_of(cloud, server_id)
    assert mig["migration_type"] == "live-migration"
    assert held(cloud, server_id) == {hosts[host]: SMALL}
    assert held(cloud, str(mig["uuid"])) == {}
    for other in ("host1", "host2", "host3"):
        if other != host:
            assert usages(cloud, hosts[other]) == EMPTY
            assert server_id not in guests(cloud, other)
    assert guests(cloud, host) == [server_id]
    assert in_progress(cloud, server_id) == []
    assert_invariants(cloud)
    return mig


def test_live_migration_to_a_host_the_scheduler_picks(cloud: Cloud,
                                                      hosts: dict[str, str]) -> None:
    resp = live_migrate(cloud, hosts["server"])
    assert resp.status_code == 202 and resp.content == b""

    mig = _assert_on(cloud, hosts, "host2")
    assert (mig["status"], mig["source_compute"], mig["dest_compute"]) == (
        "completed", "host1", "host2")
    assert events(cloud, hosts["server"], "live-migration") == [
        ("conductor_live_migrate_instance", None, "Success"),
        ("compute_check_can_live_migrate_destination", "host2", "Success"),
        ("compute_check_can_live_migrate_source", "host1", "Success"),
        ("compute_pre_live_migration", "host2", "Success"),
        ("compute_live_migration", "host1", "Success"),
        ("compute_post_live_migration_at_destination", "host2", "Success"),
        ("compute_post_live_migration", "host1", "Success"),
    ]


def test_live_migration_to_a_requested_host(cloud: Cloud, hosts: dict[str, str]) -> None:
    assert live_migrate(cloud, hosts["server"], host="host3").status_code == 202
    mig = _assert_on(cloud, hosts, "host3")
    assert mig["status"] == "completed"


@pytest.mark.parametrize("version", ["2.1", "2.24", "2.25", "2.30", "2.67", "2.68"])
def test_every_schema_version_migrates(cloud: Cloud, hosts: dict[str, str],
                                       version: str) -> None:
    assert live_migrate(cloud, hosts["server"], version=version).status_code == 202
    _assert_on(cloud, hosts, "host2")


def _disable(cloud: Cloud, host: str) -> None:
    listed = cloud.compute.get("/os-services", params={"binary": "nova-compute"}).json()
    service = next(s for s in listed["services"] if s["host"] == host)
    resp = cloud.compute.put(f"/os-services/{service['id']}", json={"status": "disabled"})
    assert resp.status_code == 200, resp.text


@pytest.mark.parametrize(("version", "force"), [("2.29", {}), ("2.30", {"force": True}),
                                              ("2.67", {"force": "yes"})])
def test_a_forced_host_skips_the_scheduler_but_is_claimed(
        cloud: Cloud, hosts: dict[str, str], version: str, force: dict[str, object]) -> None:
    """Before 2.30 any host is forced; from 2.30 to 2.67 with `force`."""
    _disable(cloud, "host3")  # the scheduler would refuse it
    resp = live_migrate(cloud, hosts["server"], host="host3", version=version, **force)
    assert resp.status_code == 202
    _assert_on(cloud, hosts, "host3")


def test_from_2_68_a_requested_host_is_checked_by_the_scheduler(
        cloud: Cloud, hosts: dict[str, str]) -> None:
    _disable(cloud, "host3")
    assert live_migrate(cloud, hosts["server"], host="host3").status_code == 202

    mig = _assert_on(cloud, hosts, "host1")
    assert mig["status"] == "error"
    assert events(cloud, hosts["server"], "live-migration") == [
        ("conductor_live_migrate_instance", None, "Error")]


def _wrong(server_id: str) -> list[tuple[str, dict[str, object], int, str]]:
    """(version, body, status, message part) of requests Nova refuses before acting."""
    base = {"host": None, "block_migration": False}
    return [
        ("2.24", base, 400, "'disk_over_commit' is a required property"),
        ("2.24", {**base, "block_migration": "auto", "disk_over_commit": False}, 400,
         "block_migration"),
        ("2.25", {**base, "disk_over_commit": False}, 400, "Additional properties"),
        ("2.25", {"block_migration": "auto"}, 400, "'host' is a required property"),
        ("2.30", {**base, "force": True}, 400, "Can't force to a non-provided destination"),
        ("2.68", {**base, "host": "host2", "force": True}, 400, "Additional properties"),
        ("2.68", {**base, "host": "nowhere"}, 400, "Compute host nowhere could not be found."),
        ("2.68", {**base, "host": "host1"}, 400,
         f"Unable to migrate instance ({server_id}) to current host (host1)."),
    ]


def test_requests_nova_refuses_change_nothing(cloud: Cloud, hosts: dict[str, str]) -> None:
    server_id = hosts["server"]
    for version, body, status, message in _wrong(server_id):
        with cloud.client("admin", version) as client:
            resp = client.post(f"/servers/{server_id}/action", json={"os-migrateLive": body})
        assert resp.status_code == status, (version, body, resp.text)
        assert message in resp.json()["badRequest"]["message"], (version, body, resp.text)
    assert server(cloud, server_id)["status"] == "ACTIVE"
    assert migrations_of(cloud, server_id) == []
    assert held(cloud, server_id) == {hosts["host1"]: SMALL}


def test_only_an_admin_may_live_migrate_or_stop_one(cloud: Cloud,
                                                    hosts: dict[str, str]) -> None:
    """A member of the server's project sees it but may not move it, abort or force."""
    server_id = hosts["server"]
    with cloud.client("demo:admin", roles=("member", "reader")) as member:
        refused = [
            ("os-migrate-server:migrate_live", member.post(
                f"/servers/{server_id}/action",
                json={"os-migrateLive": {"host": None, "block_migration": "auto"}})),
            ("servers:migrations:delete", member.delete(f"/servers/{server_id}/migrations/1")),
            ("servers:migrations:force_complete", member.post(
                f"/servers/{server_id}/migrations/1/action", json={"force_complete": None})),
        ]
    for rule, resp in refused:
        assert resp.status_code == 403, resp.text
        assert resp.json()["forbidden"]["message"] == (
            f"Policy does not allow os_compute_api:{rule} to be performed.")
    assert migrations_of(cloud, server_id) == []


def test_a_stopped_server_cannot_live_migrate(cloud: Cloud, hosts: dict[str, str]) -> None:
    server_id = hosts["server"]
    assert cloud.compute.post(f"/servers/{server_id}/action",
                              json={"os-stop": None}).status_code == 202
    settle(cloud)
    resp = live_migrate(cloud, server_id)
    assert resp.status_code == 409
    assert resp.json()["conflictingRequest"]["message"] == (
        f"Cannot 'os-migrateLive' instance {server_id} while it is in vm_state stopped")


def test_a_failed_destination_check_reschedules_to_the_alternate(
        cloud: Cloud, hosts: dict[str, str]) -> None:
    arm(cloud, "host2", "check_can_live_migrate_destination")  # over the API
    live_migrate(cloud, hosts["server"])

    mig = _assert_on(cloud, hosts, "host3")
    assert (mig["status"], mig["dest_compute"]) == ("completed", "host3")
    checks = [e for e in events(cloud, hosts["server"], "live-migration")
              if e[0] == "compute_check_can_live_migrate_destination"]
    assert checks == [("compute_check_can_live_migrate_destination", "host2", "Error"),
                      ("compute_check_can_live_migrate_destination", "host3", "Success")]


def test_no_retries_allowed_means_no_reschedule(cloud: Cloud, hosts: dict[str, str]) -> None:
    cloud.configure(migrate_max_retries=0)
    cloud.plane.agent("host2").driver.fail("check_can_live_migrate_destination")
    live_migrate(cloud, hosts["server"])

    mig = _assert_on(cloud, hosts, "host1")
    assert mig["status"] == "error"
    assert [e for e in events(cloud, hosts["server"], "live-migration")
            if e[0].startswith("compute_")] == [
        ("compute_check_can_live_migrate_destination", "host2", "Error")]


def test_a_requested_host_that_fails_its_check_is_not_replaced(
        cloud: Cloud, hosts: dict[str, str]) -> None:
    cloud.plane.agent("host3").driver.fail("check_can_live_migrate_destination")
    live_migrate(cloud, hosts["server"], host="host3")
    assert _assert_on(cloud, hosts, "host1")["status"] == "error"


def test_during_the_copy_the_migration_holds_the_source(cloud: Cloud,
                                                        slow: dict[str, str]) -> None:
    server_id = slow["server"]
    assert live_migrate(cloud, server_id, wait=False).status_code == 202
    running = wait_copying(cloud, server_id)

    view = server(cloud, server_id)
    assert (view["status"], view["OS-EXT-STS:task_state"]) == ("MIGRATING", "migrating")
    assert (running["source_compute"], running["dest_compute"]) == ("host1", "host2")
    assert running["memory_total_bytes"] == 512 * MIB
    assert running["disk_total_bytes"] == 5 * 1024 * MIB  # "auto": a block migration
    assert 0 < running["memory_processed_bytes"] <= 512 * MIB
    assert (running["memory_processed_bytes"] + running["memory_remaining_bytes"]
            == 512 * MIB)
    shown = cloud.compute.get(f"/servers/{server_id}/migrations/{running['id']}")
    assert shown.status_code == 200 and shown.json()["migration"]["uuid"] == running["uuid"]
    assert held(cloud, running["uuid"]) == {slow["host1"]: SMALL}
    assert held(cloud, server_id) == {slow["host2"]: SMALL}

    resp = cloud.compute.post(f"/servers/{server_id}/migrations/{running['id']}/action",
                              json={"force_complete": None})
    assert resp.status_code == 202, resp.text
    settle(cloud)
    assert _assert_on(cloud, slow, "host2")["status"] == "completed"
    gone = cloud.compute.get(f"/servers/{server_id}/migrations/{running['id']}")
    assert gone.status_code == 404
    assert gone.json()["itemNotFound"]["message"] == (
        f"Live migration {running['id']} for server {server_id} is not in progress.")
    assert [e[0] for e in events(cloud, server_id, "live_migration_force_complete")] == [
        "compute_live_migration_force_complete"]


def test_abort_while_copying_puts_everything_back(cloud: Cloud, slow: dict[str, str]) -> None:
    server_id = slow["server"]
    live_migrate(cloud, server_id, wait=False)
    running = wait_copying(cloud, server_id)

    with cloud.client("admin", "2.24") as client:
        resp = client.delete(f"/servers/{server_id}/migrations/{running['id']}")
    assert resp.status_code == 202, resp.text
    settle(cloud)

    mig = _assert_on(cloud, slow, "host1")
    assert mig["status"] == "cancelled"
    assert "fault" not in server(cloud, server_id)
    assert ("compute_live_migration_abort", "host1", "Success") in events(
        cloud, server_id, "live_migration_cancel")


def test_force_complete_and_abort_are_refused_when_nova_refuses_them(
        cloud: Cloud, slow: dict[str, str]) -> None:
    server_id = slow["server"]
    base = f"/servers/{server_id}/migrations"
    idle = cloud.compute.delete(f"{base}/1")
    assert idle.status_code == 409
    assert idle.json()["conflictingRequest"]["message"] == (
        f"Cannot 'abort live migration' instance {server_id} while it is in task_state None")
    with cloud.client("admin", "2.21") as old:
        assert old.post(f"{base}/1/action", json={"force_complete": None}).status_code == 404
    with cloud.client("admin", "2.23") as old:
        assert old.delete(f"{base}/1").status_code == 404

    live_migrate(cloud, server_id, wait=False)
    running = wait_copying(cloud, server_id)
    unknown = cloud.compute.delete(f"{base}/999999")
    assert unknown.status_code == 404
    assert unknown.json()["itemNotFound"]["message"] == (
        f"Migration 999999 not found for instance {server_id}")
    unknown = cloud.compute.post(f"{base}/999999/action", json={"force_complete": None})
    assert unknown.status_code == 400
    bad = cloud.compute.post(f"{base}/{running['id']}/action", json={"force_complete": {}})
    assert bad.status_code == 400
    assert cloud.compute.post(f"{base}/{running['id']}/action",
                              json={"force_complete": None}).status_code == 202
    settle(cloud)
    done = cloud.compute.post(f"{base}/{running['id']}/action", json={"force_complete": None})
    assert done.status_code == 409  # the server is not MIGRATING any more
    _assert_on(cloud, slow, "host2")


def test_a_server_deleted_while_copying_leaves_nothing(cloud: Cloud,
                                                       slow: dict[str, str]) -> None:
    server_id = slow["server"]
    live_migrate(cloud, server_id, wait=False)
    running = wait_copying(cloud, server_id)

    assert cloud.compute.delete(f"/servers/{server_id}").status_code == 204
    settle(cloud)

    assert cloud.compute.get(f"/servers/{server_id}").status_code == 404
    assert held(cloud, server_id) == {}
    assert held(cloud, running["uuid"]) == {}
    for host in ("host1", "host2", "host3"):
        assert usages(cloud, slow[host]) == EMPTY
        assert guests(cloud, host) == []
    assert_invariants(cloud)


def test_an_older_hypervisor_is_skipped_for_the_alternate(cloud: Cloud,
                                                          hosts: dict[str, str]) -> None:
    """Nova's rule: the destination's hypervisor version may not be older than the source's."""
    nodes = t.compute_nodes
    with cloud.live.cell_db.write() as conn:
        conn.execute(sa.update(nodes).where(nodes.c.host == "host2")
                     .values(hypervisor_version=999))
    live_migrate(cloud, hosts["server"])

    assert _assert_on(cloud, hosts, "host3")["status"] == "completed"
    checks = [e for e in events(cloud, hosts["server"], "live-migration")
              if e[0] == "compute_check_can_live_migrate_destination"]
    assert [(host, result) for _, host, result in checks] == [("host2", "Error"),
                                                             ("host3", "Success")]


def test_abort_before_the_copy_needs_2_65(cloud: Cloud, hosts: dict[str, str]) -> None:
    """A migration still `preparing` (its destination check held here) is cancelled from
    2.65 on: the conductor stops at its next step and gives everything back."""
    server_id = hosts["server"]
    agent = cloud.plane.agent("host2")
    release = threading.Event()
    check = agent.check_can_live_migrate_destination

    def held_check(**kwargs: object) -> object:
        release.wait(20)
        return check(**kwargs)  # type: ignore[arg-type]

    agent.check_can_live_migrate_destination = held_check  # type: ignore[method-assign]
    try:
        live_migrate(cloud, server_id, wait=False)
        [preparing] = _wait_status(cloud, server_id, "preparing")
        url = f"/servers/{server_id}/migrations/{preparing['id']}"
        with cloud.client("admin", "2.64") as old:
            refused = old.delete(url)
        assert refused.status_code == 400
        assert refused.json()["badRequest"]["message"] == (
            f"Migration {preparing['id']} state of instance {server_id} is preparing. "
            "Cannot abort live migration while the migration is in this state.")
        assert cloud.compute.delete(url).status_code == 202
        # The agents' reconcile, running now, must leave a cancelled migration's allocation
        # to the rollback still under way (it once deleted it, stranding the dest claim).
        for host in ("host1", "host2"):
            cloud.plane.agent(host).update_available_resource()
    finally:
        release.set()
    settle(cloud)
    assert _assert_on(cloud, hosts, "host1")["status"] == "cancelled"


def _wait_status(cloud: Cloud, server_id: str, status: str) -> list[dict[str, object]]:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        found = in_progress(cloud, server_id)
        if found and found[0]["status"] == status:
            return found
        time.sleep(0.05)
    raise AssertionError(f"no {status} migration: {in_progress(cloud, server_id)}")
