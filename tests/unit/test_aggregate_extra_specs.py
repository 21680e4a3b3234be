"""AggregateInstanceExtraSpecsFilter, Nova's extra-spec operators and the aggregate
pre-filters' query, in memory."""

from __future__ import annotations

import pytest

from stowage.compute.scheduler import extra_specs_ops as ops
from stowage.compute.scheduler import filters as f
from stowage.compute.scheduler.request import candidate_query
from tests.unit.scheduler_builders import FLAVOR, Host, host_states, request


@pytest.mark.parametrize(("value", "requirement", "expected"), [
    ("true", "true", True), ("true", "True", False), ("4", "= 4", True), ("8", "= 4", True),
    ("2", "= 4", False), ("4", "== 4.0", True), ("3", "!= 4", True), ("5", ">= 4", True),
    ("3", "<= 4", True), ("abc", ">= 4", False), ("ssd", "s== ssd", True),
    ("ssd", "s!= ssd", False), ("a", "s< b", True), ("b", "s>= b", True),
    ("fast-ssd", "<in> ssd", True), ("hdd", "<in> ssd", False),
    ("a b c", "<all-in> a c", True), ("a b", "<all-in> a c", False),
    ("v2", "<or> v1 <or> v2 <or> v3", True), ("v4", "<or> v1 <or> v2", False),
    ("x", "<or>", False), (None, "s== x", False), (None, "x", False),
])
def test_operators(value: str | None, requirement: str, expected: bool) -> None:
    assert ops.match(value, requirement) is expected


def reasons(extra_specs: dict[str, str], hosts: list[Host]) -> dict[str, str | None]:
    req = request(flavor={**FLAVOR, "extra_specs": extra_specs})
    flt = f.AggregateInstanceExtraSpecsFilter()
    return {s.host: flt.reject(s, req) for s in host_states(hosts, req)}


def test_scoped_and_unscoped_keys_match_aggregate_metadata() -> None:
    hosts = [Host("fast", aggregates={"ssd": frozenset({"true"}), "gen": frozenset({"3", "5"})}),
             Host("slow", aggregates={"ssd": frozenset({"false"})}), Host("bare")]
    got = reasons({"aggregate_instance_extra_specs:ssd": "true", "gen": ">= 4",
                   "hw:cpu_policy": "dedicated", "resources:VCPU": "2"}, hosts)
    assert got == {
        "fast": None,
        "slow": "aggregate metadata ssd=['false'] does not match extra spec "
                "aggregate_instance_extra_specs:ssd='true'",
        "bare": "extra spec aggregate_instance_extra_specs:ssd is not in the host's "
                "aggregates' metadata"}
    assert reasons({"gen": "5"}, hosts) == {
        "fast": None, "slow": "extra spec gen is not in the host's aggregates' metadata",
        "bare": "extra spec gen is not in the host's aggregates' metadata"}
    assert set(reasons({}, hosts).values()) == {None}


def test_enabled_filters_choose_the_stack() -> None:
    names = [flt.name for flt in f.filters_for(["AggregateInstanceExtraSpecsFilter"])]
    assert names == ["IgnoreHostsFilter", "RequestedDestinationFilter",
                     "AggregateInstanceExtraSpecsFilter", "ResourceFitFilter"]
    assert "AggregateInstanceExtraSpecsFilter" not in [flt.name for flt in f.DEFAULT_FILTERS]
    with pytest.raises(ValueError, match="NoSuchFilter"):
        f.filters_for(["NoSuchFilter"])


def test_prefilter_aggregates_become_member_of() -> None:
    params = candidate_query(request(), 10, member_of=[["b", "a"], ["c"]])
    assert [v for k, v in params if k == "member_of"] == ["in:a,b", "in:c"]
