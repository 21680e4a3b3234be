"""POST /allocations: several consumers in one atomic write, as move operations use it.

The migration-owns-source pattern::

    source (VCPU 4)        dest (VCPU 4)
       instance: 2   --->     (nothing yet)

    one POST:  instance -> {}          (emptied)
               migration -> source: 2  (takes over the source claim)
    then the scheduler claims dest for the instance.
"""

from __future__ import annotations

import threading

import httpx
import pytest

from tests.functional.accounting import (
    body,
    error,
    held,
    new_uuid,
    provider,
    put,
    usages,
)
from tests.functional.accounting import consumer_generation as cgen


@pytest.fixture
def hosts(placement: httpx.Client) -> tuple[str, str]:
    return (provider(placement, "source", {"VCPU": {"total": 4}}),
            provider(placement, "dest", {"VCPU": {"total": 4}}))


def test_move_source_allocation_to_migration_consumer(placement: httpx.Client,
                                                      hosts: tuple[str, str]) -> None:
    source, dest = hosts
    instance, migration = new_uuid(), new_uuid()
    assert put(placement, instance, {source: {"VCPU": 2}}).status_code == 204
    moved = placement.post("/allocations", json={
        instance: body({}, cgen(placement, instance)),
        migration: body({source: {"VCPU": 2}}, None, consumer_type="MIGRATION"),
    })
    assert moved.status_code == 204, moved.text
    assert held(placement, instance) == {}
    assert held(placement, migration) == {source: {"VCPU": 2}}
    # Source stays claimed by the migration while the instance claims dest.
    assert put(placement, instance, {dest: {"VCPU": 2}}, None).status_code == 204
    assert usages(placement, source) == {"VCPU": 2}
    assert usages(placement, dest) == {"VCPU": 2}
    # Revert: give the source back to the instance, drop dest and the migration at once.
    reverted = placement.post("/allocations", json={
        instance: body({source: {"VCPU": 2}}, cgen(placement, instance)),
        migration: body({}, cgen(placement, migration), consumer_type="MIGRATION"),
    })
    assert reverted.status_code == 204, reverted.text
    assert held(placement, instance) == {source: {"VCPU": 2}}
    assert held(placement, migration) == {}
    assert usages(placement, dest) == {"VCPU": 0}


def test_same_host_move_fits_only_because_the_old_claim_is_released(
        placement: httpx.Client, hosts: tuple[str, str]) -> None:
    source, _ = hosts
    instance, migration = new_uuid(), new_uuid()
    assert put(placement, instance, {source: {"VCPU": 3}}).status_code == 204
    # 3 (instance, moving to the migration) + 1 new for the instance = 4: fits.
    resp = placement.post("/allocations", json={
        instance: body({source: {"VCPU": 1}}, cgen(placement, instance)),
        migration: body({source: {"VCPU": 3}}, None, consumer_type="MIGRATION"),
    })
    assert resp.status_code == 204, resp.text
    assert usages(placement, source) == {"VCPU": 4}


def test_partial_failure_changes_nothing(placement: httpx.Client,
                                         hosts: tuple[str, str]) -> None:
    source, dest = hosts
    instance, migration, other = new_uuid(), new_uuid(), new_uuid()
    assert put(placement, instance, {source: {"VCPU": 2}}).status_code == 204
    instance_generation = cgen(placement, instance)
    failed = placement.post("/allocations", json={
        instance: body({}, instance_generation),
        migration: body({source: {"VCPU": 2}}, None),
        other: body({dest: {"VCPU": 5}}, None),  # more than dest has
    })
    status, _, detail = error(failed)
    assert status == 409
    assert "exceed the capacity" in detail
    assert held(placement, instance) == {source: {"VCPU": 2}}
    assert cgen(placement, instance) == instance_generation
    assert held(placement, migration) == {}
    assert held(placement, other) == {}
    # The would-be consumers were not left behind: "new consumer" writes still succeed.
    assert put(placement, migration, {dest: {"VCPU": 1}}, None).status_code == 204


def test_stale_generation_of_one_consumer_fails_the_whole_post(
        placement: httpx.Client, hosts: tuple[str, str]) -> None:
    source, dest = hosts
    instance, migration = new_uuid(), new_uuid()
    assert put(placement, instance, {source: {"VCPU": 2}}).status_code == 204
    resp = placement.post("/allocations", json={
        migration: body({dest: {"VCPU": 1}}, None),
        instance: body({}, 0),  # stale: the instance is at generation 1
    })
    status, code, detail = error(resp)
    assert (status, code) == (409, "placement.concurrent_update")
    assert "consumer generation conflict - expected 1 but got 0" in detail
    assert held(placement, instance) == {source: {"VCPU": 2}}
    assert held(placement, migration) == {}


def test_concurrent_writers_never_overcommit(placement: httpx.Client,
                                             hosts: tuple[str, str]) -> None:
    source, _ = hosts
    results: list[int] = []

    def claim() -> None:
        with httpx.Client(base_url=str(placement.base_url), headers=placement.headers,
                          timeout=60) as client:
            results.append(put(client, new_uuid(), {source: {"VCPU": 1}}).status_code)

    threads = [threading.Thread(target=claim) for _ in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert set(results) <= {204, 409}
    assert results.count(204) == usages(placement, source)["VCPU"] == 4
