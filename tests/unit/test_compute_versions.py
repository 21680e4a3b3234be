"""The compute microversion list and the extra spec rules, without a server."""

from __future__ import annotations

import pytest

from stowage.compute import extra_specs
from stowage.compute.versions import VERSIONS
from stowage.errors import Invalid


def test_compute_versions_run_from_2_1_to_2_92_without_gaps() -> None:
    assert VERSIONS[0] == "2.1"
    assert VERSIONS[-1] == "2.92"
    assert list(VERSIONS) == [f"2.{n}" for n in range(1, 93)]


@pytest.mark.parametrize(("key", "value"), [
    ("resources:VCPU", "2"), ("resources1:CUSTOM_GOLD", "0"), ("resources_NET:VCPU", "1"),
    ("trait:HW_CPU_X86_AVX2", "required"), ("trait2:CUSTOM_X", "forbidden"),
    ("group_policy", "isolate"), ("pci_passthrough:alias", "a1:2,b2:1"),
    ("hw:cpu_policy", "anything at all"), ("quota:cpu_shares", "x"),
])
def test_well_formed_extra_specs_pass(key: str, value: str) -> None:
    extra_specs.validate_one(key, value)


@pytest.mark.parametrize(("key", "value"), [
    ("resources:VCPU", "two"), ("resources:VCPU", "-1"), ("resources:NOT_A_CLASS", "1"),
    ("trait:HW_CPU_X86_AVX2", "yes"), ("trait:NOT_A_TRAIT", "required"),
    ("group_policy", "spread"), ("pci_passthrough:alias", "a1"),
    ("pci_passthrough:alias", "a1:0"),
])
def test_malformed_placement_extra_specs_are_invalid(key: str, value: str) -> None:
    with pytest.raises(Invalid):
        extra_specs.validate_one(key, value)
