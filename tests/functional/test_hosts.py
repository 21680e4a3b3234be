"""Simulated hosts over real HTTP: registration, inventory, shared storage, reconcile, PCI.

Each test adds hosts to an empty cloud and looks at what a client sees in
`/placement` and `/compute`; the reconcile tests write instance and
migration rows directly (as the conductor would) and run the resource
tracker once::

    host1 ── root provider (VCPU, MEMORY_MB, DISK_GB)
    host2 ── root provider (VCPU, MEMORY_MB) ─┐ aggregate
    host3 ── root provider (VCPU, MEMORY_MB) ─┤ uuid5("ceph1")
                     sharing provider "ceph1" ┘ (DISK_GB, MISC_SHARES_VIA_AGGREGATE)
"""

from __future__ import annotations

import dataclasses
import time
import uuid as uuidlib
from typing import Any

import pytest

from stowage.compute import instances, migrations, services, states
from stowage.compute.agent.pci import PciClaimFailed
from stowage.compute.agent.simulated import SimulatedFault
from tests.functional.accounting import held, put
from tests.functional.conftest import Cloud

AGG = "7a1c2f36-96a4-4c8b-8d0f-3a3b8f2c9d10"
SMALL = {"id": 1, "flavorid": "1", "name": "m1.small", "vcpus": 2, "memory_mb": 1024,
         "root_gb": 10, "ephemeral_gb": 5, "swap": 1024, "extra_specs": {}}
GPU = {**SMALL, "name": "g1", "extra_specs": {"pci_passthrough:alias": "gpu:1"}}
GPU2 = {**SMALL, "name": "g2", "extra_specs": {"pci_passthrough:alias": "gpu:2"}}


def new_uuid() -> str:
    return str(uuidlib.uuid4())


def inventories(cloud: Cloud, rp: str) -> dict[str, dict[str, Any]]:
    resp = cloud.placement.get(f"/resource_providers/{rp}/inventories")
    assert resp.status_code == 200, resp.text
    return dict(resp.json()["inventories"])


def traits(cloud: Cloud, rp: str) -> set[str]:
    return set(cloud.placement.get(f"/resource_providers/{rp}/traits").json()["traits"])


def aggregates(cloud: Cloud, rp: str) -> set[str]:
    return set(cloud.placement.get(f"/resource_providers/{rp}/aggregates").json()["aggregates"])


def provider_named(cloud: Cloud, name: str) -> dict[str, Any]:
    found = cloud.placement.get("/resource_providers", params={"name": name}).json()
    (provider,) = found["resource_providers"]
    return dict(provider)


def add_instance(cloud: Cloud, host: str | None, flavor: dict[str, Any] = SMALL,
                 vm_state: str = states.ACTIVE, volume_backed: bool = False,
                 task_state: str | None = None) -> str:
    uuid = new_uuid()
    with cloud.live.cell_db.write() as conn:
        instances.create(conn, instances.Instance(
            uuid=uuid, project_id="proj", user_id="user", display_name=f"vm-{uuid[:8]}",
            flavor=flavor, vm_state=vm_state, host=host, node=host,
            volume_backed=volume_backed, reservation_id="r-1", task_state=task_state))
    return uuid


def spawning(cloud: Cloud, flavor: dict[str, Any] = SMALL) -> str:
    """A server as the conductor hands it to an agent to build: the agent claims the host."""
    return add_instance(cloud, None, flavor, vm_state=states.BUILDING,
                        task_state=states.TASK.SPAWNING)


def add_migration(cloud: Cloud, instance_uuid: str, status: str, source: str,
                  dest: str) -> str:
    uuid = new_uuid()
    with cloud.live.cell_db.write() as conn:
        migrations.create(conn, migrations.Migration(
            uuid=uuid, instance_uuid=instance_uuid, migration_type="resize", status=status,
            source_compute=source, dest_compute=dest))
    return uuid


