"""The scheduler against real Placement and real compute records.

Hosts are simulated agents (`cloud.add_host`) that register their service,
compute node and provider; the scheduler is called in-process, as the
conductor calls it over the transport, and what it claimed is read back from
Placement over HTTP::

    host1 (small)   host2 (medium)   host3 (large)        all in AZ "nova"
      4 VCPU          8 VCPU           16 VCPU            allocation ratios 1.0
      8 GiB          16 GiB            32 GiB
"""

from __future__ import annotations

import datetime
from typing import Any

import pytest
import sqlalchemy as sa

from stowage.compute import instances, server_groups, services
from stowage.compute import tables as t
from stowage.compute.instances import Instance
from stowage.compute.rpc import SchedulerAPI
from stowage.compute.scheduler import NoValidHost
from stowage.compute.scheduler.filters import Rejection
from stowage.compute.scheduler.manager import Scheduler
from stowage.messaging import RemoteError
from stowage.placement.client import PlacementClient
from stowage.timeutil import utcnow
from tests.functional.conftest import Cloud
from tests.functional.servers import held, new_uuid, usages

SMALL = {"id": 1, "flavorid": "1", "name": "small", "vcpus": 2, "memory_mb": 2048,
         "root_gb": 10, "ephemeral_gb": 0, "swap": 0, "extra_specs": {}}
AMOUNTS = {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 10}
NOT_ENOUGH = "No valid host was found. There are not enough hosts available."


def add(cloud: Cloud, name: str, vcpus: int, memory_mb: int, **kw: Any) -> str:
    return cloud.add_host(name, vcpus=vcpus, memory_mb=memory_mb, disk_gb=kw.pop("disk_gb", 200),
                          cpu_allocation_ratio=1.0, ram_allocation_ratio=1.0, **kw)


@pytest.fixture
def three(cloud: Cloud) -> dict[str, str]:
    """host name -> node (= provider) uuid."""
    return {"host1": add(cloud, "host1", 4, 8192), "host2": add(cloud, "host2", 8, 16384),
            "host3": add(cloud, "host3", 16, 32768)}


def spec(instance_uuid: str, **changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "instance_uuid": instance_uuid, "project_id": "p1", "user_id": "u1",
        "flavor": dict(SMALL), "is_volume_backed": False, "image": None,
        "availability_zone": None, "scheduler_hints": {}, "instance_group": None,
        "ignore_hosts": [], "requested_destination": None, "num_instances": 1, "move": False}
    base.update(changes)
    return base


def select(cloud: Cloud, uuids: list[str], **changes: Any) -> list[list[dict[str, Any]]]:
    return cloud.plane.scheduler.select_destinations(spec(uuids[0], **changes), uuids)


def names(selections: list[dict[str, Any]]) -> list[str]:
    return [s["host"] for s in selections]


def place_instance(cloud: Cloud, host: str, group: str | None = None,
                   uuid: str | None = None) -> str:
    """An instance record already running on `host`, optionally in `group`."""
    uuid = uuid or new_uuid()
    with cloud.live.cell_db.write() as conn:
        instances.create(conn, Instance(uuid=uuid, project_id="p1", user_id="u1",
                                        display_name=uuid[:8], flavor=dict(SMALL),
                                        vm_state="active", host=host, node=host))
    if group is not None:
        with cloud.live.db.write() as conn:
            server_groups.add_member(conn, group, uuid)
    return uuid


def make_group(cloud: Cloud, policy: str, rules: dict[str, Any] | None = None) -> str:
    with cloud.live.db.write() as conn:
        return server_groups.create(conn, "g", policy, "p1", "u1", rules).uuid


