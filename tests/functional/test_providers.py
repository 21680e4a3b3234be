"""Resource providers over HTTP: create, show, list filters, rename, trees, delete."""

from __future__ import annotations

import uuid

import httpx
import pytest


def create(placement: httpx.Client, name: str, parent: str | None = None,
           rp_uuid: str | None = None) -> dict[str, object]:
    body: dict[str, object] = {"name": name, "uuid": rp_uuid or str(uuid.uuid4())}
    if parent:
        body["parent_provider_uuid"] = parent
    resp = placement.post("/resource_providers", json=body)
    assert resp.status_code == 200, resp.text
    data: dict[str, object] = resp.json()
    return data


def old(version: str) -> dict[str, str]:
    return {"openstack-api-version": f"placement {version}"}


def test_create_returns_provider_and_location(placement: httpx.Client) -> None:
    resp = placement.post("/resource_providers", json={"name": "cn1"})
    assert resp.status_code == 200
    body = resp.json()
    assert resp.headers["location"].endswith(f"/resource_providers/{body['uuid']}")
    assert body["generation"] == 0
    assert body["parent_provider_uuid"] is None
    assert body["root_provider_uuid"] == body["uuid"]
    rels = {link["rel"]: link["href"] for link in body["links"]}
    base = f"/resource_providers/{body['uuid']}"
    assert rels == {"self": base, **{r: f"{base}/{r}" for r in
                    ("inventories", "usages", "aggregates", "traits", "allocations")}}
    assert resp.headers["cache-control"] == "no-cache"


def test_create_before_1_20_is_201_without_body(placement: httpx.Client) -> None:
    resp = placement.post("/resource_providers", json={"name": "cn1"}, headers=old("1.19"))
    assert resp.status_code == 201
    assert resp.content == b""
    assert "/resource_providers/" in resp.headers["location"]


def test_links_and_fields_follow_microversion(placement: httpx.Client) -> None:
    rp = create(placement, "cn1")
    shown = placement.get(f"/resource_providers/{rp['uuid']}", headers=old("1.10")).json()
    assert len(shown["links"]) == 5 and "root_provider_uuid" not in shown
    shown = placement.get(f"/resource_providers/{rp['uuid']}", headers=old("1.0")).json()
    assert [link["rel"] for link in shown["links"]] == ["self", "inventories", "usages"]


def test_dashless_uuid_is_normalised_and_duplicates_conflict(placement: httpx.Client) -> None:
    rp_uuid = str(uuid.uuid4())
    create(placement, "cn1", rp_uuid=rp_uuid.replace("-", ""))
    assert placement.get(f"/resource_providers/{rp_uuid}").status_code == 200
    same_uuid = placement.post("/resource_providers", json={"name": "x", "uuid": rp_uuid})
    assert same_uuid.status_code == 409
    assert f"Conflicting resource provider uuid: {rp_uuid} already exists" in same_uuid.text
    same_name = placement.post("/resource_providers", json={"name": "cn1"})
    assert same_name.status_code == 409
    assert same_name.json()["errors"][0]["code"] == "placement.duplicate_name"
    assert len(placement.get("/resource_providers").json()["resource_providers"]) == 1


@pytest.mark.parametrize("body", [
    {}, {"name": "x" * 201}, {"name": "a", "uuid": "not-a-uuid"}, {"name": "a", "spam": 1},
])
def test_bad_create_changes_nothing(placement: httpx.Client, body: dict[str, object]) -> None:
    resp = placement.post("/resource_providers", json=body)
    assert resp.status_code == 400
    assert "JSON does not validate" in resp.text
    assert placement.get("/resource_providers").json()["resource_providers"] == []


def test_list_filters(placement: httpx.Client) -> None:
    root = create(placement, "root")
    child = create(placement, "child", parent=str(root["uuid"]))
    other = create(placement, "other")

    def names(query: str) -> set[str]:
        resp = placement.get(f"/resource_providers?{query}")
        assert resp.status_code == 200, resp.text
        return {p["name"] for p in resp.json()["resource_providers"]}

    assert names("") == {"root", "child", "other"}
    assert names("name=child") == {"child"}
    assert names(f"uuid={other['uuid']}") == {"other"}
    assert names(f"in_tree={child['uuid']}") == {"root", "child"}
    assert names(f"in_tree={uuid.uuid4()}") == set()
    assert placement.get("/resource_providers?uuid=nope").status_code == 400
    bad = placement.get("/resource_providers?spam=eggs")
    assert bad.status_code == 400 and "Invalid query string parameters" in bad.text
    too_old = placement.get(f"/resource_providers?in_tree={root['uuid']}", headers=old("1.13"))
    assert too_old.status_code == 400


