"""How many SQL statements one claim (PUT /allocations/{new consumer}) sends.

A claim is the scheduler's every decision, so its statement count is the
cost that matters on a database server (issue 31, target 3: at most six for a
new consumer, transaction control excluded). Counted on the live server's
engine, on every backend; the figures themselves come from bench/schedule.py.
"""

from __future__ import annotations

import uuid

import httpx

from tests.functional.conftest import LiveServer
from tests.functional.test_bulk_writes import counting, new_provider

PROJECT, USER = str(uuid.uuid4()), str(uuid.uuid4())


def _claim(placement: httpx.Client, consumer: str, allocations: dict[str, dict[str, int]],
           generation: int | None = None) -> httpx.Response:
    body = {"allocations": {rp: {"resources": res} for rp, res in allocations.items()},
            "project_id": PROJECT, "user_id": USER, "consumer_generation": generation,
            "consumer_type": "INSTANCE"}
    return placement.put(f"/allocations/{consumer}", json=body,
                         headers={"OpenStack-API-Version": "placement 1.39"})


# Statements a warm new-consumer claim sends, per backend (transaction control
# included where the driver sends it as SQL: SQLite's BEGIN IMMEDIATE).
EXPECTED = {"postgresql": 3, "sqlite": 6}


def test_new_consumer_claim_statements(placement: httpx.Client,
                                       live_placement: LiveServer) -> None:
    rp = new_provider(placement, f"claim-{uuid.uuid4()}", vcpus=64)
    # Warm: the project, user and type exist, as they do after a cloud's first claim.
    assert _claim(placement, str(uuid.uuid4()), {rp: {"VCPU": 1}}).status_code == 204
    with counting(live_placement.db.engine) as seen:
        assert _claim(placement, str(uuid.uuid4()), {rp: {"VCPU": 2}}).status_code == 204
    backend = live_placement.db.engine.dialect.name
    # MySQL has no RETURNING: the general writer runs there (docs/performance.md).
    assert len(seen) == EXPECTED.get(backend, 9), seen
    usage = placement.get(f"/resource_providers/{rp}/usages").json()
    assert usage["usages"] == {"VCPU": 3}
    assert usage["resource_provider_generation"] == 3  # inventory put, then two claims


def test_refused_claim_leaves_nothing(placement: httpx.Client) -> None:
    """The first provider fits, the second does not: upstream's 409, and no row is kept."""
    a = new_provider(placement, f"a-{uuid.uuid4()}", vcpus=8)
    b = new_provider(placement, f"b-{uuid.uuid4()}", vcpus=2)
    consumer = str(uuid.uuid4())
    resp = _claim(placement, consumer, {a: {"VCPU": 4}, b: {"VCPU": 3}})
    assert resp.status_code == 409, resp.text
    detail = resp.json()["errors"][0]["detail"]
    assert "The requested amount would exceed the capacity" in detail
    assert f"'VCPU' on resource provider '{b}'" in detail
    assert placement.get(f"/allocations/{consumer}").json() == {"allocations": {}}
    for rp in (a, b):
        shown = placement.get(f"/resource_providers/{rp}/usages").json()
        assert shown == {"usages": {"VCPU": 0}, "resource_provider_generation": 1}
    # The same claim within capacity then succeeds, on both providers at once.
    assert _claim(placement, consumer, {a: {"VCPU": 4}, b: {"VCPU": 2}}).status_code == 204
    held = placement.get(f"/allocations/{consumer}").json()
    assert held["consumer_generation"] == 1 and held["consumer_type"] == "INSTANCE"
    assert {rp: e["resources"] for rp, e in held["allocations"].items()} == {
        a: {"VCPU": 4}, b: {"VCPU": 2}}
    assert {rp: e["generation"] for rp, e in held["allocations"].items()} == {a: 2, b: 2}


