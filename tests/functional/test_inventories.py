"""Inventories over HTTP: replace, per-class CRUD, validation, generations, in-use protection."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest


@pytest.fixture
def rp_url(placement: httpx.Client) -> str:
    resp = placement.post("/resource_providers", json={"name": "cn1"})
    assert resp.status_code == 200
    return f"/resource_providers/{resp.json()['uuid']}"


def put_all(placement: httpx.Client, url: str, generation: int,
            inventories: dict[str, dict[str, object]], **headers: str) -> httpx.Response:
    return placement.put(f"{url}/inventories", headers=headers,
                         json={"resource_provider_generation": generation,
                               "inventories": inventories})


def allocate(placement: httpx.Client, rp_url: str, resources: dict[str, int]) -> str:
    consumer = str(uuid.uuid4())
    resp = placement.put(f"/allocations/{consumer}", json={
        "allocations": {rp_url.rsplit("/", 1)[1]: {"resources": resources}},
        "project_id": "p", "user_id": "u", "consumer_generation": None,
        "consumer_type": "INSTANCE"})
    assert resp.status_code == 204, resp.text
    return consumer


def test_replace_fills_defaults_and_bumps_generation(placement: httpx.Client,
                                                     rp_url: str) -> None:
    resp = put_all(placement, rp_url, 0, {"VCPU": {"total": 8, "allocation_ratio": 16.0},
                                          "DISK_GB": {"total": 100, "reserved": 10}})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["resource_provider_generation"] == 1
    assert body["inventories"]["DISK_GB"] == {
        "total": 100, "reserved": 10, "min_unit": 1, "max_unit": 2147483647,
        "step_size": 1, "allocation_ratio": 1.0}
    assert placement.get(f"{rp_url}/inventories").json() == body
    one = placement.get(f"{rp_url}/inventories/VCPU").json()
    assert one["allocation_ratio"] == 16.0 and one["resource_provider_generation"] == 1
    assert placement.get(rp_url).json()["generation"] == 1


def test_per_class_create_update_delete(placement: httpx.Client, rp_url: str) -> None:
    created = placement.post(f"{rp_url}/inventories",
                             json={"resource_class": "DISK_GB", "total": 100})
    assert created.status_code == 201
    assert created.headers["location"].endswith(f"{rp_url}/inventories/DISK_GB")
    assert created.json()["resource_provider_generation"] == 1
    again = placement.post(f"{rp_url}/inventories",
                           json={"resource_class": "DISK_GB", "total": 100})
    assert again.status_code == 409 and "Update conflict" in again.text
    updated = placement.put(f"{rp_url}/inventories/DISK_GB",
                            json={"resource_provider_generation": 1, "total": 200})
    assert updated.status_code == 200 and updated.json()["total"] == 200
    missing = placement.put(f"{rp_url}/inventories/VCPU",
                            json={"resource_provider_generation": 2, "total": 2})
    assert missing.status_code == 400 and "No inventory record with resource class" in missing.text
    assert placement.delete(f"{rp_url}/inventories/DISK_GB").status_code == 204
    gone = placement.delete(f"{rp_url}/inventories/DISK_GB")
    assert gone.status_code == 404 and "No inventory of class DISK_GB found for delete" in gone.text
    assert placement.get(f"{rp_url}/inventories").json() == {
        "resource_provider_generation": 3, "inventories": {}}


@pytest.mark.parametrize("inventory, text", [
    ({"total": 0}, "less than the minimum of 1"),
    ({"total": 2147483648}, "Failed validating 'maximum'"),
    ({"total": 10, "allocation_ratio": 3.5e39}, "Failed validating 'maximum'"),
    ({"total": 10, "step_size": 0}, "less than the minimum of 1"),
    ({"total": 10, "reserved": 11}, "greater than or equal to total"),
    ({"total": 10, "reserved": 10}, "greater than or equal to total"),
    ({"total": 10, "colour": "red"}, "JSON does not validate"),
])
def test_bad_inventory_changes_nothing(placement: httpx.Client, rp_url: str,
                                       inventory: dict[str, object], text: str) -> None:
    put_all(placement, rp_url, 0, {"VCPU": {"total": 4}})
    before = placement.get(f"{rp_url}/inventories").json()
    resp = put_all(placement, rp_url, 1, {"DISK_GB": inventory}, **{
        "openstack-api-version": "placement 1.25"})
    assert resp.status_code == 400
    assert text in resp.text
    assert placement.get(f"{rp_url}/inventories").json() == before


def test_reserved_may_equal_total_from_1_26(placement: httpx.Client, rp_url: str) -> None:
    resp = put_all(placement, rp_url, 0, {"DISK_GB": {"total": 10, "reserved": 10}})
    assert resp.status_code == 200
    over = put_all(placement, rp_url, 1, {"DISK_GB": {"total": 10, "reserved": 11}})
    assert over.status_code == 400 and "greater than total" in over.text


def test_unknown_class_is_rejected(placement: httpx.Client, rp_url: str) -> None:
    resp = put_all(placement, rp_url, 0, {"CUSTOM_NOPE": {"total": 1}})
    assert resp.status_code == 400 and "Unknown resource class in inventory" in resp.text
    posted = placement.post(f"{rp_url}/inventories",
                            json={"resource_class": "CUSTOM_NOPE", "total": 1})
    assert posted.status_code == 400 and "No such resource class CUSTOM_NOPE" in posted.text
    assert placement.get(rp_url).json()["generation"] == 0


def test_stale_generation_is_refused(placement: httpx.Client, rp_url: str) -> None:
    assert put_all(placement, rp_url, 0, {"VCPU": {"total": 4}}).status_code == 200
    stale = put_all(placement, rp_url, 0, {"VCPU": {"total": 99}})
    assert stale.status_code == 409
    assert stale.json()["errors"][0]["code"] == "placement.concurrent_update"
    assert placement.get(f"{rp_url}/inventories/VCPU").json()["total"] == 4


def test_concurrent_writers_with_the_same_generation(placement: httpx.Client,
                                                     rp_url: str) -> None:
    """Eight writers read generation 0; exactly one may win."""
    def write(total: int) -> int:
        with httpx.Client(base_url=str(placement.base_url), headers=placement.headers) as c:
            return put_all(c, rp_url, 0, {"VCPU": {"total": total}}).status_code

    with ThreadPoolExecutor(8) as pool:
        statuses = sorted(pool.map(write, range(1, 9)))
    assert statuses == [200] + [409] * 7
    assert placement.get(rp_url).json()["generation"] == 1


def test_classes_in_use_cannot_be_removed(placement: httpx.Client, rp_url: str) -> None:
    put_all(placement, rp_url, 0, {"VCPU": {"total": 4}, "DISK_GB": {"total": 10}})
    allocate(placement, rp_url, {"VCPU": 2, "DISK_GB": 5})
    generation = placement.get(rp_url).json()["generation"]
    resp = put_all(placement, rp_url, generation, {"VCPU": {"total": 4}})
    assert resp.status_code == 409
    assert resp.json()["errors"][0]["code"] == "placement.inventory.inuse"
    assert "Inventory for 'DISK_GB' on resource provider" in resp.text
    all_gone = placement.delete(f"{rp_url}/inventories")
    assert all_gone.status_code == 409
    assert f"Inventory for 'VCPU, DISK_GB' on resource provider '{rp_url[20:]}' in use" \
        in all_gone.text
    assert placement.delete(f"{rp_url}/inventories/VCPU").status_code == 409
    # Shrinking below usage is allowed, as upstream: the provider is just over capacity.
    shrunk = put_all(placement, rp_url, generation, {"VCPU": {"total": 1},
                                                     "DISK_GB": {"total": 1}})
    assert shrunk.status_code == 200


def test_delete_all_needs_1_5(placement: httpx.Client, rp_url: str) -> None:
    put_all(placement, rp_url, 0, {"VCPU": {"total": 4}})
    old = placement.delete(f"{rp_url}/inventories",
                           headers={"openstack-api-version": "placement 1.4"})
    assert old.status_code == 405
    assert placement.delete(f"{rp_url}/inventories").status_code == 204
    assert placement.get(f"{rp_url}/inventories").json() == {
        "resource_provider_generation": 2, "inventories": {}}
