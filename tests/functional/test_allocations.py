"""Allocations of one consumer over HTTP: capacity, unit rules, generations, formats.

Topology used by most tests::

    compute (VCPU 8, ratio 2.0 -> capacity 16; MEMORY_MB 4096 reserved 512,
             min 256, max 2048, step 256; DISK_GB 100)
"""

from __future__ import annotations

import httpx
import pytest

from tests.functional.accounting import (
    PROJECT,
    error,
    generation,
    held,
    new_uuid,
    provider,
    put,
    usages,
)
from tests.functional.accounting import consumer_generation as cgen

INVENTORY = {
    "VCPU": {"total": 8, "allocation_ratio": 2.0},
    "MEMORY_MB": {"total": 4096, "reserved": 512, "min_unit": 256, "max_unit": 2048,
                  "step_size": 256},
    "DISK_GB": {"total": 100},
}


@pytest.fixture
def compute(placement: httpx.Client) -> str:
    return provider(placement, "compute", INVENTORY)


def test_put_then_get_shows_allocations_owner_and_generations(
        placement: httpx.Client, compute: str) -> None:
    consumer = new_uuid()
    before = generation(placement, compute)
    assert put(placement, consumer, {compute: {"VCPU": 2, "DISK_GB": 10}}).status_code == 204
    got = placement.get(f"/allocations/{consumer}")
    assert got.status_code == 200
    assert got.headers["cache-control"] == "no-cache"
    assert got.json() == {
        "allocations": {compute: {"resources": {"VCPU": 2, "DISK_GB": 10},
                                  "generation": before + 1}},
        "project_id": PROJECT, "user_id": "a1b2c3d4-user",
        "consumer_generation": 1, "consumer_type": "INSTANCE",
    }
    by_rp = placement.get(f"/resource_providers/{compute}/allocations").json()
    assert by_rp == {"resource_provider_generation": before + 1, "allocations": {
        consumer: {"resources": {"VCPU": 2, "DISK_GB": 10}, "consumer_generation": 1}}}


def test_capacity_counts_ratio_and_reserved(placement: httpx.Client, compute: str) -> None:
    first, second = new_uuid(), new_uuid()
    assert put(placement, first, {compute: {"VCPU": 10}}).status_code == 204
    over = put(placement, second, {compute: {"VCPU": 7}})
    status, _, detail = error(over)
    assert status == 409
    assert "The requested amount would exceed the capacity" in detail
    assert put(placement, second, {compute: {"VCPU": 6}}).status_code == 204
    assert usages(placement, compute) == {"VCPU": 16, "MEMORY_MB": 0, "DISK_GB": 0}
    # 4096 - 512 reserved leaves 3584: 2048 + 1536 fits, one more step does not.
    assert put(placement, new_uuid(), {compute: {"MEMORY_MB": 2048}}).status_code == 204
    assert put(placement, new_uuid(), {compute: {"MEMORY_MB": 1792}}).status_code == 409
    assert put(placement, new_uuid(), {compute: {"MEMORY_MB": 1536}}).status_code == 204


@pytest.mark.parametrize("amount", [128, 2304, 300])
def test_min_max_and_step_are_enforced(placement: httpx.Client, compute: str,
                                       amount: int) -> None:
    consumer = new_uuid()
    status, _, detail = error(put(placement, consumer, {compute: {"MEMORY_MB": amount}}))
    assert status == 409
    assert "would violate inventory constraints" in detail
    assert held(placement, consumer) == {}


def test_unknown_provider_class_and_missing_inventory(placement: httpx.Client,
                                                      compute: str) -> None:
    consumer, ghost = new_uuid(), new_uuid()
    status, _, detail = error(put(placement, consumer, {ghost: {"VCPU": 1}}))
    assert status == 400
    assert f"Allocation for resource provider '{ghost}' that does not exist" in detail
    status, _, detail = error(put(placement, consumer, {compute: {"CUSTOM_NOPE": 1}}))
    assert (status, "No such resource class CUSTOM_NOPE" in detail) == (400, True)
    status, _, detail = error(put(placement, consumer, {compute: {"VGPU": 1}}))
    assert status == 409
    assert f"Inventory for 'VGPU' on resource provider '{compute}' invalid" in detail
    # None of the failures left a consumer behind: a "new consumer" write still works.
    assert put(placement, consumer, {compute: {"VCPU": 1}}, None).status_code == 204


