"""How the Nova harness empties a live Placement between Nova's tests.

`tests/nova/inside.py` runs in Nova's side venv, where upstream's fixture
would give each test a new in-memory database; against a live stowage it
deletes everything through the API instead. Nova's tests reuse uuid
sentinels from test to test, so anything left behind would break the next
test: here a nested tree with allocations, aggregates, a custom class and a
custom trait must vanish, and the standard names stay.
"""

from __future__ import annotations

import uuid

import httpx
import pytest

from tests.functional.conftest import LiveServer
from tests.nova.inside import HEADERS, PlacementEmptyingError, empty_placement


def _ok(response: httpx.Response) -> httpx.Response:
    assert response.status_code < 300, response.text
    return response


def _populate(api: httpx.Client) -> None:
    root, child = str(uuid.uuid4()), str(uuid.uuid4())
    _ok(api.post("/resource_providers", json={"name": "cn1", "uuid": root}))
    _ok(api.post("/resource_providers", json={"name": "cn1_numa0", "uuid": child,
                                               "parent_provider_uuid": root}))
    _ok(api.put("/resource_classes/CUSTOM_MAGIC"))
    _ok(api.put("/traits/CUSTOM_GOLD"))
    for rp, inventory in ((root, {"DISK_GB": {"total": 100}}),
                          (child, {"VCPU": {"total": 8}, "CUSTOM_MAGIC": {"total": 2}})):
        _ok(api.put(f"/resource_providers/{rp}/inventories",
                    json={"resource_provider_generation": 0,
                          "inventories": inventory}))
    _ok(api.put(f"/resource_providers/{child}/traits",
                json={"resource_provider_generation": 1, "traits": ["CUSTOM_GOLD"]}))
    _ok(api.put(f"/resource_providers/{root}/aggregates",
                json={"resource_provider_generation": 1, "aggregates": [str(uuid.uuid4())]}))
    consumer = str(uuid.uuid4())
    _ok(api.put(f"/allocations/{consumer}", json={
        "allocations": {root: {"resources": {"DISK_GB": 10}},
                        child: {"resources": {"VCPU": 2, "CUSTOM_MAGIC": 1}}},
        "project_id": str(uuid.uuid4()), "user_id": str(uuid.uuid4()),
        "consumer_generation": None, "consumer_type": "INSTANCE"}))


def test_everything_made_through_the_api_is_gone(placement: httpx.Client,
                                                 live_placement: LiveServer) -> None:
    _populate(placement)
    with httpx.Client(headers=HEADERS, timeout=30) as session:
        empty_placement(session, live_placement.url)
    assert placement.get("/resource_providers").json()["resource_providers"] == []
    names = {rc["name"] for rc in placement.get("/resource_classes").json()["resource_classes"]}
    assert "CUSTOM_MAGIC" not in names and {"VCPU", "DISK_GB"} <= names
    assert placement.get("/traits", params={"name": "startswith:CUSTOM_"}).json() == {
        "traits": []}
    assert "HW_CPU_X86_AVX2" in placement.get("/traits").json()["traits"]
    # Emptying what is already empty is fine: a fixture may be set up twice.
    with httpx.Client(headers=HEADERS, timeout=30) as session:
        empty_placement(session, live_placement.url)


def test_a_refused_delete_stops_the_test_instead_of_leaving_state(
        placement: httpx.Client, live_placement: LiveServer) -> None:
    _populate(placement)
    reader = {**HEADERS, "x-auth-token": "user", "x-roles": "reader"}
    with httpx.Client(headers=reader, timeout=30) as session, \
            pytest.raises(PlacementEmptyingError, match="403"):
        empty_placement(session, live_placement.url)
    assert len(placement.get("/resource_providers").json()["resource_providers"]) == 2
