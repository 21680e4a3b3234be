"""Provider aggregates over HTTP: bare list before 1.19, generation-checked object from 1.19."""

from __future__ import annotations

import uuid

import httpx
import pytest

AGG1, AGG2 = str(uuid.uuid4()), str(uuid.uuid4())


@pytest.fixture
def rp_url(placement: httpx.Client) -> str:
    resp = placement.post("/resource_providers", json={"name": "cn1"})
    assert resp.status_code == 200
    return f"/resource_providers/{resp.json()['uuid']}/aggregates"


def v(version: str) -> dict[str, str]:
    return {"openstack-api-version": f"placement {version}"}


def test_set_and_get_with_generation(placement: httpx.Client, rp_url: str) -> None:
    assert placement.get(rp_url).json() == {"aggregates": [], "resource_provider_generation": 0}
    resp = placement.put(rp_url, json={"aggregates": [AGG1, AGG2],
                                       "resource_provider_generation": 0})
    assert resp.status_code == 200
    assert resp.json() == {"aggregates": [AGG1, AGG2], "resource_provider_generation": 1}
    assert sorted(placement.get(rp_url).json()["aggregates"]) == sorted([AGG1, AGG2])
    stale = placement.put(rp_url, json={"aggregates": [], "resource_provider_generation": 0})
    assert stale.status_code == 409
    assert stale.json()["errors"][0]["code"] == "placement.concurrent_update"
    assert len(placement.get(rp_url).json()["aggregates"]) == 2


def test_old_microversions_use_a_bare_list(placement: httpx.Client, rp_url: str) -> None:
    resp = placement.put(rp_url, json=[AGG1], headers=v("1.18"))
    assert resp.status_code == 200 and resp.json() == {"aggregates": [AGG1]}
    assert placement.get(rp_url, headers=v("1.18")).json() == {"aggregates": [AGG1]}
    # Before 1.19 the generation is neither checked nor bumped.
    assert placement.get(rp_url).json()["resource_provider_generation"] == 0
    assert placement.get(rp_url, headers=v("1.0")).status_code == 404


@pytest.mark.parametrize("body", [
    [AGG1], {"aggregates": [AGG1]}, {"aggregates": ["harry"], "resource_provider_generation": 0},
    {"aggregates": [AGG1, AGG1], "resource_provider_generation": 0},
])
def test_bad_bodies_change_nothing(placement: httpx.Client, rp_url: str, body: object) -> None:
    resp = placement.put(rp_url, json=body)
    assert resp.status_code == 400 and "JSON does not validate" in resp.text
    assert placement.get(rp_url).json() == {"aggregates": [], "resource_provider_generation": 0}


def test_member_of_filter_sees_aggregates(placement: httpx.Client, rp_url: str) -> None:
    placement.put(rp_url, json={"aggregates": [AGG1], "resource_provider_generation": 0})
    placement.post("/resource_providers", json={"name": "other"})
    found = placement.get(f"/resource_providers?member_of={AGG1}").json()
    assert [p["name"] for p in found["resource_providers"]] == ["cn1"]