def hypervisor(cloud: Cloud, name: str) -> dict[str, Any]:
    """The node's detailed view with its usage fields, which 2.88 removed."""
    found = cloud.compute.get("/os-hypervisors/detail",
                              params={"hypervisor_hostname_pattern": name},
                              headers={"openstack-api-version": "compute 2.87"})
    assert found.status_code == 200, found.text
    return dict(found.json()["hypervisors"][0])


# --- registration -----------------------------------------------------------------
def test_adding_a_host_registers_provider_inventory_service_and_hypervisor(
        cloud: Cloud) -> None:
    node = cloud.add_host("host1", vcpus=8, memory_mb=4096, disk_gb=100,
                          reserved={"MEMORY_MB": 512, "DISK_GB": 10},
                          cpu_allocation_ratio=4.0, ram_allocation_ratio=1.0,
                          traits=("HW_CPU_X86_AVX2", "CUSTOM_FAST_NIC"), aggregates=(AGG,),
                          availability_zone="az1")
    provider = cloud.placement.get(f"/resource_providers/{node}").json()
    assert provider["name"] == "host1" and provider["root_provider_uuid"] == node
    assert inventories(cloud, node) == {
        "VCPU": {"total": 8, "reserved": 0, "min_unit": 1, "max_unit": 8, "step_size": 1,
                 "allocation_ratio": 4.0},
        "MEMORY_MB": {"total": 4096, "reserved": 512, "min_unit": 1, "max_unit": 4096,
                      "step_size": 1, "allocation_ratio": 1.0},
        "DISK_GB": {"total": 100, "reserved": 10, "min_unit": 1, "max_unit": 100,
                    "step_size": 1, "allocation_ratio": 1.0}}
    assert traits(cloud, node) == {"HW_CPU_X86_AVX2", "CUSTOM_FAST_NIC"}
    assert aggregates(cloud, node) == {AGG}

    (service,) = cloud.compute.get("/os-services", params={"host": "host1"}).json()["services"]
    assert (service["binary"], service["zone"], service["status"], service["state"]) == (
        "nova-compute", "az1", "enabled", "up")
    hyp = hypervisor(cloud, "host1")
    assert hyp["id"] == node and hyp["state"] == "up" and hyp["status"] == "enabled"
    assert (hyp["vcpus"], hyp["memory_mb"], hyp["local_gb"]) == (8, 4096, 100)
    # Nova counts reserved memory and disk as used.
    assert (hyp["vcpus_used"], hyp["memory_mb_used"], hyp["local_gb_used"]) == (0, 512, 10)
    assert hyp["free_ram_mb"] == 3584 and hyp["running_vms"] == 0


def test_capacity_follows_reserved_and_ratios(cloud: Cloud) -> None:
    """(total - reserved) x ratio is what fits; one allocation stays within max_unit = total."""
    node = cloud.add_host("host1", vcpus=4, memory_mb=2048, disk_gb=50,
                          reserved={"VCPU": 1}, cpu_allocation_ratio=2.0,
                          ram_allocation_ratio=1.5)
    assert put(cloud.placement, new_uuid(),
               {node: {"VCPU": 4, "MEMORY_MB": 2048}}).status_code == 204

    def fits(resources: str) -> bool:
        found = cloud.placement.get("/allocation_candidates", params={"resources": resources})
        return bool(found.json()["allocation_requests"])

    assert fits("VCPU:2,MEMORY_MB:1024")
    assert not fits("VCPU:3")
    assert not fits("MEMORY_MB:1025")


def test_restarted_agent_keeps_its_node_uuid_and_guests(cloud: Cloud) -> None:
    node = cloud.add_host("host1")
    uuid = add_instance(cloud, "host1")
    cloud.plane.agent("host1").driver.spawn(uuid, SMALL)
    cloud.plane.stop_host("host1")
    assert cloud.add_host("host1") == node
    assert cloud.plane.agent("host1").driver.list_instances() == [uuid]
    assert len(cloud.compute.get("/os-hypervisors").json()["hypervisors"]) == 1