def test_stale_consumer_generation_conflicts_and_changes_nothing(
        placement: httpx.Client, compute: str) -> None:
    consumer = new_uuid()
    assert put(placement, consumer, {compute: {"VCPU": 1}}).status_code == 204
    assert put(placement, consumer, {compute: {"VCPU": 2}}, 1).status_code == 204
    rp_generation = generation(placement, compute)
    status, code, detail = error(put(placement, consumer, {compute: {"VCPU": 4}}, 1))
    assert (status, code) == (409, "placement.concurrent_update")
    assert "consumer generation conflict - expected 2 but got 1" in detail
    expect_new = put(placement, consumer, {compute: {"VCPU": 4}}, None)
    assert "expected 2 but got None" in error(expect_new)[2]
    assert held(placement, consumer) == {compute: {"VCPU": 2}}
    assert cgen(placement, consumer) == 2
    assert generation(placement, compute) == rp_generation


def test_generation_for_a_consumer_that_does_not_exist(placement: httpx.Client,
                                                       compute: str) -> None:
    status, code, detail = error(put(placement, new_uuid(), {compute: {"VCPU": 1}}, 5))
    assert (status, code) == (409, "placement.concurrent_update")
    assert "expected null but got 5" in detail


def test_emptying_allocations_forgets_the_consumer(placement: httpx.Client,
                                                   compute: str) -> None:
    consumer = new_uuid()
    assert put(placement, consumer, {compute: {"VCPU": 1}}).status_code == 204
    assert put(placement, consumer, {}, 1).status_code == 204
    assert placement.get(f"/allocations/{consumer}").json() == {"allocations": {}}
    assert usages(placement, compute)["VCPU"] == 0
    # The consumer is gone, so the next writer expects a new one again.
    assert put(placement, consumer, {compute: {"VCPU": 1}}, None).status_code == 204


def test_delete_allocations(placement: httpx.Client, compute: str) -> None:
    consumer = new_uuid()
    assert put(placement, consumer, {compute: {"VCPU": 3}}).status_code == 204
    assert placement.delete(f"/allocations/{consumer}").status_code == 204
    assert usages(placement, compute)["VCPU"] == 0
    missing = placement.delete(f"/allocations/{consumer}")
    assert missing.status_code == 404
    assert f"No allocations for consumer '{consumer}'" in error(missing)[2]


def test_list_body_before_1_12_and_incomplete_consumer(placement: httpx.Client,
                                                        compute: str) -> None:
    consumer = new_uuid()
    old = {"openstack-api-version": "placement 1.7"}
    resp = placement.put(f"/allocations/{consumer}", headers=old, json={"allocations": [
        {"resource_provider": {"uuid": compute}, "resources": {"DISK_GB": 5}}]})
    assert resp.status_code == 204
    got = placement.get(f"/allocations/{consumer}",
                        headers={"openstack-api-version": "placement 1.12"}).json()
    assert got["project_id"] == got["user_id"] == "00000000-0000-0000-0000-000000000000"
    assert "consumer_generation" not in got
    at_1_8 = {"openstack-api-version": "placement 1.8"}
    no_owner = placement.put(f"/allocations/{consumer}", headers=at_1_8, json={"allocations": [
        {"resource_provider": {"uuid": compute}, "resources": {"DISK_GB": 5}}]})
    assert no_owner.status_code == 400
    assert "'project_id' is a required property" in error(no_owner)[2]


def test_malformed_consumer_uuid(placement: httpx.Client, compute: str) -> None:
    resp = put(placement, "not-a-uuid", {compute: {"VCPU": 1}})
    assert resp.status_code == 400
    assert "Malformed consumer_uuid: not-a-uuid" in error(resp)[2]
