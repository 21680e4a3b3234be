"""The request spec as the scheduler reads it, and the allocation-candidates query it sends."""

from __future__ import annotations

from stowage.compute.scheduler.request import RequestedDestination, candidate_query
from tests.unit.scheduler_builders import FLAVOR, INSTANCE, request


def test_flavor_becomes_amounts_and_defaults() -> None:
    req = request()
    assert req.instance_uuids == [INSTANCE]
    assert req.amounts() == {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20}
    assert (req.project_id, req.user_id) == ("p1", "u1")
    assert req.availability_zone is None and req.destination is None
    assert req.ignore_hosts == frozenset() and req.group_uuid is None
    assert req.pci_requests == {} and req.move is False


def test_volume_backed_root_takes_no_disk() -> None:
    flavor = {**FLAVOR, "ephemeral_gb": 5, "swap": 1536}
    assert request(flavor=flavor, is_volume_backed=True).amounts() == {
        "VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 5 + 2}


def test_spec_fields_are_read() -> None:
    flavor = {**FLAVOR, "extra_specs": {"pci_passthrough:alias": "gpu:2"}}
    req = request(flavor=flavor, availability_zone="az1", ignore_hosts=["h1"],
                  requested_destination={"host": "h2", "node": None},
                  scheduler_hints={"group": ["g-1"]}, move=True)
    assert req.pci_requests == {"gpu": 2}
    assert req.availability_zone == "az1"
    assert req.ignore_hosts == frozenset({"h1"})
    assert req.destination == RequestedDestination("h2", None)
    assert req.group_uuid == "g-1" and req.move is True
    assert request(instance_group="g-2", scheduler_hints={"group": "g-1"}).group_uuid == "g-2"


def test_instance_uuids_default_to_the_spec_instance() -> None:
    assert request(instance_uuids=[]).instance_uuids == [INSTANCE]


def test_query_forbids_disabled_computes_and_limits() -> None:
    params = candidate_query(request(), limit=7)
    assert params == [("resources", "DISK_GB:20,MEMORY_MB:2048,VCPU:2"),
                      ("required", "!COMPUTE_STATUS_DISABLED"), ("limit", "7")]


def test_query_keeps_flavor_and_image_traits_and_groups() -> None:
    flavor = {**FLAVOR, "extra_specs": {
        "trait:HW_CPU_X86_AVX": "required", "resources1:SRIOV_NET_VF": "1",
        "resources2:SRIOV_NET_VF": "1", "group_policy": "isolate"}}
    req = request(flavor=flavor, image={"id": "i", "properties": {
        "trait:STORAGE_DISK_SSD": "required"}})
    params = candidate_query(req, limit=10)
    assert ("required", "HW_CPU_X86_AVX,STORAGE_DISK_SSD,!COMPUTE_STATUS_DISABLED") in params
    assert ("resources1", "SRIOV_NET_VF:1") in params
    assert ("resources2", "SRIOV_NET_VF:1") in params
    assert ("group_policy", "isolate") in params
    # The request itself is not changed by building the query.
    assert req.placement.groups[""].forbidden == set()


def test_requested_destination_searches_every_group_in_its_tree() -> None:
    flavor = {**FLAVOR, "extra_specs": {"resources1:SRIOV_NET_VF": "1"}}
    params = candidate_query(request(flavor=flavor), limit=5, in_tree="node-uuid")
    assert ("in_tree", "node-uuid") in params
    assert ("in_tree1", "node-uuid") in params
