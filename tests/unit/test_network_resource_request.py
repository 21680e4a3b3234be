"""The port resource request: trait names, group ids, both renderings, and reading them back."""

from __future__ import annotations

import uuid

import os_traits
import pytest

from stowage.network.resource_request import (
    EGRESS_CLASS,
    INGRESS_CLASS,
    TUNNEL_TRAIT,
    BandwidthRule,
    PortRequest,
    RequestGroup,
    build,
    group_id,
    physnet_trait,
    read,
    vnic_type_trait,
)

PORT = "5b3c2d8e-7c4e-4f0c-9a1a-1f5e2d3c4b5a"
EGRESS = BandwidthRule("b3f3f12e-df1c-4280-abab-2dc7539c60d5", "egress", 1000)
INGRESS = BandwidthRule("76058879-86a4-4a9c-8f50-815328be77ea", "ingress", 2000)


@pytest.mark.parametrize(("physnet", "trait"), [
    ("physnet0", "CUSTOM_PHYSNET_PHYSNET0"),
    ("phys-net.1", "CUSTOM_PHYSNET_PHYS_NET_1"),
    ("a--b  c", "CUSTOM_PHYSNET_A_B_C"),
    ("ünï", "CUSTOM_PHYSNET_N_"),
])
def test_physnet_trait_is_os_traits_normalised(physnet: str, trait: str) -> None:
    assert physnet_trait(physnet) == trait
    assert trait == os_traits.normalize_name(f"PHYSNET_{physnet}")


@pytest.mark.parametrize(("vnic", "trait"), [
    ("normal", "CUSTOM_VNIC_TYPE_NORMAL"), ("direct", "CUSTOM_VNIC_TYPE_DIRECT"),
    ("direct-physical", "CUSTOM_VNIC_TYPE_DIRECT_PHYSICAL"),
])
def test_vnic_type_trait(vnic: str, trait: str) -> None:
    assert vnic_type_trait(vnic) == trait


def test_group_id_is_uuid5_of_the_sorted_rule_ids_under_the_port() -> None:
    expected = uuid.uuid5(uuid.UUID(PORT), f"{INGRESS.id}:{EGRESS.id}")
    assert group_id(PORT, [EGRESS, INGRESS]) == str(expected)
    assert group_id(PORT, [INGRESS, EGRESS]) == str(expected)
    assert group_id(PORT, [EGRESS]) != str(expected)
    other_port = str(uuid.uuid4())
    assert group_id(other_port, [EGRESS, INGRESS]) != str(expected)


def test_groups_format() -> None:
    built = build(PORT, "direct", "physnet0", [EGRESS, INGRESS])
    gid = group_id(PORT, [EGRESS, INGRESS])
    assert built == {"request_groups": [{
        "id": gid, "required": ["CUSTOM_PHYSNET_PHYSNET0", "CUSTOM_VNIC_TYPE_DIRECT"],
        "resources": {EGRESS_CLASS: 1000, INGRESS_CLASS: 2000}}], "same_subtree": [gid]}


def test_groups_format_on_a_tunnel_network() -> None:
    built = build(PORT, "normal", None, [EGRESS])
    assert built is not None
    assert built["request_groups"][0]["required"] == [TUNNEL_TRAIT, "CUSTOM_VNIC_TYPE_NORMAL"]
    assert built["request_groups"][0]["resources"] == {EGRESS_CLASS: 1000}


def test_legacy_format() -> None:
    assert build(PORT, "normal", "physnet0", [INGRESS], "legacy") == {
        "required": ["CUSTOM_PHYSNET_PHYSNET0", "CUSTOM_VNIC_TYPE_NORMAL"],
        "resources": {INGRESS_CLASS: 2000}}
    assert build(PORT, "normal", None, [INGRESS], "legacy") is None


@pytest.mark.parametrize("fmt", ["groups", "legacy"])
def test_no_rules_no_request(fmt: str) -> None:
    assert build(PORT, "normal", "physnet0", [], fmt) is None


def test_unknown_format_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="unknown resource_request format"):
        build(PORT, "normal", "physnet0", [EGRESS], "v3")


def test_read_either_format_into_the_same_groups() -> None:
    groups = read(PORT, build(PORT, "direct", "physnet0", [EGRESS, INGRESS]))
    legacy = read(PORT, build(PORT, "direct", "physnet0", [EGRESS, INGRESS], "legacy"))
    gid = group_id(PORT, [EGRESS, INGRESS])
    required = ("CUSTOM_PHYSNET_PHYSNET0", "CUSTOM_VNIC_TYPE_DIRECT")
    resources = {EGRESS_CLASS: 1000, INGRESS_CLASS: 2000}
    assert groups == PortRequest((RequestGroup(gid, resources, required),), (gid,))
    assert legacy == PortRequest((RequestGroup(PORT, resources, required),), ())


@pytest.mark.parametrize("raw", [None, {}, {"required": [], "resources": {}},
                                 {"request_groups": [], "same_subtree": []}])
def test_read_nothing(raw: dict[str, object] | None) -> None:
    assert read(PORT, raw) == PortRequest()


def test_read_skips_groups_without_resources() -> None:
    raw = {"request_groups": [{"id": "g1", "required": ["T"], "resources": {}},
                              {"id": "g2", "required": ["T"], "resources": {"X": "5"}}],
           "same_subtree": ["g1", "g2"]}
    assert read(PORT, raw).groups == (RequestGroup("g2", {"X": 5}, ("T",)),)
