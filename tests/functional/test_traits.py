"""Traits over HTTP: custom trait lifecycle, list filters, provider traits with generations."""

from __future__ import annotations

import httpx
import pytest


@pytest.fixture
def rp_url(placement: httpx.Client) -> str:
    resp = placement.post("/resource_providers", json={"name": "cn1"})
    assert resp.status_code == 200
    return f"/resource_providers/{resp.json()['uuid']}"


def names(placement: httpx.Client, query: str = "") -> list[str]:
    resp = placement.get(f"/traits{query}")
    assert resp.status_code == 200, resp.text
    result: list[str] = resp.json()["traits"]
    return result


def test_custom_trait_lifecycle(placement: httpx.Client) -> None:
    created = placement.put("/traits/CUSTOM_GOLD")
    assert created.status_code == 201
    assert created.headers["location"].endswith("/traits/CUSTOM_GOLD")
    assert placement.put("/traits/CUSTOM_GOLD").status_code == 204
    shown = placement.get("/traits/CUSTOM_GOLD")
    assert shown.status_code == 204 and shown.headers["cache-control"] == "no-cache"
    assert placement.delete("/traits/CUSTOM_GOLD").status_code == 204
    assert placement.get("/traits/CUSTOM_GOLD").status_code == 404
    assert placement.delete("/traits/CUSTOM_GOLD").status_code == 404


@pytest.mark.parametrize("name", ["GOLD", "CUSTOM_gold", "CUSTOM_A:1", "CUSTOM_" + "A" * 249])
def test_invalid_custom_names(placement: httpx.Client, name: str) -> None:
    resp = placement.put(f"/traits/{name}")
    assert resp.status_code == 400
    assert "The trait is invalid" in resp.text
    assert name not in names(placement)


def test_standard_traits_are_listed_and_protected(placement: httpx.Client) -> None:
    assert "HW_CPU_X86_AVX2" in names(placement)
    resp = placement.delete("/traits/HW_CPU_X86_AVX2")
    assert resp.status_code == 400 and "Cannot delete standard trait" in resp.text


def test_list_filters(placement: httpx.Client, rp_url: str) -> None:
    for name in ("CUSTOM_A1", "CUSTOM_A2", "CUSTOM_B"):
        placement.put(f"/traits/{name}")
    assert sorted(names(placement, "?name=startswith:CUSTOM_A")) == ["CUSTOM_A1", "CUSTOM_A2"]
    assert sorted(names(placement, "?name=in:CUSTOM_B,CUSTOM_A1,NOPE")) == [
        "CUSTOM_A1", "CUSTOM_B"]
    placement.put(f"{rp_url}/traits", json={"traits": ["CUSTOM_B"],
                                            "resource_provider_generation": 0})
    assert names(placement, "?associated=true") == ["CUSTOM_B"]
    assert "CUSTOM_B" not in names(placement, "?associated=false")
    assert placement.get("/traits?name=CUSTOM_B").status_code == 400
    assert placement.get("/traits?associated=maybe").status_code == 400
    assert placement.get("/traits?colour=red").status_code == 400


def test_traits_need_1_6(placement: httpx.Client) -> None:
    old = {"openstack-api-version": "placement 1.5"}
    assert placement.get("/traits", headers=old).status_code == 404
    assert placement.put("/traits/CUSTOM_X", headers=old).status_code == 404


def test_provider_traits_replace_and_generation(placement: httpx.Client, rp_url: str) -> None:
    placement.put("/traits/CUSTOM_GOLD")
    body = {"traits": ["CUSTOM_GOLD", "HW_CPU_X86_AVX2"], "resource_provider_generation": 0}
    resp = placement.put(f"{rp_url}/traits", json=body)
    assert resp.status_code == 200
    assert sorted(resp.json()["traits"]) == ["CUSTOM_GOLD", "HW_CPU_X86_AVX2"]
    assert resp.json()["resource_provider_generation"] == 1
    stale = placement.put(f"{rp_url}/traits", json={"traits": [],
                                                    "resource_provider_generation": 0})
    assert stale.status_code == 409
    assert stale.json()["errors"][0]["code"] == "placement.concurrent_update"
    in_use = placement.delete("/traits/CUSTOM_GOLD")
    assert in_use.status_code == 409 and "is in use by a resource provider" in in_use.text
    listed = placement.get(f"{rp_url}/traits").json()
    assert sorted(listed["traits"]) == ["CUSTOM_GOLD", "HW_CPU_X86_AVX2"]
    assert placement.delete(f"{rp_url}/traits").status_code == 204
    assert placement.get(f"{rp_url}/traits").json() == {
        "traits": [], "resource_provider_generation": 2}


def test_unknown_provider_traits_change_nothing(placement: httpx.Client, rp_url: str) -> None:
    resp = placement.put(f"{rp_url}/traits", json={
        "traits": ["CUSTOM_NOPE", "HW_CPU_X86_AVX2"], "resource_provider_generation": 0})
    assert resp.status_code == 400 and "No such trait CUSTOM_NOPE" in resp.text
    assert placement.get(f"{rp_url}/traits").json() == {
        "traits": [], "resource_provider_generation": 0}
    missing = placement.get("/resource_providers/nope/traits")
    assert missing.status_code == 404
    assert "No resource provider with uuid nope found" in missing.text
