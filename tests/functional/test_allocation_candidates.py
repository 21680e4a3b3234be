"""GET /allocation_candidates over HTTP: a nested compute node sharing disk via an aggregate.

        cn1 (MEMORY_MB, COMPUTE_VOLUME_MULTI_ATTACH)      ss (DISK_GB, MISC_SHARES_VIA_AGGREGATE)
        /           \\                                          |
    numa0 (VCPU)  numa1 (VCPU, CUSTOM_FAST)                 aggregate AGG  (cn1 too)
"""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

AGG = str(uuid.uuid4())


def _provider(client: httpx.Client, name: str, parent: str | None = None,
              inventories: dict[str, int] | None = None, traits: list[str] | None = None,
              aggregates: list[str] | None = None) -> str:
    rp_uuid = str(uuid.uuid4())
    body: dict[str, Any] = {"name": name, "uuid": rp_uuid}
    if parent:
        body["parent_provider_uuid"] = parent
    assert client.post("/resource_providers", json=body).status_code == 200
    base = f"/resource_providers/{rp_uuid}"
    gen = 0
    if inventories:
        resp = client.put(f"{base}/inventories", json={
            "resource_provider_generation": gen,
            "inventories": {rc: {"total": n} for rc, n in inventories.items()}})
        assert resp.status_code == 200, resp.text
        gen = resp.json()["resource_provider_generation"]
    if traits:
        for trait in traits:
            if trait.startswith("CUSTOM_"):
                client.put(f"/traits/{trait}")
        resp = client.put(f"{base}/traits", json={"resource_provider_generation": gen,
                                                  "traits": traits})
        assert resp.status_code == 200, resp.text
        gen = resp.json()["resource_provider_generation"]
    if aggregates:
        resp = client.put(f"{base}/aggregates", json={"resource_provider_generation": gen,
                                                      "aggregates": aggregates})
        assert resp.status_code == 200, resp.text
    return rp_uuid


@pytest.fixture
def topology(placement: httpx.Client) -> dict[str, str]:
    cn1 = _provider(placement, "cn1", inventories={"MEMORY_MB": 4096},
                    traits=["COMPUTE_VOLUME_MULTI_ATTACH"], aggregates=[AGG])
    return {
        "cn1": cn1,
        "numa0": _provider(placement, "numa0", cn1, {"VCPU": 4}),
        "numa1": _provider(placement, "numa1", cn1, {"VCPU": 4}, ["CUSTOM_FAST"]),
        "ss": _provider(placement, "ss", None, {"DISK_GB": 100},
                        ["MISC_SHARES_VIA_AGGREGATE"], [AGG]),
    }


def test_unsuffixed_request_spreads_over_tree_and_sharing_provider(
        placement: httpx.Client, topology: dict[str, str]) -> None:
    resp = placement.get("/allocation_candidates",
                         params={"resources": "VCPU:1,MEMORY_MB:512,DISK_GB:10"})
    assert resp.status_code == 200
    assert resp.headers["cache-control"] == "no-cache"
    body = resp.json()
    assert len(body["allocation_requests"]) == 2
    for areq in body["allocation_requests"]:
        assert areq["allocations"][topology["cn1"]] == {"resources": {"MEMORY_MB": 512}}
        assert areq["allocations"][topology["ss"]] == {"resources": {"DISK_GB": 10}}
        assert set(areq["mappings"][""]) == set(areq["allocations"])
    summaries = body["provider_summaries"]
    assert set(summaries) == set(topology.values())
    assert summaries[topology["numa1"]] == {
        "resources": {"VCPU": {"capacity": 4, "used": 0}}, "traits": ["CUSTOM_FAST"],
        "parent_provider_uuid": topology["cn1"], "root_provider_uuid": topology["cn1"]}


def test_granular_group_with_trait_picks_one_numa_node(
        placement: httpx.Client, topology: dict[str, str]) -> None:
    resp = placement.get("/allocation_candidates", params={
        "resources": "MEMORY_MB:512", "resources_CPU": "VCPU:2",
        "required_CPU": "CUSTOM_FAST", "root_required": "COMPUTE_VOLUME_MULTI_ATTACH"})
    assert resp.status_code == 200
    [areq] = resp.json()["allocation_requests"]
    assert areq["mappings"] == {"": [topology["cn1"]], "_CPU": [topology["numa1"]]}


def test_old_microversion_shapes(placement: httpx.Client, topology: dict[str, str]) -> None:
    resp = placement.get("/allocation_candidates", params={"resources": "DISK_GB:10"},
                         headers={"openstack-api-version": "placement 1.10"})
    assert resp.status_code == 200
    assert resp.json()["allocation_requests"] == [
        {"allocations": [{"resource_provider": {"uuid": topology["ss"]},
                          "resources": {"DISK_GB": 10}}]}]
    assert resp.json()["provider_summaries"] == {
        topology["ss"]: {"resources": {"DISK_GB": {"capacity": 100, "used": 0}}}}


def test_unknown_names_and_bad_queries(placement: httpx.Client,
                                       topology: dict[str, str]) -> None:
    resp = placement.get("/allocation_candidates", params={"resources": "CUSTOM_NOPE:1"})
    assert resp.status_code == 400
    assert "No such resource class CUSTOM_NOPE" in resp.json()["errors"][0]["detail"]
    resp = placement.get("/allocation_candidates",
                         params={"resources": "VCPU:1", "required": "CUSTOM_NOPE"})
    assert resp.status_code == 400
    assert "No such trait(s): CUSTOM_NOPE." in resp.json()["errors"][0]["detail"]
    resp = placement.get("/allocation_candidates",
                         params=[("resources", "VCPU:1"), ("root_required", "A"),
                                 ("root_required", "B")])
    assert resp.json()["errors"][0]["code"] == "placement.query.duplicate_key"
    resp = placement.get("/allocation_candidates", params={"resources": "VCPU:1"},
                         headers={"openstack-api-version": "placement 1.9"})
    assert resp.status_code == 404


def test_resource_provider_list_filters(placement: httpx.Client,
                                        topology: dict[str, str]) -> None:
    resp = placement.get("/resource_providers",
                         params={"resources": "VCPU:3", "required": "CUSTOM_FAST"})
    assert resp.status_code == 200
    assert [rp["uuid"] for rp in resp.json()["resource_providers"]] == [topology["numa1"]]
    resp = placement.get("/resource_providers", params={"member_of": AGG})
    assert {rp["uuid"] for rp in resp.json()["resource_providers"]} == {
        topology["cn1"], topology["ss"]}