def test_spread_claims_the_emptiest_host_and_keeps_alternates(cloud: Cloud,
                                                               three: dict[str, str]) -> None:
    uuid = new_uuid()
    [selections] = select(cloud, [uuid])
    assert names(selections) == ["host3", "host2", "host1"]
    first = selections[0]
    assert first["node"] == "host3" and first["compute_node_uuid"] == three["host3"]
    assert first["allocation_request"]["allocations"] == {
        three["host3"]: {"resources": AMOUNTS}}
    assert first["allocation_request_version"] == "1.39"
    # Only the first choice is claimed, by the instance, with the spec's project and user.
    assert held(cloud, uuid) == {three["host3"]: AMOUNTS}
    body = cloud.placement.get(f"/allocations/{uuid}").json()
    assert (body["project_id"], body["user_id"]) == ("p1", "u1")
    assert usages(cloud, three["host2"]) == {"VCPU": 0, "MEMORY_MB": 0, "DISK_GB": 0}
    assert usages(cloud, three["host1"]) == {"VCPU": 0, "MEMORY_MB": 0, "DISK_GB": 0}


def test_pack_claims_the_fullest_host(cloud: Cloud, three: dict[str, str]) -> None:
    cloud.configure(weigher="pack", max_attempts=2)
    uuid = new_uuid()
    [selections] = select(cloud, [uuid])
    assert names(selections) == ["host1", "host2"]
    assert held(cloud, uuid) == {three["host1"]: AMOUNTS}


def test_multi_instance_spread_accounts_each_claim(cloud: Cloud) -> None:
    nodes = {n: add(cloud, n, 4, 8192) for n in ("host1", "host2")}
    uuids = [new_uuid() for _ in range(4)]
    result = select(cloud, uuids, num_instances=4)
    assert [r[0]["host"] for r in result] == ["host1", "host2", "host1", "host2"]
    # Each host now holds two instances: nothing fits for alternates of the last two.
    assert [len(r) for r in result] == [2, 2, 2, 1]
    assert usages(cloud, nodes["host1"])["VCPU"] == 4
    assert usages(cloud, nodes["host2"])["VCPU"] == 4


def test_no_valid_host_leaves_no_allocation(cloud: Cloud, three: dict[str, str]) -> None:
    huge = {**SMALL, "vcpus": 64}
    uuid = new_uuid()
    with pytest.raises(NoValidHost) as caught:
        select(cloud, [uuid], flavor=huge)
    assert str(caught.value) == NOT_ENOUGH
    assert held(cloud, uuid) == {}


def test_a_request_that_runs_out_gives_back_its_earlier_claims(cloud: Cloud) -> None:
    node = add(cloud, "host1", 4, 8192)
    uuids = [new_uuid() for _ in range(3)]
    with pytest.raises(NoValidHost):
        select(cloud, uuids, num_instances=3)
    assert [held(cloud, u) for u in uuids] == [{}, {}, {}]
    assert usages(cloud, node)["VCPU"] == 0


def test_availability_zone_is_honoured(cloud: Cloud) -> None:
    add(cloud, "big", 16, 32768, availability_zone="az1")
    small = add(cloud, "small", 4, 8192, availability_zone="az2")
    uuid = new_uuid()
    [selections] = select(cloud, [uuid], availability_zone="az2")
    assert names(selections) == ["small"]
    assert held(cloud, uuid) == {small: AMOUNTS}
    assert cloud.plane.scheduler.rejections(uuid) == [Rejection(
        "big", "AvailabilityZoneFilter", "host is in availability zone 'az1', not 'az2'")]


def _service_values(cloud: Cloud, host: str, **values: Any) -> None:
    s = t.services
    with cloud.live.cell_db.write() as conn:
        conn.execute(s.update().where(s.c.host == host, s.c.binary == services.COMPUTE)
                     .values(**values))


