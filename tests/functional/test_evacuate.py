"""Evacuate: a dead host's server is rebuilt elsewhere; who holds what, until the host is back.

    host1 (dies)              host2                     host3 (some tests)
      server (small)            the destination           an alternate

The rule under test: once evacuated, the instance holds its flavor on the
destination and the evacuation migration (by its uuid) holds the source,
whose guest may still exist; when host1's agent starts again it destroys
that guest, the migration's allocation is deleted exactly once and the
migration is `completed`. Deleting the server before that frees both hosts
at once (Nova's delete), and host1's agent then only destroys the guest. A
failed evacuation leaves the server in ERROR on host1 holding its source
allocation, and the migration holding nothing.
"""

from __future__ import annotations

from typing import Any

import pytest

from stowage.compute.agent.evacuation import RebuildClaimRefused
from stowage.compute.agent.simulated import SimulatedDriver, SimulatedFault
from stowage.compute.conductor.evacuate import CLAIM_REFUSED
from tests.functional.conftest import Cloud
from tests.functional.evacuation import SMALL, evacuate, server_on_host1, the_migration
from tests.functional.servers import (
    EMPTY,
    action,
    assert_invariants,
    boot,
    flavor,
    force_down,
    guests,
    held,
    image,
    migrations_of,
    server,
    settle,
    start_agent,
    stop_agent,
    stored_migrations,
    usages,
)

RUNNING, SHUTDOWN = 1, 4


@pytest.fixture
def hosts(cloud: Cloud) -> dict[str, str]:
    """host1 and host2 (evacuation.py), the server on host1."""
    return server_on_host1(cloud)


