"""The candidate engine over hand-built snapshots: trees, sharing, groups, limits."""

from __future__ import annotations

import random

from stowage.placement.candidates.snapshot import Provider
from tests.unit.candidates_builders import (
    allocations,
    as_set,
    inv,
    provider,
    run,
    snapshot,
)

SHARES = "MISC_SHARES_VIA_AGGREGATE"
AGG_A = "11111111-1111-1111-1111-111111111111"


def test_flat_providers_each_satisfy_everything() -> None:
    snap = snapshot(provider(1, VCPU=8, MEMORY_MB=1024), provider(2, VCPU=8, MEMORY_MB=512),
                    provider(3, VCPU=8))
    result = run(snap, "resources=VCPU:2,MEMORY_MB:1024")
    assert allocations(result) == [{1: {"VCPU": 2, "MEMORY_MB": 1024}}]
    assert result.summary_ids == [1]


def test_nested_tree_spreads_unsuffixed_group() -> None:
    """
        cn(1) MEMORY_MB
        /          \\
    numa0(2)     numa1(3)
    VCPU:4       VCPU:4
    """
    snap = snapshot(provider(1, MEMORY_MB=2048), provider(2, 1, 1, VCPU=4),
                    provider(3, 1, 1, VCPU=4))
    result = run(snap, "resources=VCPU:2,MEMORY_MB:512")
    assert as_set(result) == {
        frozenset({(2, "VCPU", 2), (1, "MEMORY_MB", 512)}),
        frozenset({(3, "VCPU", 2), (1, "MEMORY_MB", 512)}),
    }
    assert result.summary_ids == [1, 2, 3]
    assert result.candidates[0].mappings == {"": [2, 1]}


def test_before_1_29_one_provider_per_tree() -> None:
    snap = snapshot(provider(1, MEMORY_MB=2048), provider(2, 1, 1, VCPU=4),
                    provider(4, MEMORY_MB=2048, VCPU=4))
    result = run(snap, "resources=VCPU:2,MEMORY_MB:512", minor=28)
    assert allocations(result) == [{4: {"VCPU": 2, "MEMORY_MB": 512}}]
    assert result.summary_ids == [4]


def test_sharing_provider_serves_its_aggregate() -> None:
    """cn1, cn2 and ss in aggregate A; cn3 outside; ss shares DISK_GB."""
    snap = snapshot(provider(1, aggs={"A"}, VCPU=8), provider(2, aggs={"A"}, VCPU=8),
                    provider(3, VCPU=8),
                    provider(9, aggs={"A"}, traits={SHARES}, DISK_GB=100))
    result = run(snap, "resources=VCPU:1,DISK_GB:10")
    assert as_set(result) == {frozenset({(1, "VCPU", 1), (9, "DISK_GB", 10)}),
                              frozenset({(2, "VCPU", 1), (9, "DISK_GB", 10)})}
    assert set(result.summary_ids) == {1, 2, 9}


def test_disk_alone_from_sharing_provider_is_one_candidate() -> None:
    snap = snapshot(provider(1, aggs={"A"}, VCPU=8), provider(2, aggs={"A"}, VCPU=8),
                    provider(9, aggs={"A"}, traits={SHARES}, DISK_GB=100))
    result = run(snap, "resources=DISK_GB:10")
    assert allocations(result) == [{9: {"DISK_GB": 10}}]
    assert result.summary_ids == [9]


def _two_pfs() -> list[Provider]:
    return [provider(1, VCPU=8), provider(2, 1, 1, traits={"CUSTOM_PHYSNET_A"},
                                          SRIOV_NET_VF=4),
            provider(3, 1, 1, traits={"CUSTOM_PHYSNET_B"}, SRIOV_NET_VF=4)]


def test_granular_isolate_needs_distinct_providers() -> None:
    snap = snapshot(*_two_pfs())
    isolate = run(snap, "resources1=SRIOV_NET_VF:1&resources2=SRIOV_NET_VF:1"
                        "&group_policy=isolate")
    assert [c.mappings for c in isolate.candidates] == [{"1": [2], "2": [3]},
                                                        {"1": [3], "2": [2]}]
    none = run(snap, "resources1=SRIOV_NET_VF:1&resources2=SRIOV_NET_VF:1&group_policy=none")
    assert len(none.candidates) == 4
    assert {2: {"SRIOV_NET_VF": 2}} in allocations(none)


def test_granular_traits_apply_to_the_group_provider() -> None:
    snap = snapshot(*_two_pfs())
    result = run(snap, "resources=VCPU:1&resources1=SRIOV_NET_VF:1"
                       "&required1=CUSTOM_PHYSNET_B")
    assert allocations(result) == [{1: {"VCPU": 1}, 3: {"SRIOV_NET_VF": 1}}]
    anyof = run(snap, "resources1=SRIOV_NET_VF:1&required1=in:CUSTOM_PHYSNET_A,CUSTOM_GOLD")
    assert allocations(anyof) == [{2: {"SRIOV_NET_VF": 1}}]


