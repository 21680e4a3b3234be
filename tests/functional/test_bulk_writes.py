"""The two bulk Placement writes: correct at thousands of items, with a statement count that
grows with the number of chunks, not with the number of items.

    PUT /resource_providers/{u}/aggregates   20,000 aggregate uuids, then half replaced
    POST /allocations                        5,000 consumers on one provider, then half freed

Speed itself is shown by bench/bulk.py; here only correctness and the count of
SQL statements the server sends (counted on the live server's engine).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from sqlalchemy import event

from stowage.placement import bulk
from tests.functional.conftest import LiveServer


def new_provider(placement: httpx.Client, name: str, vcpus: int = 0) -> str:
    rp = str(uuid.uuid4())
    assert placement.post("/resource_providers", json={"name": name, "uuid": rp}).status_code \
        == 200
    if vcpus:
        resp = placement.put(f"/resource_providers/{rp}/inventories", json={
            "resource_provider_generation": 0, "inventories": {"VCPU": {"total": vcpus}}})
        assert resp.status_code == 200, resp.text
    return rp


@contextmanager
def counting(engine: sa.Engine) -> Iterator[list[str]]:
    """Every statement the engine sends while inside (an executemany counts once)."""
    seen: list[str] = []

    def note(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        seen.append(statement)

    event.listen(engine, "before_cursor_execute", note)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", note)


def set_aggregates(placement: httpx.Client, rp: str, uuids: list[str],
                   generation: int) -> httpx.Response:
    resp = placement.put(f"/resource_providers/{rp}/aggregates",
                         json={"aggregates": uuids, "resource_provider_generation": generation})
    assert resp.status_code == 200, resp.text
    return resp


def test_twenty_thousand_aggregates(placement: httpx.Client) -> None:
    rp, other = new_provider(placement, "big"), new_provider(placement, "other")
    uuids = [str(uuid.uuid4()) for _ in range(20_000)]
    resp = set_aggregates(placement, rp, uuids, 0)
    assert resp.json() == {"aggregates": uuids, "resource_provider_generation": 1}
    shown = placement.get(f"/resource_providers/{rp}/aggregates").json()
    assert shown == {"aggregates": uuids, "resource_provider_generation": 1}
    # Half kept, half new; a second provider shares some of the old ones.
    set_aggregates(placement, other, uuids[5_000:15_000], 0)
    replaced = uuids[:10_000] + [str(uuid.uuid4()) for _ in range(10_000)]
    set_aggregates(placement, rp, replaced, 1)
    shown = placement.get(f"/resource_providers/{rp}/aggregates").json()
    assert set(shown["aggregates"]) == set(replaced) and len(shown["aggregates"]) == 20_000
    assert shown["resource_provider_generation"] == 2
    assert set(placement.get(f"/resource_providers/{other}/aggregates").json()["aggregates"]) \
        == set(uuids[5_000:15_000])
    member = placement.get(f"/resource_providers?member_of={uuids[12_000]}").json()
    assert [p["uuid"] for p in member["resource_providers"]] == [other]


def test_aggregate_statements_do_not_grow_with_the_list(placement: httpx.Client,
                                                        live_placement: LiveServer) -> None:
    counts = []
    for size in (1_000, 5_000):
        rp = new_provider(placement, f"rp-{size}")
        first = [str(uuid.uuid4()) for _ in range(size)]
        set_aggregates(placement, rp, first, 0)
        with counting(live_placement.db.engine) as seen:
            set_aggregates(placement, rp, first[: size // 2] +
                           [str(uuid.uuid4()) for _ in range(size // 2)], 1)
        counts.append(len(seen))
    # 5x the items: a handful more statements per 500-item chunk, not several per item.
    assert counts[1] - counts[0] <= 8 * (5_000 - 1_000) // 500, counts


def post_allocations(placement: httpx.Client, body: dict[str, Any]) -> None:
    resp = placement.post("/allocations", json=body)
    assert resp.status_code == 204, resp.text


def consumers_body(rp: str, uuids: list[str], generation: int | None,
                   vcpus: int = 1) -> dict[str, Any]:
    project, user = "project-a", "user-a"
    return {c: {"allocations": {rp: {"resources": {"VCPU": vcpus}}} if vcpus else {},
                "project_id": project, "user_id": user, "consumer_generation": generation,
                "consumer_type": "INSTANCE"} for c in uuids}


def test_five_thousand_consumers(placement: httpx.Client) -> None:
    rp = new_provider(placement, "host", vcpus=10_000)
    consumers = [str(uuid.uuid4()) for _ in range(5_000)]
    post_allocations(placement, consumers_body(rp, consumers, None))
    usage = placement.get(f"/resource_providers/{rp}/usages").json()
    assert usage["usages"] == {"VCPU": 5_000}
    held = placement.get(f"/resource_providers/{rp}/allocations").json()["allocations"]
    assert set(held) == set(consumers)
    assert {a["consumer_generation"] for a in held.values()} == {1}
    one = placement.get(f"/allocations/{consumers[4_321]}").json()
    assert one["allocations"][rp]["resources"] == {"VCPU": 1}
    assert (one["consumer_generation"], one["project_id"], one["consumer_type"]) \
        == (1, "project-a", "INSTANCE")
    # Free half, double the other half, in one request; stale generations change nothing.
    stale = consumers_body(rp, consumers[:2], 0)
    assert placement.post("/allocations", json=stale).status_code == 409
    body = {**consumers_body(rp, consumers[:2_500], 1, vcpus=0),
            **consumers_body(rp, consumers[2_500:], 1, vcpus=2)}
    post_allocations(placement, body)
    assert placement.get(f"/resource_providers/{rp}/usages").json()["usages"] == {"VCPU": 5_000}
    assert placement.get(f"/allocations/{consumers[0]}").json()["allocations"] == {}
    assert placement.get(f"/allocations/{consumers[-1]}").json()["consumer_generation"] == 2
    usages = placement.get("/usages?project_id=project-a").json()["usages"]
    assert usages == {"INSTANCE": {"VCPU": 5_000, "consumer_count": 2_500}}


def test_over_capacity_changes_nothing(placement: httpx.Client) -> None:
    rp = new_provider(placement, "small", vcpus=1_000)
    resp = placement.post("/allocations",
                          json=consumers_body(rp, [str(uuid.uuid4()) for _ in range(1_001)],
                                              None))
    assert resp.status_code == 409, resp.text
    assert placement.get(f"/resource_providers/{rp}/usages").json()["usages"] == {"VCPU": 0}
    assert placement.get(f"/resource_providers/{rp}/allocations").json()["allocations"] == {}


def test_allocation_statements_do_not_grow_with_consumers(placement: httpx.Client,
                                                          live_placement: LiveServer) -> None:
    counts = []
    for size in (200, 1_000):
        rp = new_provider(placement, f"rp-{size}", vcpus=size)
        with counting(live_placement.db.engine) as seen:
            post_allocations(placement, consumers_body(rp, [str(uuid.uuid4())
                                                            for _ in range(size)], None))
        counts.append(len(seen))
    # 5x the consumers, all within one or two chunks: nearly the same statements.
    assert counts[1] - counts[0] <= 20, counts


def test_every_list_in_tiny_chunks(placement: httpx.Client,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of 2 (the server runs in this process): many providers, consumers, traits
    and aggregates per write still give exactly the result of one big statement."""
    monkeypatch.setattr(bulk, "CHUNK", 2)
    rps = [new_provider(placement, f"p{i}", vcpus=4) for i in range(7)]
    consumers = [str(uuid.uuid4()) for _ in range(5)]
    body = {c: {"allocations": {rp: {"resources": {"VCPU": 1}} for rp in rps},
                "project_id": "p", "user_id": "u", "consumer_generation": None,
                "consumer_type": "INSTANCE"} for c in consumers}
    assert placement.post("/allocations", json=body).status_code == 409  # 5 > 4 VCPU each
    del body[consumers[-1]]
    post_allocations(placement, body)
    for rp in rps:
        shown = placement.get(f"/resource_providers/{rp}/allocations").json()
        assert set(shown["allocations"]) == set(consumers[:4])
        assert shown["resource_provider_generation"] == 2
    freed = {c: {**body[c], "allocations": {}, "consumer_generation": 1} for c in consumers[:3]}
    post_allocations(placement, freed)
    assert placement.get(f"/resource_providers/{rps[0]}/usages").json()["usages"] == {"VCPU": 1}
    traits = sorted(placement.get("/traits").json()["traits"])[:9]
    resp = placement.put(f"/resource_providers/{rps[0]}/traits",
                         json={"traits": traits, "resource_provider_generation": 3})
    assert resp.status_code == 200 and sorted(resp.json()["traits"]) == traits
    aggs = [str(uuid.uuid4()) for _ in range(9)]
    set_aggregates(placement, rps[0], aggs, 4)
    set_aggregates(placement, rps[0], aggs[4:] + [str(uuid.uuid4())], 5)
    shown = placement.get(f"/resource_providers/{rps[0]}/aggregates").json()["aggregates"]
    assert shown[:5] == aggs[4:] and len(shown) == 6
    listed = placement.get("/resource_providers?resources=VCPU:3").json()["resource_providers"]
    assert [p["uuid"] for p in listed] == rps  # one VCPU used on each: 3 left, creation order