def test_evacuate_is_refused_while_the_source_is_up(cloud: Cloud, hosts: dict[str, str]) -> None:
    resp = evacuate(cloud, hosts["server"], status=400)
    assert resp.json()["badRequest"]["message"] == "Compute service of host1 is still in use."
    view = server(cloud, hosts["server"])
    assert (view["status"], view["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", "host1")
    assert migrations_of(cloud, hosts["server"]) == []
    assert held(cloud, hosts["server"]) == {hosts["host1"]: SMALL}


def test_evacuated_server_runs_on_the_destination_and_the_source_is_freed_when_back(
        cloud: Cloud, hosts: dict[str, str]) -> None:
    server_id = hosts["server"]
    host1 = stop_agent(cloud, "host1")

    resp = evacuate(cloud, server_id)
    assert resp.content == b""  # 2.14 and later: 200 with no body
    view = server(cloud, server_id)
    assert (view["status"], view["OS-EXT-STS:task_state"]) == ("ACTIVE", None)
    assert view["OS-EXT-SRV-ATTR:host"] == "host2"
    mig = the_migration(cloud, server_id)
    assert (mig["status"], mig["source_compute"], mig["dest_compute"]) == ("done", "host1",
                                                                           "host2")
    assert held(cloud, server_id) == {hosts["host2"]: SMALL}
    assert held(cloud, mig["uuid"]) == {hosts["host1"]: SMALL}  # until host1 is back
    assert guests(cloud, server_id) == {("host1", ""): RUNNING, ("host2", ""): RUNNING}
    assert_invariants(cloud)
    [evac] = [a for a in cloud.compute.get(f"/servers/{server_id}/os-instance-actions")
              .json()["instanceActions"] if a["action"] == "evacuate"]
    events = cloud.compute.get(f"/servers/{server_id}/os-instance-actions/"
                               f"{evac['request_id']}").json()["instanceAction"]["events"]
    assert sorted((e["event"], e["result"], e.get("host")) for e in events) == [
        ("compute_rebuild_instance", "Success", "host2"),
        ("conductor_rebuild_server", "Success", None)]

    start_agent(cloud, host1)
    assert the_migration(cloud, server_id)["status"] == "completed"
    assert held(cloud, mig["uuid"]) == {}
    assert usages(cloud, hosts["host1"]) == EMPTY
    assert held(cloud, server_id) == {hosts["host2"]: SMALL}
    assert guests(cloud, server_id) == {("host2", ""): RUNNING}
    assert_invariants(cloud)

    # A second restart finds nothing left to do.
    start_agent(cloud, stop_agent(cloud, "host1"))
    assert the_migration(cloud, server_id)["status"] == "completed"
    assert held(cloud, server_id) == {hosts["host2"]: SMALL}
    assert usages(cloud, hosts["host1"]) == EMPTY
    assert_invariants(cloud)


def test_the_source_back_during_the_rebuild_is_cleaned_up_at_its_end(
        cloud: Cloud, hosts: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """host1's agent starts while host2 spawns: it destroys its guest but cannot release the
    migration's allocation yet; the conductor, finding host1 up at the end, asks it to."""
    server_id = hosts["server"]
    host1 = stop_agent(cloud, "host1")
    driver = cloud.plane.agent("host2").driver
    spawn = driver.spawn

    def spawn_while_host1_returns(instance_uuid: str, flavor: Any) -> None:
        start_agent(cloud, host1)
        assert guests(cloud, server_id) == {}  # host1 destroyed its guest as it started
        assert held(cloud, the_migration(cloud, server_id)["uuid"]) == {hosts["host1"]: SMALL}
        spawn(instance_uuid, flavor)

    monkeypatch.setattr(driver, "spawn", spawn_while_host1_returns)
    evacuate(cloud, server_id)
    mig = the_migration(cloud, server_id)
    assert mig["status"] == "completed"
    assert held(cloud, mig["uuid"]) == {}
    assert held(cloud, server_id) == {hosts["host2"]: SMALL}
    assert guests(cloud, server_id) == {("host2", ""): RUNNING}
    assert_invariants(cloud)


def test_deleting_an_evacuated_server_frees_its_source_at_once(
        cloud: Cloud, hosts: dict[str, str]) -> None:
    """Nova's delete removes every allocation of the instance (its source's included, which
    the evacuation migration holds here) and soft-deletes its migrations; the source agent,
    back later, only destroys its guest: nothing is released twice, nothing comes back."""
    server_id = hosts["server"]
    host1 = stop_agent(cloud, "host1")
    evacuate(cloud, server_id)
    mig = the_migration(cloud, server_id)
    assert held(cloud, mig["uuid"]) == {hosts["host1"]: SMALL}
    assert cloud.compute.delete(f"/servers/{server_id}").status_code == 204
    settle(cloud)
    assert held(cloud, server_id) == {}
    assert held(cloud, mig["uuid"]) == {}
    assert usages(cloud, hosts["host1"]) == EMPTY
    assert usages(cloud, hosts["host2"]) == EMPTY
    assert guests(cloud, server_id) == {("host1", ""): RUNNING}  # host1 is still down
    # Soft-deleted with the server (Nova's instance_destroy): no list shows it any more.
    assert migrations_of(cloud, server_id) == []
    assert [m.deleted != 0 for m in stored_migrations(cloud, server_id)] == [True]
    assert_invariants(cloud)

    start_agent(cloud, host1)
    assert guests(cloud, server_id) == {}
    assert held(cloud, mig["uuid"]) == {} and held(cloud, server_id) == {}
    assert usages(cloud, hosts["host1"]) == EMPTY
    assert usages(cloud, hosts["host2"]) == EMPTY
    [stored] = stored_migrations(cloud, server_id)
    assert (stored.uuid, stored.status) == (mig["uuid"], "done")  # as Nova leaves it
    assert_invariants(cloud)

    # Another restart finds nothing to do.
    start_agent(cloud, stop_agent(cloud, "host1"))
    assert usages(cloud, hosts["host1"]) == EMPTY
    assert_invariants(cloud)


def test_deleting_an_evacuated_server_whose_new_host_is_down_too(
        cloud: Cloud, hosts: dict[str, str]) -> None:
    """The local delete (host2 down as well) frees both hosts the same way."""
    server_id = hosts["server"]
    host1 = stop_agent(cloud, "host1")
    evacuate(cloud, server_id)
    mig = the_migration(cloud, server_id)
    host2 = stop_agent(cloud, "host2")
    assert cloud.compute.delete(f"/servers/{server_id}").status_code == 204
    settle(cloud)
    assert held(cloud, server_id) == {} and held(cloud, mig["uuid"]) == {}
    assert usages(cloud, hosts["host1"]) == EMPTY
    assert usages(cloud, hosts["host2"]) == EMPTY
    assert_invariants(cloud)

    start_agent(cloud, host2)
    start_agent(cloud, host1)
    assert guests(cloud, server_id) == {}
    assert held(cloud, server_id) == {} and held(cloud, mig["uuid"]) == {}
    assert usages(cloud, hosts["host1"]) == EMPTY
    assert usages(cloud, hosts["host2"]) == EMPTY
    assert_invariants(cloud)


def test_a_deleted_servers_evacuation_does_not_keep_its_source_forced_down(
        cloud: Cloud, hosts: dict[str, str]) -> None:
    """Nova's force-up guard reads `done` evacuations with read_deleted="no": the soft-deleted
    one of a deleted server does not hold host1 down."""
    server_id = hosts["server"]
    assert force_down(cloud, "host1").status_code == 200
    evacuate(cloud, server_id)
    mig = the_migration(cloud, server_id)
    assert cloud.compute.delete(f"/servers/{server_id}").status_code == 204
    settle(cloud)
    assert force_down(cloud, "host1", down=False).status_code == 200
    assert held(cloud, mig["uuid"]) == {}
    assert usages(cloud, hosts["host1"]) == EMPTY
    assert_invariants(cloud)

    # host1's agent restarts (as the guard asks): it destroys the guest, frees nothing.
    start_agent(cloud, stop_agent(cloud, "host1"))
    assert guests(cloud, server_id) == {}
    assert usages(cloud, hosts["host1"]) == EMPTY
    assert_invariants(cloud)


def test_deleting_the_dead_hosts_service_releases_its_evacuations(
        cloud: Cloud, hosts: dict[str, str]) -> None:
    """host1 never comes back: the operator deletes its compute service."""
    server_id = hosts["server"]
    stop_agent(cloud, "host1")
    evacuate(cloud, server_id)
    mig = the_migration(cloud, server_id)
    [service] = [s for s in cloud.compute.get("/os-services").json()["services"]
                 if s["host"] == "host1" and s["binary"] == "nova-compute"]
    assert cloud.compute.delete(f"/os-services/{service['id']}").status_code == 204
    assert the_migration(cloud, server_id)["status"] == "completed"
    assert held(cloud, mig["uuid"]) == {}
    assert cloud.placement.get(f"/resource_providers/{hosts['host1']}").status_code == 404
    assert held(cloud, server_id) == {hosts["host2"]: SMALL}
    assert_invariants(cloud)


def test_a_source_that_cannot_destroy_the_guest_keeps_the_allocation_until_it_can(
        cloud: Cloud, hosts: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    server_id = hosts["server"]
    host1 = stop_agent(cloud, "host1")
    evacuate(cloud, server_id)
    mig = the_migration(cloud, server_id)

    def destroy_fails(self: SimulatedDriver, instance_uuid: str) -> None:
        raise SimulatedFault(f"injected fault in destroy on {self.host}")

    with monkeypatch.context() as patched:
        patched.setattr(SimulatedDriver, "destroy", destroy_fails)
        start_agent(cloud, host1)
    assert the_migration(cloud, server_id)["status"] == "done"
    assert held(cloud, mig["uuid"]) == {hosts["host1"]: SMALL}
    assert ("host1", "") in guests(cloud, server_id)
    assert_invariants(cloud)

    start_agent(cloud, stop_agent(cloud, "host1"))
    assert the_migration(cloud, server_id)["status"] == "completed"
    assert held(cloud, mig["uuid"]) == {}
    assert guests(cloud, server_id) == {("host2", ""): RUNNING}
    assert_invariants(cloud)


def test_evacuate_to_a_requested_host(cloud: Cloud, hosts: dict[str, str]) -> None:
    host3 = cloud.add_host("host3", vcpus=16, memory_mb=8192, disk_gb=100)
    stop_agent(cloud, "host1")
    evacuate(cloud, hosts["server"], {"host": "host3"})
    assert server(cloud, hosts["server"])["OS-EXT-SRV-ATTR:host"] == "host3"
    mig = the_migration(cloud, hosts["server"])
    assert (mig["status"], mig["dest_compute"]) == ("done", "host3")
    assert held(cloud, hosts["server"]) == {host3: SMALL}
    assert held(cloud, mig["uuid"]) == {hosts["host1"]: SMALL}
    assert usages(cloud, hosts["host2"]) == EMPTY
    assert_invariants(cloud)


def test_forced_down_source_keeps_its_allocation_until_its_agent_restarts(
        cloud: Cloud, hosts: dict[str, str]) -> None:
    """The operator fences host1 and forces it down; its agent still runs meanwhile."""
    server_id = hosts["server"]
    assert force_down(cloud, "host1").status_code == 200
    evacuate(cloud, server_id)
    mig = the_migration(cloud, server_id)
    assert held(cloud, mig["uuid"]) == {hosts["host1"]: SMALL}
    cloud.plane.agent("host1").update_available_resource()  # its reconcile keeps it too
    assert held(cloud, mig["uuid"]) == {hosts["host1"]: SMALL}
    resp = force_down(cloud, "host1", down=False)  # Nova's guard: restart it first
    assert resp.status_code == 400 and "`done` evacuation" in resp.text

    cloud.plane.stop_host("host1")
    cloud.add_host("host1", vcpus=16, memory_mb=8192, disk_gb=100)
    assert the_migration(cloud, server_id)["status"] == "completed"
    assert held(cloud, mig["uuid"]) == {}
    assert guests(cloud, server_id) == {("host2", ""): RUNNING}
    assert force_down(cloud, "host1", down=False).status_code == 200
    assert_invariants(cloud)


def test_stopped_server_is_evacuated_stopped(cloud: Cloud, hosts: dict[str, str]) -> None:
    server_id = hosts["server"]
    action(cloud, server_id, {"os-stop": None})
    stop_agent(cloud, "host1")
    evacuate(cloud, server_id)
    view = server(cloud, server_id)
    assert (view["status"], view["OS-EXT-SRV-ATTR:host"]) == ("SHUTOFF", "host2")
    assert view["OS-EXT-STS:power_state"] == SHUTDOWN
    assert guests(cloud, server_id)[("host2", "")] == SHUTDOWN
    assert held(cloud, server_id) == {hosts["host2"]: SMALL}
    assert_invariants(cloud)


def test_server_in_error_is_evacuated_and_runs_again(cloud: Cloud, hosts: dict[str, str]) -> None:
    server_id = hosts["server"]
    action(cloud, server_id, {"os-resetState": {"state": "error"}})
    stop_agent(cloud, "host1")
    evacuate(cloud, server_id)
    view = server(cloud, server_id)
    assert (view["status"], view["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", "host2")
    assert_invariants(cloud)


def test_anti_affinity_is_kept_when_evacuating(cloud: Cloud) -> None:
    """a on host1, b on host2 (anti-affinity); host1 dies: a must go to host3, not host2."""
    nodes = {name: cloud.add_host(name, vcpus=16, memory_mb=8192, disk_gb=100)
             for name in ("host1", "host2", "host3")}
    small = flavor(cloud, "small", 1, 512, 5)
    group = cloud.compute.post("/os-server-groups", json={
        "server_group": {"name": "g", "policy": "anti-affinity"}}).json()["server_group"]
    img = image(cloud)
    a = boot(cloud, "a", small, img, hints={"group": group["id"]})
    b = boot(cloud, "b", small, img, hints={"group": group["id"]})
    assert [server(cloud, s)["OS-EXT-SRV-ATTR:host"] for s in (a, b)] == ["host1", "host2"]
    host3 = stop_agent(cloud, "host3")  # only host2 is left: the group forbids it
    stop_agent(cloud, "host1")
    evacuate(cloud, a)
    assert (server(cloud, a)["status"], the_migration(cloud, a)["status"]) == ("ERROR", "error")
    assert held(cloud, a) == {nodes["host1"]: SMALL}

    start_agent(cloud, host3)
    action(cloud, a, {"os-resetState": {"state": "active"}})
    evacuate(cloud, a)
    assert server(cloud, a)["OS-EXT-SRV-ATTR:host"] == "host3"
    assert held(cloud, a) == {nodes["host3"]: SMALL}
    assert_invariants(cloud)


# --- the API's checks, per microversion ----------------------------------------------------
def test_checks_on_the_requested_host(cloud: Cloud, hosts: dict[str, str]) -> None:
    server_id = hosts["server"]
    stop_agent(cloud, "host1")
    resp = evacuate(cloud, server_id, {"host": "host1"}, status=400)
    assert resp.json()["badRequest"]["message"] == "The target host can't be the same one."
    resp = evacuate(cloud, server_id, {"host": "nowhere"}, status=404)
    assert resp.json()["itemNotFound"]["message"] == "Compute host nowhere not found."
    resp = evacuate(cloud, server_id, {"force": True}, status=400, version="2.29")
    assert resp.json()["badRequest"]["message"] == "Can't force to a non-provided destination"
    evacuate(cloud, server_id, {"host": "host2", "force": True}, status=400, version="2.68")
    assert migrations_of(cloud, server_id) == []
    assert server(cloud, server_id)["status"] == "ACTIVE"

    evacuate(cloud, server_id, {"host": "host2", "force": "true"}, version="2.67")
    assert server(cloud, server_id)["OS-EXT-SRV-ATTR:host"] == "host2"
    assert_invariants(cloud)


def test_admin_password_before_2_14(cloud: Cloud, hosts: dict[str, str]) -> None:
    server_id = hosts["server"]
    stop_agent(cloud, "host1")
    evacuate(cloud, server_id, {}, status=400, version="2.13")  # onSharedStorage required
    resp = evacuate(cloud, server_id, {"onSharedStorage": True, "adminPass": "s3cret"},
                    status=400, version="2.13")
    assert resp.json()["badRequest"]["message"] == (
        "admin password can't be changed on existing disk")
    evacuate(cloud, server_id, {"onSharedStorage": False}, status=400, version="2.14")

    resp = evacuate(cloud, server_id, {"onSharedStorage": "False", "adminPass": "s3cret"},
                    version="2.13")
    assert resp.json() == {"adminPass": "s3cret"}
    assert server(cloud, server_id)["OS-EXT-SRV-ATTR:host"] == "host2"


def test_generated_admin_password_before_2_14(cloud: Cloud, hosts: dict[str, str]) -> None:
    stop_agent(cloud, "host1")
    resp = evacuate(cloud, hosts["server"], {"onSharedStorage": False}, version="2.1")
    password = resp.json()["adminPass"]
    assert isinstance(password, str) and len(password) >= 8


def test_only_active_stopped_or_error_servers_are_evacuated(
        cloud: Cloud, hosts: dict[str, str]) -> None:
    server_id = hosts["server"]
    large = flavor(cloud, "large", 2, 1024, 10)
    action(cloud, server_id, {"resize": {"flavorRef": large}})
    assert server(cloud, server_id)["status"] == "VERIFY_RESIZE"  # now on host2
    stop_agent(cloud, "host2")
    resp = evacuate(cloud, server_id, status=409)
    assert resp.json()["conflictingRequest"]["message"] == (
        f"Cannot 'evacuate' instance {server_id} while it is in vm_state resized")
    assert len(migrations_of(cloud, server_id)) == 1
    assert server(cloud, server_id)["OS-EXT-STS:task_state"] is None


def test_an_evacuated_server_needs_its_new_host_down_to_move_again(
        cloud: Cloud, hosts: dict[str, str]) -> None:
    server_id = hosts["server"]
    stop_agent(cloud, "host1")
    evacuate(cloud, server_id)
    resp = evacuate(cloud, server_id, status=400)  # now on host2, which is up
    assert resp.json()["badRequest"]["message"] == "Compute service of host2 is still in use."


def test_evacuate_is_for_admins(cloud: Cloud, hosts: dict[str, str]) -> None:
    stop_agent(cloud, "host1")
    with cloud.client("demo:admin", roles=("member", "reader")) as member:
        resp = member.post(f"/servers/{hosts['server']}/action", json={"evacuate": {}})
    assert resp.status_code == 403, resp.text
    assert resp.json()["forbidden"]["message"] == (
        "Policy does not allow os_compute_api:os-evacuate to be performed.")
    assert migrations_of(cloud, hosts["server"]) == []


def test_the_refusal_name_crosses_the_rpc_seam() -> None:
    assert RebuildClaimRefused.__name__ == CLAIM_REFUSED


def test_an_evacuated_server_counts_its_cores_and_ram_once(cloud: Cloud,
                                                           hosts: dict[str, str]) -> None:
    """The source allocation its evacuation migration keeps is not the project's usage."""
    def in_use() -> dict[str, int]:
        detail = cloud.compute.get("/os-quota-sets/admin/detail").json()["quota_set"]
        return {r: detail[r]["in_use"] for r in ("instances", "cores", "ram")}

    before = in_use()
    stop_agent(cloud, "host1")
    evacuate(cloud, hosts["server"])
    assert held(cloud, the_migration(cloud, hosts["server"])["uuid"])  # the source, still held
    assert in_use() == before