def test_amounts_from_several_groups_must_fit_together() -> None:
    snap = snapshot(provider(1, VCPU=8))
    assert run(snap, "resources=VCPU:6&resources1=VCPU:2").candidates
    assert not run(snap, "resources=VCPU:6&resources1=VCPU:4").candidates


def test_step_size_min_and_max_unit() -> None:
    snap = snapshot(provider(1, VCPU=inv(16, step=4, min_unit=4, max_unit=8)))
    assert not run(snap, "resources=VCPU:3").candidates
    assert not run(snap, "resources=VCPU:2").candidates
    assert run(snap, "resources=VCPU:8").candidates
    assert not run(snap, "resources=VCPU:12").candidates
    # Two groups of 4 are each valid, but together exceed max_unit 8 on one provider.
    assert not run(snap, "resources=VCPU:4&resources1=VCPU:8").candidates


def test_capacity_counts_usage_reserved_and_ratio() -> None:
    snap = snapshot(provider(1, VCPU=inv(4, reserved=1, ratio=2.0, used=5)))
    assert run(snap, "resources=VCPU:1").candidates
    assert not run(snap, "resources=VCPU:2").candidates


def test_same_subtree_and_resourceless_groups() -> None:
    """
              cn(1) VCPU
            /            \\
        nic1(2) PHYSNET_A   nic2(3) PHYSNET_B
         |                    |
        pf1(4) VF            pf2(5) VF
    """
    snap = snapshot(provider(1, VCPU=8), provider(2, 1, 1, traits={"CUSTOM_PHYSNET_A"}),
                    provider(3, 1, 1, traits={"CUSTOM_PHYSNET_B"}),
                    provider(4, 2, 1, SRIOV_NET_VF=4), provider(5, 3, 1, SRIOV_NET_VF=4))
    qs = ("resources_VF=SRIOV_NET_VF:1&required_NIC=CUSTOM_PHYSNET_B"
          "&same_subtree=_VF,_NIC&group_policy=none")
    result = run(snap, qs)
    assert allocations(result) == [{5: {"SRIOV_NET_VF": 1}}]
    assert result.candidates[0].mappings == {"_VF": [5], "_NIC": [3]}
    assert result.summary_ids == [1, 2, 3, 4, 5]


def test_member_of_on_unsuffixed_group_accepts_the_root_aggregate() -> None:
    snap = snapshot(provider(1, aggs={AGG_A}, MEMORY_MB=1024), provider(2, 1, 1, VCPU=4),
                    provider(3, MEMORY_MB=1024, VCPU=4))
    result = run(snap, f"resources=VCPU:1&member_of={AGG_A}")
    assert allocations(result) == [{2: {"VCPU": 1}}]
    granular = run(snap, f"resources1=VCPU:1&member_of1={AGG_A}")
    assert not granular.candidates


def test_root_required_and_in_tree() -> None:
    snap = snapshot(provider(1, traits={"CUSTOM_GOLD"}), provider(2, 1, 1, VCPU=4),
                    provider(3, VCPU=4))
    assert allocations(run(snap, "resources=VCPU:1&root_required=CUSTOM_GOLD")) == [
        {2: {"VCPU": 1}}]
    assert allocations(run(snap, "resources=VCPU:1&root_required=!CUSTOM_GOLD")) == [
        {3: {"VCPU": 1}}]
    assert allocations(run(snap, "resources=VCPU:1&in_tree=rp-1".replace(
        "rp-1", "00000000-0000-0000-0000-000000000000"))) == []


def test_forbidden_trait_anywhere_in_the_combination() -> None:
    snap = snapshot(provider(1, traits={"CUSTOM_GOLD"}, MEMORY_MB=1024),
                    provider(2, 1, 1, VCPU=4))
    assert not run(snap, "resources=VCPU:1,MEMORY_MB:1&required=!CUSTOM_GOLD").candidates
    assert run(snap, "resources=VCPU:1&required=!CUSTOM_GOLD").candidates
    assert run(snap, "resources=VCPU:1,MEMORY_MB:1&required=CUSTOM_GOLD").candidates
    assert not run(snap, "resources=VCPU:1&required=CUSTOM_GOLD").candidates


def test_limit_is_deterministic_and_trims_summaries() -> None:
    snap = snapshot(*[provider(i, VCPU=4) for i in range(1, 6)])
    result = run(snap, "resources=VCPU:1&limit=2")
    assert allocations(result) == [{1: {"VCPU": 1}}, {2: {"VCPU": 1}}]
    assert result.summary_ids == [1, 2]
    shuffled = run(snap, "resources=VCPU:1&limit=2", rng=random.Random(3))
    assert len(shuffled.candidates) == 2
    assert set(shuffled.summary_ids) == {p for a in allocations(shuffled) for p in a}


def test_max_candidates_caps_generation() -> None:
    snap = snapshot(*[provider(i, VCPU=4) for i in range(1, 6)])
    assert len(run(snap, "resources=VCPU:1", max_candidates=3).candidates) == 3
