"""Each filter on in-memory host states: who passes, and the reason given for who does not."""

from __future__ import annotations

from collections import Counter

import pytest

from stowage.compute.scheduler import filters as f
from stowage.compute.scheduler.request import GroupState, SchedulingRequest
from tests.unit.scheduler_builders import FLAVOR, Host, by_name, host_states, request


def reasons(flt: f.Filter, hosts: list[Host], req: SchedulingRequest) -> dict[str, str | None]:
    return {s.host: flt.reject(s, req) for s in host_states(hosts, req)}


def test_compute_filter_needs_an_up_enabled_service() -> None:
    hosts = [Host("ok"), Host("down", up=False), Host("forced", up=False, forced_down=True),
             Host("off", disabled=True)]
    assert reasons(f.ComputeFilter(), hosts, request()) == {
        "ok": None, "down": "compute service is down",
        "forced": "compute service is forced down",
        "off": "compute service is disabled (maintenance)"}


def test_availability_zone_filter() -> None:
    hosts = [Host("a", az="az1"), Host("b", az="az2")]
    assert reasons(f.AvailabilityZoneFilter(), hosts, request(availability_zone="az1")) == {
        "a": None, "b": "host is in availability zone 'az2', not 'az1'"}
    assert set(reasons(f.AvailabilityZoneFilter(), hosts, request()).values()) == {None}


def test_ignore_hosts_filter() -> None:
    got = reasons(f.IgnoreHostsFilter(), [Host("a"), Host("b")], request(ignore_hosts=["a"]))
    assert got == {"a": "host is in ignore_hosts", "b": None}


def test_requested_destination_filter() -> None:
    req = request(requested_destination={"host": "b", "node": None})
    assert reasons(f.RequestedDestinationFilter(), [Host("a"), Host("b")], req) == {
        "a": "host is not the requested destination b", "b": None}
    req = request(requested_destination={"host": "b", "node": "other"})
    assert reasons(f.RequestedDestinationFilter(), [Host("b")], req) == {
        "b": "node b is not the requested node other"}


def grouped(policy: str, per_host: dict[str, int], max_per_host: int = 1) -> SchedulingRequest:
    req = request(instance_group="g1")
    req.group = GroupState("g1", policy, max_per_host, Counter(per_host))
    return req


def test_anti_affinity_filter_counts_members_per_host() -> None:
    hosts = [Host("a"), Host("b"), Host("c")]
    got = reasons(f.ServerGroupAntiAffinityFilter(), hosts,
                  grouped("anti-affinity", {"a": 1, "b": 2}, max_per_host=2))
    assert got == {"a": None, "c": None,
                   "b": "2 member(s) of server group g1 already on this host "
                        "(max_server_per_host 2)"}
    # Other policies are not this filter's business.
    assert set(reasons(f.ServerGroupAntiAffinityFilter(), hosts,
                       grouped("affinity", {"a": 5})).values()) == {None}


def test_affinity_filter_sticks_to_the_group_hosts() -> None:
    hosts = [Host("a"), Host("b")]
    assert reasons(f.ServerGroupAffinityFilter(), hosts, grouped("affinity", {"b": 1})) == {
        "a": "server group g1 members are on b", "b": None}
    # A group with no placed member yet accepts any host.
    assert set(reasons(f.ServerGroupAffinityFilter(), hosts,
                       grouped("affinity", {})).values()) == {None}


def test_pci_filter_needs_free_devices_per_alias() -> None:
    flavor = {**FLAVOR, "extra_specs": {"pci_passthrough:alias": "gpu:2"}}
    hosts = [Host("none"), Host("one", pci={"gpu": 1}), Host("two", pci={"gpu": 2})]
    assert reasons(f.PciPassthroughFilter(), hosts, request(flavor=flavor)) == {
        "none": "2 PCI device(s) of alias 'gpu' requested, 0 free",
        "one": "2 PCI device(s) of alias 'gpu' requested, 1 free", "two": None}


def test_resource_fit_filter_sees_earlier_claims_of_the_request() -> None:
    req = request()
    states = host_states([Host("a", vcpus=3)], req)
    assert f.ResourceFitFilter().reject(states[0], req) is None
    states[0].consume(states[0].allocation_requests[0], {})
    reason = f.ResourceFitFilter().reject(states[0], req)
    assert reason is not None and reason.startswith("VCPU on provider ")
    assert reason.endswith(": 2 requested, 1 free")


def test_run_filters_records_one_rejection_per_host() -> None:
    req = request(availability_zone="az1", ignore_hosts=["c"])
    states = host_states([Host("a", az="az1"), Host("b", az="az2", up=False),
                          Host("c", az="az1")], req)
    rejections: list[f.Rejection] = []
    passed = f.run_filters(states, req, rejections)
    assert [s.host for s in passed] == ["a"]
    assert rejections == [f.Rejection("b", "ComputeFilter", "compute service is down"),
                          f.Rejection("c", "IgnoreHostsFilter", "host is in ignore_hosts")]
    assert str(rejections[1]) == "c: IgnoreHostsFilter: host is in ignore_hosts"


@pytest.mark.parametrize("name", ["a", "b"])
def test_host_free_amounts_come_from_the_summaries(name: str) -> None:
    req = request()
    states = host_states([Host("a", used={"MEMORY_MB": 1000}), Host("b")], req)
    state = by_name(states, name)
    assert state.free("MEMORY_MB") == 32768 - (1000 if name == "a" else 0)
    assert state.free("PCPU") == 0
