"""The claim loop on in-memory host states, against a Placement double.

    hosts a, b, c (16 VCPU, 32 GiB, 1000 GB each unless said otherwise)
    FakePlacement: consumer generations; `lose_on` makes a provider answer 409 once
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from stowage.compute.scheduler import NoValidHost
from stowage.compute.scheduler.manager import (
    MoveConflict,
    Rejection,
    Scheduler,
    merge_move_allocations,
)
from stowage.compute.scheduler.request import GroupState, MoveSource
from stowage.config import ComputeSettings
from tests.unit.scheduler_builders import INSTANCE, FakePlacement, Host, host_states, request

AMOUNTS = {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20}
I2 = "22222222-2222-2222-2222-222222222222"
I3 = "33333333-3333-3333-3333-333333333333"


def scheduler(fake: FakePlacement, **settings: Any) -> Scheduler:
    return Scheduler(ComputeSettings(**settings), db=None, placement=fake)  # type: ignore[arg-type]


def hosts_of(selections: list[dict[str, Any]]) -> list[str]:
    return [s["host"] for s in selections]


def test_first_choice_is_claimed_and_alternates_are_not() -> None:
    fake = FakePlacement()
    hosts = [Host("a", used={"MEMORY_MB": 8000}), Host("b"), Host("c"), Host("d")]
    req = request()
    [selections] = scheduler(fake, max_attempts=3).place(req, host_states(hosts, req))
    assert hosts_of(selections) == ["b", "c", "d"]
    first = selections[0]
    assert first["node"] == "b" and first["compute_node_uuid"] == Host("b").uuid
    assert first["allocation_request"] == {
        "allocations": {Host("b").uuid: {"resources": AMOUNTS}},
        "mappings": {"": [Host("b").uuid]}}
    assert first["allocation_request_version"] == "1.39"
    held = fake.held[INSTANCE]
    assert held.allocations == {Host("b").uuid: AMOUNTS}
    assert (held.project_id, held.user_id, held.consumer_type) == ("p1", "u1", "INSTANCE")
    assert list(fake.held) == [INSTANCE]
    # A new consumer's claim: no read of its generation first.
    assert fake.calls == [("PUT", INSTANCE)]


def test_a_lost_claim_falls_back_to_the_next_host() -> None:
    fake = FakePlacement()
    fake.lose_on = {Host("a").uuid}
    req = request()
    sched = scheduler(fake)
    [selections] = sched.place(req, host_states([Host("a"), Host("b"), Host("c")], req))
    assert hosts_of(selections) == ["b", "c"]
    assert fake.held[INSTANCE].allocations == {Host("b").uuid: AMOUNTS}
    assert sched.rejections(INSTANCE) == [
        Rejection("a", "Claim", "resource provider generation conflict")]


def test_multi_instance_requests_account_each_claim() -> None:
    fake = FakePlacement()
    req = request([INSTANCE, I2, I3])
    hosts = [Host("a", vcpus=4), Host("b", vcpus=1)]
    with pytest.raises(NoValidHost, match=r"^No valid host was found\. There are not enough "
                                          r"hosts available\.$"):
        scheduler(fake).place(req, host_states(hosts, req))
    # Two fit (a holds two), the third does not: the first two claims are given back.
    assert fake.held == {}
    assert ("DELETE", INSTANCE) in fake.calls and ("DELETE", I2) in fake.calls


def test_spread_over_a_multi_instance_request() -> None:
    fake = FakePlacement()
    req = request([INSTANCE, I2])
    result = scheduler(fake).place(req, host_states([Host("a"), Host("b")], req))
    assert [s[0]["host"] for s in result] == ["a", "b"]
    assert [hosts_of(s) for s in result] == [["a", "b"], ["b", "a"]]


def test_pack_fills_one_host_first() -> None:
    fake = FakePlacement()
    req = request([INSTANCE, I2])
    result = scheduler(fake, weigher="pack").place(req, host_states([Host("a"), Host("b")],
                                                                     req))
    assert [s[0]["host"] for s in result] == ["a", "a"]


def test_anti_affinity_within_the_request() -> None:
    fake = FakePlacement()
    req = request([INSTANCE, I2, I3], instance_group="g")
    req.group = GroupState("g", "anti-affinity", 1, Counter())
    states = host_states([Host("a"), Host("b")], req)
    with pytest.raises(NoValidHost):
        scheduler(fake, weigher="pack").place(req, states)
    assert fake.held == {}


def test_affinity_within_the_request_packs_even_when_spreading() -> None:
    fake = FakePlacement()
    req = request([INSTANCE, I2], instance_group="g")
    req.group = GroupState("g", "affinity", 1, Counter())
    result = scheduler(fake).place(req, host_states([Host("a"), Host("b")], req))
    assert [s[0]["host"] for s in result] == ["a", "a"]


def test_max_attempts_bounds_the_alternates() -> None:
    fake = FakePlacement()
    req = request()
    hosts = [Host(n) for n in "abcdef"]
    [selections] = scheduler(fake, max_attempts=1).place(req, host_states(hosts, req))
    assert hosts_of(selections) == ["a"]


def test_evacuation_keeps_the_source_allocation() -> None:
    fake = FakePlacement()
    fake.claim(INSTANCE, {"source-rp": AMOUNTS}, "p1", "u1", None)
    req = request()
    scheduler(fake).place(req, host_states([Host("a")], req))
    assert fake.held[INSTANCE].allocations == {"source-rp": AMOUNTS, Host("a").uuid: AMOUNTS}
    # The claim as a new consumer's was refused, so the generation was read.
    assert fake.calls[-3:] == [("PUT", INSTANCE), ("GET", INSTANCE), ("PUT", INSTANCE)]


MIGRATION = "44444444-4444-4444-4444-444444444444"


def moving_request(fake: FakePlacement) -> Any:
    """The instance holds AMOUNTS on "source-rp"; its migration is to take them over."""
    fake.claim(INSTANCE, {"source-rp": AMOUNTS}, "p1", "u1", None)
    req = request()
    req.move_source = MoveSource(MIGRATION, {"source-rp": dict(AMOUNTS)},
                                 fake.held[INSTANCE].generation)
    return req


def test_a_move_hands_its_source_over_in_the_claim_write() -> None:
    fake = FakePlacement()
    req = moving_request(fake)
    [selections] = scheduler(fake).place(req, host_states([Host("a"), Host("b")], req))
    assert hosts_of(selections) == ["a", "b"]
    assert fake.held[MIGRATION].allocations == {"source-rp": AMOUNTS}
    assert fake.held[MIGRATION].consumer_type == "MIGRATION"
    assert fake.held[INSTANCE].allocations == {Host("a").uuid: AMOUNTS}
    assert fake.calls[-1] == ("POST", f"{MIGRATION},{INSTANCE}")


def test_a_move_losing_a_host_tries_the_next_and_keeps_the_source_whole() -> None:
    fake = FakePlacement()
    req = moving_request(fake)
    fake.lose_on = {Host("a").uuid}
    [selections] = scheduler(fake).place(req, host_states([Host("a"), Host("b")], req))
    assert hosts_of(selections) == ["b"]
    assert fake.held[MIGRATION].allocations == {"source-rp": AMOUNTS}
    assert fake.held[INSTANCE].allocations == {Host("b").uuid: AMOUNTS}


def test_a_move_whose_instance_changed_meanwhile_stops() -> None:
    fake = FakePlacement()
    req = moving_request(fake)
    fake.claim(INSTANCE, {"source-rp": AMOUNTS}, "p1", "u1", 0)  # someone wrote it again
    with pytest.raises(MoveConflict):
        scheduler(fake).place(req, host_states([Host("a"), Host("b")], req))
    assert fake.held[INSTANCE].allocations == {"source-rp": AMOUNTS}
    assert MIGRATION not in fake.held


def test_merge_move_allocations() -> None:
    shared = {"DISK_GB": 20}
    source = {"src": {"VCPU": 2}, "nfs": shared}
    assert merge_move_allocations(source, {"dst": {"VCPU": 2}, "nfs": shared}) == {
        "src": {"VCPU": 2}, "dst": {"VCPU": 2}, "nfs": shared}
    # Same host: nothing new, so the amounts add up.
    assert merge_move_allocations({"h": {"VCPU": 2}}, {"h": {"VCPU": 4}}) == {"h": {"VCPU": 6}}


def test_no_candidates_is_no_valid_host_with_nothing_claimed() -> None:
    fake = FakePlacement()
    with pytest.raises(NoValidHost):
        scheduler(fake).place(request(), [])
    assert fake.calls == []
