"""Claims fired at once: capacity holds, generations count every claim, nobody deadlocks.

    a   VCPU 6      b   VCPU 6      (two compute nodes; every claim takes one of each)

Each request comes from its own thread and client, released together by a
barrier, against the live server. The writers lock consumers, then providers,
each in one global order, so on PostgreSQL and MySQL the requests queue on
row locks instead of deadlocking (a deadlock would surface as a 500); on
SQLite the writer lock serializes them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.functional.accounting import (
    PROJECT,
    body,
    error,
    generation,
    new_uuid,
    provider,
    put,
    usages,
)

CLIENTS = 16


@pytest.fixture
def nodes(placement: httpx.Client) -> tuple[str, str]:
    return (provider(placement, "a", {"VCPU": {"total": 6}}),
            provider(placement, "b", {"VCPU": {"total": 6}}))


def at_once(placement: httpx.Client,
            send: Callable[[httpx.Client, int], httpx.Response]) -> list[httpx.Response]:
    """`send(client, i)` for i in range(CLIENTS), each on its own client, released together."""
    barrier = threading.Barrier(CLIENTS, timeout=30)

    def one(i: int) -> httpx.Response:
        with httpx.Client(base_url=str(placement.base_url), headers=placement.headers,
                          timeout=60) as client:
            barrier.wait()
            return send(client, i)

    with ThreadPoolExecutor(CLIENTS) as pool:
        return list(pool.map(one, range(CLIENTS)))


def test_only_the_room_there_is_is_claimed(placement: httpx.Client,
                                           nodes: tuple[str, str]) -> None:
    a, b = nodes
    before = generation(placement, a), generation(placement, b)

    def claim(client: httpx.Client, i: int) -> httpx.Response:
        # Half name the providers in the other order, half claim two consumers by POST.
        pair = {a: {"VCPU": 1}, b: {"VCPU": 1}} if i % 2 else {b: {"VCPU": 1}, a: {"VCPU": 1}}
        if i % 4 < 2:
            return client.put(f"/allocations/{new_uuid()}", json=body(pair))
        first, second = sorted((new_uuid(), new_uuid()), reverse=bool(i % 3))
        return client.post("/allocations", json={first: body({a: {"VCPU": 1}}),
                                                 second: body({b: {"VCPU": 1}})})

    statuses = [r.status_code for r in at_once(placement, claim)]
    assert set(statuses) <= {204, 409}, statuses
    assert statuses.count(204) == 6
    assert usages(placement, a) == usages(placement, b) == {"VCPU": 6}
    # Every successful claim bumped each provider once: no update was lost.
    assert (generation(placement, a), generation(placement, b)) == (before[0] + 6,
                                                                    before[1] + 6)


def test_one_new_consumer_is_created_once(placement: httpx.Client,
                                          nodes: tuple[str, str]) -> None:
    a, _ = nodes
    consumer = new_uuid()

    def create(client: httpx.Client, _i: int) -> httpx.Response:
        return client.put(f"/allocations/{consumer}", json=body({a: {"VCPU": 1}}, None))

    responses = at_once(placement, create)
    assert sorted(r.status_code for r in responses) == [204] + [409] * (CLIENTS - 1)
    for resp in responses:
        if resp.status_code == 409:
            status, code, detail = error(resp)
            assert code == "placement.concurrent_update"
            assert "consumer generation conflict" in detail
    assert usages(placement, a) == {"VCPU": 1}
    shown = placement.get(f"/allocations/{consumer}").json()
    assert shown["consumer_generation"] == 1
    assert shown["allocations"][a]["resources"] == {"VCPU": 1}


def test_project_usages_by_type_read_while_a_new_type_appears(
        placement: httpx.Client, nodes: tuple[str, str]) -> None:
    """GET /usages (1.38) answers while a consumer of a type new to the project is created
    and deleted beside it: its sums and counts come from one snapshot (a resize's
    migration consumer once made it a 500, bench/scale.py)."""
    a, _ = nodes
    assert put(placement, new_uuid(), {a: {"VCPU": 1}}).status_code == 204
    stop = threading.Event()

    def churn() -> None:
        with httpx.Client(base_url=str(placement.base_url), headers=placement.headers,
                          timeout=60) as client:
            while not stop.is_set():
                consumer = new_uuid()
                put(client, consumer, {a: {"VCPU": 1}}, consumer_type="MIGRATION")
                client.delete(f"/allocations/{consumer}")

    writer = threading.Thread(target=churn)
    writer.start()
    try:
        for _ in range(150):
            resp = placement.get("/usages", params={"project_id": PROJECT})
            assert resp.status_code == 200, resp.text
            groups = resp.json()["usages"]
            assert groups["INSTANCE"] == {"VCPU": 1, "consumer_count": 1}
            if "MIGRATION" in groups:
                assert groups["MIGRATION"] == {"VCPU": 1, "consumer_count": 1}
            lumped = placement.get("/usages", params={"project_id": PROJECT,
                                                      "consumer_type": "all"})
            assert lumped.status_code == 200, lumped.text
            every = lumped.json()["usages"]["all"]
            assert every["consumer_count"] == every["VCPU"]  # one VCPU each, one snapshot
    finally:
        stop.set()
        writer.join()
