"""Flavor -> Placement request, as Nova builds it."""

from __future__ import annotations

from typing import Any

from stowage.compute.resources import pci_requests, placement_request


def _flavor(**extra_specs: str) -> dict[str, Any]:
    return {"vcpus": 2, "memory_mb": 2048, "root_gb": 20, "ephemeral_gb": 5, "swap": 1500,
            "extra_specs": extra_specs}


def test_plain_flavor() -> None:
    req = placement_request(_flavor())
    assert req.query() == [("resources", "DISK_GB:27,MEMORY_MB:2048,VCPU:2")]


def test_volume_backed_root_consumes_no_disk() -> None:
    assert placement_request(_flavor(), volume_backed=True).amounts()["DISK_GB"] == 7


def test_overrides_traits_and_groups() -> None:
    req = placement_request(_flavor(**{
        "resources:VCPU": "0", "resources:PCPU": "2", "trait:HW_CPU_X86_AVX2": "required",
        "trait:CUSTOM_SLOW": "forbidden", "resources_NET:CUSTOM_BW": "100",
        "trait_NET:CUSTOM_PHYSNET_A": "required", "group_policy": "isolate"}),
        image_properties={"trait:HW_CPU_X86_SSE": "required"})
    assert req.query() == [
        ("resources", "DISK_GB:27,MEMORY_MB:2048,PCPU:2"),
        ("required", "HW_CPU_X86_AVX2,HW_CPU_X86_SSE,!CUSTOM_SLOW"),
        ("resources_NET", "CUSTOM_BW:100"), ("required_NET", "CUSTOM_PHYSNET_A")]
    assert req.amounts() == {"DISK_GB": 27, "MEMORY_MB": 2048, "PCPU": 2, "CUSTOM_BW": 100}


def test_two_groups_need_a_group_policy() -> None:
    req = placement_request(_flavor(**{"resources1:VGPU": "1", "resources2:VGPU": "1",
                                       "group_policy": "isolate"}))
    assert ("group_policy", "isolate") in req.query()


def test_pci_alias() -> None:
    assert pci_requests(_flavor(**{"pci_passthrough:alias": "gpu:2, nic:1"})) == {
        "gpu": 2, "nic": 1}
    assert pci_requests(_flavor()) == {}