def test_rename_keeps_generation(placement: httpx.Client) -> None:
    rp = create(placement, "cn1")
    create(placement, "taken")
    url = f"/resource_providers/{rp['uuid']}"
    resp = placement.put(url, json={"name": "cn1-renamed"})
    assert resp.status_code == 200
    assert resp.json()["name"] == "cn1-renamed" and resp.json()["generation"] == 0
    clash = placement.put(url, json={"name": "taken"})
    assert clash.status_code == 409
    assert clash.json()["errors"][0]["code"] == "placement.duplicate_name"
    assert placement.get(url).json()["name"] == "cn1-renamed"


def test_parenting_rules(placement: httpx.Client) -> None:
    """Tree used below::

        a ── b ── c        d
    """
    a, d = create(placement, "a"), create(placement, "d")
    b = create(placement, "b", parent=str(a["uuid"]))
    c = create(placement, "c", parent=str(b["uuid"]))
    assert c["root_provider_uuid"] == a["uuid"]

    def put(rp: dict[str, object], parent: object, version: str = "1.39") -> httpx.Response:
        return placement.put(f"/resource_providers/{rp['uuid']}",
                             json={"name": rp["name"], "parent_provider_uuid": parent},
                             headers=old(version))

    assert "creating loop" in put(a, c["uuid"]).text
    assert "creating loop" in put(a, a["uuid"]).text
    assert "re-parenting a provider is not currently allowed" in put(b, d["uuid"], "1.36").text
    assert "un-parenting a provider is not currently allowed" in put(b, None, "1.36").text
    assert "parent provider UUID does not exist" in put(d, str(uuid.uuid4())).text

    moved = put(b, d["uuid"])
    assert moved.status_code == 200 and moved.json()["root_provider_uuid"] == d["uuid"]
    tree = placement.get(f"/resource_providers?in_tree={d['uuid']}").json()
    assert {p["name"]: p["root_provider_uuid"] for p in tree["resource_providers"]} == {
        "d": d["uuid"], "b": d["uuid"], "c": d["uuid"]}
    unparented = put(b, None)
    assert unparented.json()["root_provider_uuid"] == b["uuid"]
    shown_c = placement.get(f"/resource_providers/{c['uuid']}").json()
    assert shown_c["root_provider_uuid"] == b["uuid"]


def test_self_parent_on_create_is_rejected(placement: httpx.Client) -> None:
    rp_uuid = str(uuid.uuid4())
    resp = placement.post("/resource_providers",
                          json={"name": "x", "uuid": rp_uuid, "parent_provider_uuid": rp_uuid})
    assert resp.status_code == 400
    assert "parent provider UUID cannot be same as UUID" in resp.text


def test_delete_rules(placement: httpx.Client) -> None:
    parent = create(placement, "parent")
    child = create(placement, "child", parent=str(parent["uuid"]))
    resp = placement.delete(f"/resource_providers/{parent['uuid']}")
    assert resp.status_code == 409
    assert resp.json()["errors"][0]["code"] == "placement.resource_provider.cannot_delete_parent"
    assert placement.delete(f"/resource_providers/{child['uuid']}").status_code == 204
    assert placement.delete(f"/resource_providers/{parent['uuid']}").status_code == 204
    gone = placement.delete(f"/resource_providers/{parent['uuid']}")
    assert gone.status_code == 404 and "found for delete" in gone.text


def test_delete_with_allocations_is_refused(placement: httpx.Client) -> None:
    rp = create(placement, "cn1")
    url = f"/resource_providers/{rp['uuid']}"
    placement.put(f"{url}/inventories", json={
        "resource_provider_generation": 0, "inventories": {"VCPU": {"total": 4}}})
    consumer = str(uuid.uuid4())
    alloc = placement.put(f"/allocations/{consumer}", json={
        "allocations": {rp["uuid"]: {"resources": {"VCPU": 1}}},
        "project_id": str(uuid.uuid4()), "user_id": str(uuid.uuid4()),
        "consumer_generation": None, "consumer_type": "INSTANCE"})
    assert alloc.status_code == 204, alloc.text
    resp = placement.delete(url)
    assert resp.status_code == 409
    assert resp.json()["errors"][0]["code"] == "placement.resource_provider.inuse"
    assert placement.get(url).status_code == 200
    assert placement.delete(f"/allocations/{consumer}").status_code == 204
    assert placement.delete(url).status_code == 204
