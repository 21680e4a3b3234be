"""Weighers: spread prefers the emptiest host, pack the fullest; names break ties."""

from __future__ import annotations

from collections import Counter

import pytest

from stowage.compute.scheduler.request import GroupState
from stowage.compute.scheduler.weighers import weigh, weighers_for
from tests.unit.scheduler_builders import Host, host_states, request

HOSTS = [Host("full", used={"VCPU": 12, "MEMORY_MB": 30000, "DISK_GB": 900}),
         Host("half", used={"VCPU": 8, "MEMORY_MB": 16000, "DISK_GB": 500}),
         Host("empty")]


def order(strategy: str, hosts: list[Host], group: GroupState | None = None) -> list[str]:
    req = request()
    req.group = group
    return [w.host.host for w in weigh(host_states(hosts, req), req, weighers_for(strategy))]


def test_spread_prefers_the_emptiest() -> None:
    assert order("spread", HOSTS) == ["empty", "half", "full"]


def test_pack_prefers_the_fullest() -> None:
    assert order("pack", HOSTS) == ["full", "half", "empty"]


@pytest.mark.parametrize("strategy", ["spread", "pack"])
def test_ties_go_to_the_host_name(strategy: str) -> None:
    assert order(strategy, [Host("c"), Host("a"), Host("b")]) == ["a", "b", "c"]


def test_weights_are_normalized_and_explained() -> None:
    req = request()
    weighed = weigh(host_states(HOSTS, req), req, weighers_for("spread"))
    assert weighed[0].parts["RAMWeigher"] == 1.0
    assert weighed[-1].parts["RAMWeigher"] == 0.0
    assert weighed[0].weight == pytest.approx(3.0)


def test_soft_affinity_and_soft_anti_affinity() -> None:
    hosts = [Host("a"), Host("b")]
    on_b = Counter({"b": 1})
    assert order("spread", hosts, GroupState("g", "soft-affinity", 1, on_b)) == ["b", "a"]
    assert order("spread", hosts, GroupState("g", "soft-anti-affinity", 1,
                                             Counter({"a": 1}))) == ["b", "a"]


def test_unknown_strategy_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown weigher strategy"):
        weighers_for("random")
