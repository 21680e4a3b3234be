"""Weighers: spread prefers the emptiest host, pack the fullest; names break ties."""

from __future__ import annotations

from collections import Counter

import pytest

from stowage.compute.scheduler.request import GroupState
from stowage.compute.scheduler.weighers import (
    CROSS_CELL_KEY,
    CrossCellWeigher,
    weigh,
    weighers_for,
)
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


# --- CrossCellWeigher ------------------------------------------------------------------
SOURCE, OTHER = "cell-a", "cell-b"


def cross_cell_order(hosts: list[Host], cross_cell_from: str | None,
                     multiplier: float = 1000000.0) -> list[str]:
    req = request(cross_cell_from=cross_cell_from)
    stack = weighers_for("spread", cross_cell_multiplier=multiplier)
    return [w.host.host for w in weigh(host_states(hosts, req), req, stack)]


def test_a_move_allowed_to_leave_its_cell_prefers_its_own() -> None:
    """The other cell's host is emptier (spread would pick it) but stays second."""
    hosts = [Host("mine", used={"VCPU": 8, "MEMORY_MB": 16000}, cell=SOURCE),
             Host("other", cell=OTHER)]
    assert cross_cell_order(hosts, SOURCE) == ["mine", "other"]
    assert cross_cell_order(hosts, None) == ["other", "mine"]  # not a cross-cell move


def test_an_aggregate_multiplier_drains_a_cell() -> None:
    """Aggregates of the source cell's host with a negative multiplier: the other cell
    wins; the least of several values counts, a non-number is ignored."""
    drained = {CROSS_CELL_KEY: frozenset({"-1000000.0", "5", "lots"})}
    hosts = [Host("mine", cell=SOURCE, aggregates=drained),
             Host("other", used={"VCPU": 8, "MEMORY_MB": 16000}, cell=OTHER)]
    assert cross_cell_order(hosts, SOURCE) == ["other", "mine"]
    req = request(cross_cell_from=SOURCE)
    [mine] = [h for h in host_states(hosts, req) if h.host == "mine"]
    assert CrossCellWeigher().multiplier_for(mine) == -1000000.0


def test_the_setting_sets_the_multiplier() -> None:
    hosts = [Host("mine", used={"VCPU": 8, "MEMORY_MB": 16000}, cell=SOURCE),
             Host("other", cell=OTHER)]
    assert cross_cell_order(hosts, SOURCE, multiplier=0.0) == ["other", "mine"]