def test_existing_consumer_with_null_generation_conflicts(placement: httpx.Client) -> None:
    rp = new_provider(placement, f"c-{uuid.uuid4()}", vcpus=8)
    consumer = str(uuid.uuid4())
    assert _claim(placement, consumer, {rp: {"VCPU": 1}}).status_code == 204
    resp = _claim(placement, consumer, {rp: {"VCPU": 2}})
    assert resp.status_code == 409
    assert resp.json()["errors"][0]["code"] == "placement.concurrent_update"
    assert placement.get(f"/resource_providers/{rp}/usages").json()["usages"] == {"VCPU": 1}


def test_new_owner_and_no_type_take_the_general_path(placement: httpx.Client) -> None:
    """A project, user or type seen for the first time is created; before 1.38, no type."""
    rp = new_provider(placement, f"d-{uuid.uuid4()}", vcpus=8)
    project, user, consumer = str(uuid.uuid4()), str(uuid.uuid4()), str(uuid.uuid4())
    body = {"allocations": {rp: {"resources": {"VCPU": 2}}}, "project_id": project,
            "user_id": user, "consumer_generation": None, "consumer_type": "MIGRATION"}
    assert placement.put(f"/allocations/{consumer}", json=body).status_code == 204
    assert placement.get(f"/usages?project_id={project}&user_id={user}").json()[
        "usages"] == {"MIGRATION": {"VCPU": 2, "consumer_count": 1}}
    old = {"OpenStack-API-Version": "placement 1.28"}
    body = {"allocations": {rp: {"resources": {"VCPU": 1}}}, "project_id": project,
            "user_id": user, "consumer_generation": None}
    untyped = str(uuid.uuid4())
    assert placement.put(f"/allocations/{untyped}", json=body, headers=old).status_code == 204
    shown = placement.get(f"/allocations/{untyped}").json()
    assert (shown["consumer_type"], shown["consumer_generation"]) == ("unknown", 1)


def test_claim_is_seen_by_the_next_candidates_answer(placement: httpx.Client) -> None:
    """The provider is logged as changed: the engine's next answer counts the usage."""
    rp = new_provider(placement, f"e-{uuid.uuid4()}", vcpus=4)
    query = "/allocation_candidates?resources=VCPU:3"
    assert len(placement.get(query).json()["allocation_requests"]) == 1
    assert _claim(placement, str(uuid.uuid4()), {rp: {"VCPU": 2}}).status_code == 204
    assert placement.get(query).json()["allocation_requests"] == []


def test_the_claiming_worker_does_not_read_its_claim_back(
        placement: httpx.Client, live_placement: LiveServer) -> None:
    """The claim's own figures update this worker's snapshot: the next GET only polls.

    MySQL's claims take the general writer, which returns no figures: there
    the next GET sums the provider's usage again, as every other worker does.
    """
    rp = new_provider(placement, f"f-{uuid.uuid4()}", vcpus=8)
    # Warm: the owners exist (a first claim creates them, by the general path).
    assert _claim(placement, str(uuid.uuid4()), {rp: {"VCPU": 1}}).status_code == 204
    query = "/allocation_candidates?resources=VCPU:1"
    assert len(placement.get(query).json()["allocation_requests"]) == 1
    assert _claim(placement, str(uuid.uuid4()), {rp: {"VCPU": 2}}).status_code == 204
    with counting(live_placement.db.engine) as seen:
        answer = placement.get(query).json()
    assert answer["provider_summaries"][rp]["resources"]["VCPU"] == {"capacity": 8, "used": 3}
    sums = [s for s in seen if "SUM(a.used)" in s]
    backend = live_placement.db.engine.dialect.name
    assert len(sums) == (1 if backend == "mysql" else 0), seen
    # A second claim, then a refused one (its log entry rolled back): still exact.
    assert _claim(placement, str(uuid.uuid4()), {rp: {"VCPU": 4}}).status_code == 204
    assert _claim(placement, str(uuid.uuid4()), {rp: {"VCPU": 2}}).status_code == 409
    answer = placement.get(query).json()
    assert answer["provider_summaries"][rp]["resources"]["VCPU"]["used"] == 7