def test_shared_storage_hosts_take_disk_from_the_sharing_provider(cloud: Cloud) -> None:
    two = cloud.add_host("host2", disk_gb=500, shared_storage="ceph1")
    three = cloud.add_host("host3", disk_gb=500, shared_storage="ceph1")
    sharing = provider_named(cloud, "ceph1")["uuid"]
    assert set(inventories(cloud, two)) == set(inventories(cloud, three)) == {
        "VCPU", "MEMORY_MB"}
    assert inventories(cloud, sharing)["DISK_GB"]["total"] == 500
    assert traits(cloud, sharing) == {"MISC_SHARES_VIA_AGGREGATE"}
    (aggregate,) = aggregates(cloud, sharing)
    assert aggregates(cloud, two) == aggregates(cloud, three) == {aggregate}
    found = cloud.placement.get("/allocation_candidates",
                                params={"resources": "VCPU:1,DISK_GB:100"}).json()
    pairs = sorted(sorted(c["allocations"]) for c in found["allocation_requests"])
    assert pairs == sorted([sorted([two, sharing]), sorted([three, sharing])])


def test_the_agent_keeps_traits_and_aggregates_others_added(cloud: Cloud) -> None:
    node = cloud.add_host("host1", traits=("CUSTOM_MINE",))
    assert cloud.placement.put("/traits/CUSTOM_OPERATOR").status_code in (201, 204)
    gen = cloud.placement.get(f"/resource_providers/{node}").json()["generation"]
    resp = cloud.placement.put(f"/resource_providers/{node}/traits", json={
        "resource_provider_generation": gen, "traits": ["CUSTOM_MINE", "CUSTOM_OPERATOR"]})
    assert resp.status_code == 200, resp.text
    agent = cloud.plane.agent("host1")
    agent.reset_provider_cache()  # a full report, not the cached one
    agent.update_available_resource()
    assert traits(cloud, node) == {"CUSTOM_MINE", "CUSTOM_OPERATOR"}



def _counting(monkeypatch: pytest.MonkeyPatch, agent: Any) -> list[str]:
    """The requests the agent sends Placement from now on: 'METHOD path'."""
    sent: list[str] = []
    real = agent.placement._send

    def send(method: str, path: str, *args: Any, **kwargs: Any) -> Any:
        sent.append(f"{method} {path}")
        return real(method, path, *args, **kwargs)

    monkeypatch.setattr(agent.placement, "_send", send)
    return sent


def test_an_idle_host_reads_only_its_allocations_each_period(
        cloud: Cloud, monkeypatch: pytest.MonkeyPatch) -> None:
    node = cloud.add_host("host1")
    agent = cloud.plane.agent("host1")
    add_instance(cloud, "host1")
    add_instance(cloud, "host1")
    agent.update_available_resource()  # heals both (see below): allocations written
    sent = _counting(monkeypatch, agent)
    agent.update_available_resource()
    # the provider report is cached, the heal and usage come from this one read
    assert sent == [f"GET /resource_providers/{node}/allocations"]
    hyp = hypervisor(cloud, "host1")
    assert (hyp["vcpus_used"], hyp["memory_mb_used"], hyp["running_vms"]) == (4, 2048, 2)


def test_a_change_behind_the_agent_is_put_right_at_the_refresh_or_on_reset(
        cloud: Cloud, monkeypatch: pytest.MonkeyPatch) -> None:
    node = cloud.add_host("host1", traits=("CUSTOM_MINE",))
    agent = cloud.plane.agent("host1")
    gen = cloud.placement.get(f"/resource_providers/{node}").json()["generation"]
    resp = cloud.placement.put(f"/resource_providers/{node}/traits", json={
        "resource_provider_generation": gen, "traits": []})
    assert resp.status_code == 200, resp.text
    agent.update_available_resource()
    assert traits(cloud, node) == set()  # cached: as nova-compute, it does not look yet
    agent.reset_provider_cache()  # SIGHUP to the agent process
    agent.update_available_resource()
    assert traits(cloud, node) == {"CUSTOM_MINE"}

    monkeypatch.setattr(agent, "settings", dataclasses.replace(
        agent.settings, resource_provider_association_refresh=0.5))
    agent.reset_provider_cache()
    agent.update_available_resource()  # reported now: fresh for 0.5 s
    assert cloud.placement.delete(f"/resource_providers/{node}/traits").status_code == 204
    agent.update_available_resource()
    assert traits(cloud, node) == set()
    time.sleep(0.6)
    agent.update_available_resource()
    assert traits(cloud, node) == {"CUSTOM_MINE"}