def test_disabled_forced_down_and_silent_hosts_are_skipped(cloud: Cloud) -> None:
    for name in ("disabled", "forced", "silent", "fine"):
        add(cloud, name, 16, 32768)
    _service_values(cloud, "disabled", disabled=True, disabled_reason="maintenance")
    _service_values(cloud, "forced", forced_down=True)
    long_ago = utcnow() - datetime.timedelta(seconds=3600)
    cloud.plane.stop_host("silent")
    _service_values(cloud, "silent", last_seen_up=long_ago, created_at=long_ago)
    uuid = new_uuid()
    [selections] = select(cloud, [uuid])
    assert names(selections) == ["fine"]
    assert sorted(cloud.plane.scheduler.rejections(uuid), key=lambda r: r.host) == [
        Rejection("disabled", "ComputeFilter", "compute service is disabled (maintenance)"),
        Rejection("forced", "ComputeFilter", "compute service is forced down"),
        Rejection("silent", "ComputeFilter", "compute service is down")]


def test_a_disabled_compute_is_not_even_a_candidate(cloud: Cloud) -> None:
    add(cloud, "off", 16, 32768)
    add(cloud, "on", 4, 8192)
    _service_values(cloud, "off", disabled=True)
    assert cloud.plane.agent("off").sync_service_status() == "disabled"
    uuid = new_uuid()
    [selections] = select(cloud, [uuid])
    # Placement itself left it out (required=!COMPUTE_STATUS_DISABLED): no rejection needed.
    assert names(selections) == ["on"]
    assert cloud.plane.scheduler.rejections(uuid) == []


def test_ignore_hosts_and_requested_destination(cloud: Cloud, three: dict[str, str]) -> None:
    uuid = new_uuid()
    [selections] = select(cloud, [uuid], ignore_hosts=["host3"])
    assert names(selections) == ["host2", "host1"]
    other = new_uuid()
    [selections] = select(cloud, [other], requested_destination={"host": "host1", "node": None})
    # Placement searched only host1's tree: no alternates exist.
    assert names(selections) == ["host1"]
    assert held(cloud, other) == {three["host1"]: AMOUNTS}
    with pytest.raises(NoValidHost, match="Compute host nowhere could not be found."):
        select(cloud, [new_uuid()], requested_destination={"host": "nowhere", "node": None})


def test_anti_affinity_spreads(cloud: Cloud, three: dict[str, str]) -> None:
    group = make_group(cloud, "anti-affinity")
    place_instance(cloud, "host3", group)
    uuids = [new_uuid(), new_uuid()]
    result = select(cloud, uuids, instance_group=group, num_instances=2)
    assert [r[0]["host"] for r in result] == ["host2", "host1"]
    for uuid, choices in zip(uuids, result, strict=True):
        place_instance(cloud, choices[0]["host"], group, uuid)
    with pytest.raises(NoValidHost):
        select(cloud, [new_uuid()], instance_group=group)


def test_anti_affinity_allows_max_server_per_host(cloud: Cloud, three: dict[str, str]) -> None:
    group = make_group(cloud, "anti-affinity", {"max_server_per_host": 2})
    place_instance(cloud, "host3", group)
    [selections] = select(cloud, [new_uuid()], instance_group=group)
    assert selections[0]["host"] == "host3"


def test_affinity_packs_onto_the_group_host(cloud: Cloud, three: dict[str, str]) -> None:
    group = make_group(cloud, "affinity")
    place_instance(cloud, "host1", group)
    uuid = new_uuid()
    [selections] = select(cloud, [uuid], scheduler_hints={"group": group})
    assert names(selections) == ["host1"]
    assert held(cloud, uuid) == {three["host1"]: AMOUNTS}


def test_a_moving_instance_does_not_count_against_itself(cloud: Cloud,
                                                         three: dict[str, str]) -> None:
    group = make_group(cloud, "anti-affinity")
    moving = place_instance(cloud, "host1", group)
    place_instance(cloud, "host2", group)
    [selections] = cloud.plane.scheduler.select_destinations(
        spec(moving, instance_group=group, move=True), [moving])
    # host2 has another member; host1 has only the moving instance itself.
    assert names(selections) == ["host3", "host1"]


