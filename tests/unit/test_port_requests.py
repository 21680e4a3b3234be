"""Ports' request groups and their mapping to providers (compute/port_requests.py)."""

from __future__ import annotations

import pytest

from stowage.compute import port_requests as pr
from stowage.compute.scheduler.request import SchedulingRequest
from stowage.network.resource_request import BandwidthRule, build, vnic_type_trait

EGR, IGR = "NET_BW_EGR_KILOBIT_PER_SEC", "NET_BW_IGR_KILOBIT_PER_SEC"
PORT_A = "5a1f3b34-4a0b-4b8c-9a57-2d3b0a9d1f01"
PORT_B = "5a1f3b34-4a0b-4b8c-9a57-2d3b0a9d1f02"
RULES = [BandwidthRule("r1", "egress", 1000), BandwidthRule("r2", "ingress", 2000)]


def _port(port_id: str, vnic: str = "normal", fmt: str = "groups",
          physnet: str = "physnet0", qos: bool = True) -> dict[str, object]:
    return {"id": port_id, "binding:vnic_type": vnic,
            "resource_request": build(port_id, vnic, physnet, RULES if qos else [], fmt)}


def test_a_qos_port_asks_for_its_bandwidth_in_a_group_named_by_its_id() -> None:
    request = pr.from_port(_port(PORT_A), "physnet0")
    [group] = request.groups
    assert request.fmt == "groups" and group.resources == {EGR: 1000, IGR: 2000}
    assert request.same_subtree == (group.id,)
    assert pr.profile_allocation(request, {group.id: "rp1"}) == {group.id: "rp1"}


def test_a_legacy_port_is_requested_by_the_port_and_maps_to_a_provider_uuid() -> None:
    request = pr.from_port(_port(PORT_A, fmt="legacy"), "physnet0")
    assert [g.id for g in request.groups] == [PORT_A]
    assert pr.profile_allocation(request, {PORT_A: "rp1"}) == "rp1"


def test_a_direct_port_takes_its_vf_from_the_pf_of_its_bandwidth() -> None:
    request = pr.from_port(_port(PORT_A, vnic="direct", physnet="physnet1"), "physnet1")
    [group] = request.groups
    assert group.resources == {EGR: 1000, IGR: 2000, pr.VF_CLASS: 1}
    assert request.vf_group == group.id


def test_a_direct_port_without_qos_asks_for_a_vf_only() -> None:
    request = pr.from_port(_port(PORT_A, vnic="direct", qos=False), "physnet1")
    [group] = request.groups
    assert (request.fmt, group.id, dict(group.resources)) == (None, PORT_A, {pr.VF_CLASS: 1})
    assert vnic_type_trait("direct") in group.required
    assert pr.profile_allocation(request, {PORT_A: "pf"}) is None


def test_a_port_without_a_request_asks_for_nothing() -> None:
    assert pr.from_port(_port(PORT_A, qos=False), "physnet0").groups == ()


def test_the_groups_join_the_query_with_group_policy_and_same_subtree() -> None:
    a, b = (pr.from_port(_port(p), "physnet0") for p in (PORT_A, PORT_B))
    spec = {"instance_uuid": "i", "project_id": "p", "user_id": "u",
            "flavor": {"vcpus": 1, "memory_mb": 512, "root_gb": 1, "ephemeral_gb": 0},
            "port_requests": [a.to_json(), b.to_json()]}
    query = SchedulingRequest.from_spec(spec, ["i"]).placement.query()
    ga, gb = a.groups[0].id, b.groups[0].id
    assert (f"resources{ga}", f"{EGR}:1000,{IGR}:2000") in query
    assert ("group_policy", "none") in query
    assert ("same_subtree", ga) in query and ("same_subtree", gb) in query


def test_the_mapping_is_found_in_an_allocation_by_traits_and_room() -> None:
    a, b = (pr.from_port(_port(p), "physnet0") for p in (PORT_A, PORT_B))
    bridge = {"CUSTOM_PHYSNET_PHYSNET0", "CUSTOM_VNIC_TYPE_NORMAL"}
    # Two bridges on physnet0 (traits alike): each holds one port's bandwidth.
    allocation = {"br1": {EGR: 1000, IGR: 2000}, "br2": {EGR: 1000, IGR: 2000},
                  "node": {"VCPU": 1}}
    found = pr.from_allocation([a, b], allocation, {"br1": bridge, "br2": bridge})
    assert sorted(found.values()) == ["br1", "br2"]
    # Both on one bridge: the amounts add up there.
    found = pr.from_allocation([a, b], {"br1": {EGR: 2000, IGR: 4000}}, {"br1": bridge})
    assert set(found.values()) == {"br1"}
    with pytest.raises(pr.NoMapping):
        pr.from_allocation([a, b], {"br1": {EGR: 1000, IGR: 2000}}, {"br1": bridge})


def test_the_mapping_of_a_candidate_comes_from_its_mappings() -> None:
    a = pr.from_port(_port(PORT_A), "physnet0")
    gid = a.groups[0].id
    assert pr.from_mappings([a], {"": ["node"], gid: ["br1"]}) == {gid: "br1"}
    with pytest.raises(pr.NoMapping):
        pr.from_mappings([a], {"": ["node"]})


def test_a_request_survives_its_json_form() -> None:
    a = pr.from_port(_port(PORT_A, vnic="direct"), "physnet1")
    assert pr.PortRequest.from_json(a.to_json()) == a