def test_a_disabled_service_is_reported_at_once_despite_the_cache(cloud: Cloud) -> None:
    node = cloud.add_host("host1")
    agent = cloud.plane.agent("host1")
    with cloud.live.cell_db.write() as conn:
        found = services.service_by_host(conn, "host1", services.COMPUTE)
        services.update_service(conn, found.id, disabled=True)
    agent.update_available_resource()
    assert "COMPUTE_STATUS_DISABLED" in traits(cloud, node)


# --- reconcile ----------------------------------------------------------------------
def test_reconcile_heals_the_missing_allocation_of_an_active_instance(cloud: Cloud) -> None:
    node = cloud.add_host("host1")
    active = add_instance(cloud, "host1")
    volume = add_instance(cloud, "host1", volume_backed=True)
    cloud.plane.agent("host1").update_available_resource()
    # DISK_GB = root 10 + ephemeral 5 + swap 1 GiB; a volume-backed root takes none here.
    assert held(cloud.placement, active) == {
        node: {"VCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 16}}
    assert held(cloud.placement, volume) == {
        node: {"VCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 6}}
    hyp = hypervisor(cloud, "host1")
    assert (hyp["vcpus_used"], hyp["memory_mb_used"], hyp["local_gb_used"],
            hyp["running_vms"]) == (4, 2048, 22, 2)


def test_reconcile_heals_disk_onto_the_sharing_provider(cloud: Cloud) -> None:
    node = cloud.add_host("host2", shared_storage="ceph1")
    sharing = provider_named(cloud, "ceph1")["uuid"]
    uuid = add_instance(cloud, "host2")
    cloud.plane.agent("host2").update_available_resource()
    assert held(cloud.placement, uuid) == {node: {"VCPU": 2, "MEMORY_MB": 1024},
                                           sharing: {"DISK_GB": 16}}


def test_reconcile_leaves_building_moving_held_and_unknown_consumers(cloud: Cloud) -> None:
    node = cloud.add_host("host1")
    building = add_instance(cloud, "host1", vm_state=states.BUILDING)
    moving = add_instance(cloud, "host1")
    add_migration(cloud, moving, "pre-migrating", "host1", "host2")
    placed = add_instance(cloud, "host1")
    assert put(cloud.placement, placed, {node: {"VCPU": 1}}).status_code == 204
    stranger = new_uuid()
    assert put(cloud.placement, stranger, {node: {"VCPU": 3}}).status_code == 204
    cloud.plane.agent("host1").update_available_resource()
    assert held(cloud.placement, building) == {}
    assert held(cloud.placement, moving) == {}
    assert held(cloud.placement, placed) == {node: {"VCPU": 1}}
    assert held(cloud.placement, stranger) == {node: {"VCPU": 3}}


def test_reconcile_deletes_allocations_of_deleted_instances_and_finished_migrations(
        cloud: Cloud) -> None:
    node = cloud.add_host("host1")
    gone = add_instance(cloud, "host1")
    assert put(cloud.placement, gone, {node: {"VCPU": 2}}).status_code == 204
    with cloud.live.cell_db.write() as conn:
        instances.soft_delete(conn, gone)
    live = add_instance(cloud, "host1")
    done = add_migration(cloud, live, "confirmed", "host1", "host2")
    running = add_migration(cloud, live, "migrating", "host1", "host2")
    assert put(cloud.placement, done, {node: {"VCPU": 1}},
               consumer_type="MIGRATION").status_code == 204
    assert put(cloud.placement, running, {node: {"VCPU": 2}},
               consumer_type="MIGRATION").status_code == 204
    agent = cloud.plane.agent("host1")
    agent.update_available_resource()
    agent.update_available_resource()
    assert held(cloud.placement, gone) == {} and held(cloud.placement, done) == {}
    assert held(cloud.placement, running) == {node: {"VCPU": 2}}
    assert cloud.placement.get(f"/resource_providers/{node}/usages").json()["usages"] == {
        "VCPU": 2, "MEMORY_MB": 0, "DISK_GB": 0}


# --- PCI claims and steps -------------------------------------------------------------
def pci_stats(cloud: Cloud, host: str) -> dict[str, Any]:
    with cloud.live.cell_db.read() as conn:
        node = services.compute_node_of_host(conn, host)
    assert node is not None
    return node.pci_stats


def test_build_claims_pci_devices_and_terminate_frees_them(cloud: Cloud) -> None:
    cloud.add_host("host1", pci={"gpu": 2})
    agent = cloud.plane.agent("host1")
    first, second = spawning(cloud, GPU), spawning(cloud, GPU2)
    agent.build_and_run_instance(first, GPU)
    agent.build_and_run_instance(first, GPU)
    assert pci_stats(cloud, "host1") == {"gpu": {"total": 2, "free": 1}}
    with pytest.raises(PciClaimFailed):
        agent.build_and_run_instance(second, GPU2)
    assert agent.driver.list_instances() == [first]
    agent.terminate_instance(first)
    agent.terminate_instance(first)
    assert pci_stats(cloud, "host1") == {"gpu": {"total": 2, "free": 2}}
    assert agent.driver.list_instances() == []


def test_a_failed_spawn_or_claim_leaves_no_trace(cloud: Cloud) -> None:
    cloud.add_host("host1", pci={"gpu": 1})
    agent = cloud.plane.agent("host1")
    uuid = spawning(cloud, GPU)
    agent.driver.fail("spawn")
    with pytest.raises(SimulatedFault):
        agent.build_and_run_instance(uuid, GPU)
    agent.driver.fail("claim")
    with pytest.raises(SimulatedFault):
        agent.build_and_run_instance(uuid, GPU)
    assert pci_stats(cloud, "host1") == {"gpu": {"total": 1, "free": 1}}
    assert agent.driver.list_instances() == []


def resize_on(cloud: Cloud, source: str, dest: str, flavor: dict[str, Any],
              new_flavor: dict[str, Any]) -> tuple[str, str]:
    uuid = spawning(cloud, flavor)
    cloud.plane.agent(source).build_and_run_instance(uuid, flavor)
    mig = add_migration(cloud, uuid, "migrating", source, dest)
    cloud.plane.agent(dest).prep_resize(uuid, mig, new_flavor)
    cloud.plane.agent(source).resize_instance(uuid, mig, dest, new_flavor)
    cloud.plane.agent(dest).finish_resize(uuid, mig, new_flavor, True)
    return uuid, mig


def test_same_host_resize_holds_both_claims_until_confirm(cloud: Cloud) -> None:
    cloud.add_host("host1", pci={"gpu": 3})
    agent = cloud.plane.agent("host1")
    uuid, mig = resize_on(cloud, "host1", "host1", GPU, GPU2)
    assert pci_stats(cloud, "host1") == {"gpu": {"total": 3, "free": 0}}
    assert agent.driver.list_instances() == [uuid]
    agent.confirm_resize(uuid, mig)
    agent.confirm_resize(uuid, mig)
    assert pci_stats(cloud, "host1") == {"gpu": {"total": 3, "free": 1}}
    assert agent.driver.list_instances() == [uuid]


def test_same_host_resize_revert_brings_the_old_guest_back(cloud: Cloud) -> None:
    cloud.add_host("host1", pci={"gpu": 3})
    agent = cloud.plane.agent("host1")
    uuid, mig = resize_on(cloud, "host1", "host1", GPU, GPU2)
    for _ in range(2):
        agent.revert_resize(uuid, mig)
        agent.finish_revert_resize(uuid, mig, GPU, True)
    assert pci_stats(cloud, "host1") == {"gpu": {"total": 3, "free": 2}}
    assert agent.driver.list_instances() == [uuid]
    assert agent.driver.power_state(uuid) == states.RUNNING


def test_resize_across_hosts_confirm_and_revert(cloud: Cloud) -> None:
    cloud.add_host("host1", pci={"gpu": 2})
    cloud.add_host("host2", pci={"gpu": 2})
    one, two = cloud.plane.agent("host1"), cloud.plane.agent("host2")
    kept, mig = resize_on(cloud, "host1", "host2", GPU, GPU2)
    one.confirm_resize(kept, mig)
    assert pci_stats(cloud, "host1") == {"gpu": {"total": 2, "free": 2}}
    assert pci_stats(cloud, "host2") == {"gpu": {"total": 2, "free": 0}}
    assert (one.driver.list_instances(), two.driver.list_instances()) == ([], [kept])
    two.terminate_instance(kept)
    back, mig = resize_on(cloud, "host1", "host2", GPU, GPU)
    two.revert_resize(back, mig)
    one.finish_revert_resize(back, mig, GPU, True)
    assert pci_stats(cloud, "host1") == {"gpu": {"total": 2, "free": 1}}
    assert pci_stats(cloud, "host2") == {"gpu": {"total": 2, "free": 2}}
    assert (one.driver.list_instances(), two.driver.list_instances()) == ([back], [])


def test_aborted_resize_steps_undo_themselves(cloud: Cloud) -> None:
    cloud.add_host("host1", pci={"gpu": 1})
    cloud.add_host("host2", pci={"gpu": 1})
    one, two = cloud.plane.agent("host1"), cloud.plane.agent("host2")
    uuid, mig = resize_on(cloud, "host1", "host2", GPU, GPU)
    for _ in range(2):
        two.abort_finish_resize(uuid, mig)
        two.abort_prep_resize(uuid, mig)
        one.abort_resize_instance(uuid, mig)
    assert pci_stats(cloud, "host2") == {"gpu": {"total": 1, "free": 1}}
    assert (one.driver.list_instances(), two.driver.list_instances()) == ([uuid], [])
    assert one.driver.power_state(uuid) == states.RUNNING
    with pytest.raises(PciClaimFailed):
        two.prep_resize(uuid, new_uuid(), GPU2)


def test_power_steps(cloud: Cloud) -> None:
    cloud.add_host("host1")
    agent = cloud.plane.agent("host1")
    uuid = spawning(cloud)
    agent.build_and_run_instance(uuid, SMALL)
    agent.power_off_instance(uuid)
    assert agent.driver.power_state(uuid) == states.SHUTDOWN
    agent.power_on_instance(uuid)
    assert agent.driver.power_state(uuid) == states.RUNNING


def test_agent_steps_answer_over_the_transport(cloud: Cloud) -> None:
    cloud.add_host("host1")
    uuid = spawning(cloud)
    cloud.plane.transport.call("compute.host1", "build_and_run_instance",
                               instance_uuid=uuid, flavor=SMALL)
    assert cloud.plane.agent("host1").driver.list_instances() == [uuid]


def test_a_stopped_agent_no_longer_heartbeats(cloud: Cloud) -> None:
    """A stopped agent stops heartbeating; its last report stays (state comes from age)."""
    cloud.add_host("host1")
    agent = cloud.plane.agent("host1")
    cloud.plane.stop_host("host1")
    with cloud.live.cell_db.read() as conn:
        before = services.service_by_host(conn, "host1", services.COMPUTE).report_count
    agent.heartbeat()
    with cloud.live.cell_db.read() as conn:
        assert services.service_by_host(conn, "host1", services.COMPUTE).report_count == before