def test_pci_devices_are_required_per_alias(cloud: Cloud) -> None:
    add(cloud, "plain", 16, 32768)
    gpu = add(cloud, "gpu", 4, 8192, pci={"gpu": 1})
    flavor = {**SMALL, "extra_specs": {"pci_passthrough:alias": "gpu:1"}}
    uuid = new_uuid()
    [selections] = select(cloud, [uuid], flavor=flavor)
    assert names(selections) == ["gpu"]
    assert held(cloud, uuid) == {gpu: AMOUNTS}
    assert cloud.plane.scheduler.rejections(uuid) == [Rejection(
        "plain", "PciPassthroughFilter", "1 PCI device(s) of alias 'gpu' requested, 0 free")]


class Racing:
    """Real Placement, but another consumer fills `victim` just before our first claim."""

    def __init__(self, real: PlacementClient, victim: str) -> None:
        self.real = real
        self.victim = victim
        self.raced = False

    def allocation_candidates_body(self, params: Any) -> bytes:
        return bytes(self.real.allocation_candidates_body(params))

    def holding(self, consumer: str) -> Any:
        return self.real.holding(consumer)

    def claim(self, consumer: str, allocations: Any, *args: Any) -> None:
        if self.victim in allocations and not self.raced:
            self.raced = True
            self.real.claim(new_uuid(), {self.victim: {"VCPU": 16}}, "p2", "u2", None)
        self.real.claim(consumer, allocations, *args)

    def delete_allocations(self, consumer: str) -> bool:
        return self.real.delete_allocations(consumer)


def test_a_lost_claim_falls_back_to_the_next_host(cloud: Cloud, three: dict[str, str]) -> None:
    racing = Racing(cloud.plane.placement, three["host3"])
    scheduler = Scheduler(cloud.plane.settings, cloud.live.db, racing, cell_db=cloud.live.cell_db)
    uuid = new_uuid()
    [selections] = scheduler.select_destinations(spec(uuid), [uuid])
    assert racing.raced
    assert names(selections) == ["host2", "host1"]
    assert held(cloud, uuid) == {three["host2"]: AMOUNTS}
    [rejection] = scheduler.rejections(uuid)
    assert (rejection.host, rejection.filter) == ("host3", "Claim")


def test_placement_query_carries_the_flavor_traits(cloud: Cloud) -> None:
    add(cloud, "avx", 4, 8192, traits=("HW_CPU_X86_AVX2",))
    add(cloud, "plain", 16, 32768)
    flavor = {**SMALL, "extra_specs": {"trait:HW_CPU_X86_AVX2": "required"}}
    [selections] = select(cloud, [new_uuid()], flavor=flavor)
    assert names(selections) == ["avx"]


def test_group_members_are_live_instances(cloud: Cloud, three: dict[str, str]) -> None:
    group = make_group(cloud, "anti-affinity")
    gone = place_instance(cloud, "host3", group)
    with cloud.live.cell_db.write() as conn:
        instances.soft_delete(conn, gone)
    with cloud.live.db.write() as conn:
        assert server_groups.members(conn, group, cloud.live.cell_db) == []
        count = conn.execute(sa.select(sa.func.count()).select_from(t.server_group_members))
        assert count.scalar() == 1
    [selections] = select(cloud, [new_uuid()], instance_group=group)
    assert selections[0]["host"] == "host3"


def test_over_the_transport_as_the_conductor_calls_it(cloud: Cloud,
                                                      three: dict[str, str]) -> None:
    scheduler = SchedulerAPI(cloud.plane.transport)
    uuid = new_uuid()
    [selections] = scheduler.select_destinations(spec(uuid), [uuid])
    assert names(selections) == ["host3", "host2", "host1"]
    with pytest.raises(RemoteError) as caught:
        scheduler.select_destinations(spec(new_uuid(), flavor={**SMALL, "vcpus": 64}),
                                      [new_uuid()])
    assert (caught.value.exc_type, caught.value.message) == ("NoValidHost", NOT_ENOUGH)
