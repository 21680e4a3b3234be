"""Two workers on one database: each keeps its own provider snapshot, and must never
serve a view older than the writes that completed before the request.

    worker A (writes) ──┐
                        ├── one database ── change log
    worker B (reads)  ──┘
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import pytest

from stowage import config
from tests.functional.conftest import LiveServer, start_server

QUERY = {"resources": "VCPU:2,MEMORY_MB:512"}


@pytest.fixture
def second_worker(live_placement: LiveServer,
                  placement: httpx.Client) -> Iterator[httpx.Client]:
    other = start_server(config.Settings(database=live_placement.db.url,
                                         services=("placement",)))
    try:
        with httpx.Client(base_url=other.url, headers=dict(placement.headers),
                          timeout=30) as client:
            yield client
    finally:
        other.stop()
        other.db.dispose()


def _provider(client: httpx.Client, name: str, vcpu: int) -> str:
    rp = client.post("/resource_providers", json={"name": name}).json()
    inv = {"VCPU": {"total": vcpu}, "MEMORY_MB": {"total": 4096}}
    resp = client.put(f"/resource_providers/{rp['uuid']}/inventories",
                      json={"inventories": inv, "resource_provider_generation": 0})
    assert resp.status_code == 200, resp.text
    return str(rp["uuid"])


def _candidates(client: httpx.Client) -> set[str]:
    body = client.get("/allocation_candidates", params=QUERY).json()
    return {rp for req in body["allocation_requests"] for rp in req["allocations"]}


def test_other_worker_sees_new_providers_usage_and_deletes(
        placement: httpx.Client, second_worker: httpx.Client) -> None:
    assert _candidates(second_worker) == set()
    small = _provider(placement, "small", 2)
    big = _provider(placement, "big", 8)
    assert _candidates(second_worker) == {small, big}

    consumer = str(uuid.uuid4())
    claim = {"allocations": {small: {"resources": {"VCPU": 2, "MEMORY_MB": 512}}},
             "consumer_generation": None, "project_id": str(uuid.uuid4()),
             "user_id": str(uuid.uuid4()), "consumer_type": "INSTANCE"}
    assert placement.put(f"/allocations/{consumer}", json=claim).status_code == 204
    assert _candidates(second_worker) == {big}  # small is now full

    assert placement.delete(f"/allocations/{consumer}").status_code == 204
    assert _candidates(second_worker) == {small, big}

    assert placement.delete(f"/resource_providers/{big}").status_code == 204
    assert _candidates(second_worker) == {small}


def test_other_worker_sees_trait_and_aggregate_changes(
        placement: httpx.Client, second_worker: httpx.Client) -> None:
    rp = _provider(placement, "host", 4)
    agg = str(uuid.uuid4())
    wanted = dict(QUERY, required="HW_CPU_X86_AVX2", member_of=agg)
    assert second_worker.get("/allocation_candidates", params=wanted).json()[
        "allocation_requests"] == []
    gen = placement.get(f"/resource_providers/{rp}").json()["generation"]
    placement.put(f"/resource_providers/{rp}/traits",
                  json={"traits": ["HW_CPU_X86_AVX2"], "resource_provider_generation": gen})
    old = {"openstack-api-version": "placement 1.1"}  # no generation bump before 1.19
    placement.put(f"/resource_providers/{rp}/aggregates", json=[agg], headers=old)
    found = second_worker.get("/allocation_candidates", params=wanted).json()
    assert [list(r["allocations"]) for r in found["allocation_requests"]] == [[rp]]
    listed = second_worker.get("/resource_providers", params={"member_of": agg}).json()
    assert [p["uuid"] for p in listed["resource_providers"]] == [rp]
