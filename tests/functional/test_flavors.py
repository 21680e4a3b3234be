"""Flavors over HTTP: create, show, list with filters and pages, describe, delete, policy."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.functional.conftest import LiveServer, api_client


def flavor_body(name: str, flavorid: str | None = None, ram: int = 512, vcpus: int = 1,
                disk: int = 1, **extra: Any) -> dict[str, Any]:
    return {"flavor": {"name": name, "id": flavorid, "ram": ram, "vcpus": vcpus,
                       "disk": disk, **extra}}


def create(client: httpx.Client, name: str, flavorid: str | None = None,
           **kw: Any) -> dict[str, Any]:
    resp = client.post("/flavors", json=flavor_body(name, flavorid, **kw))
    assert resp.status_code == 200, resp.text
    return dict(resp.json()["flavor"])


def at(version: str) -> dict[str, str]:
    return {"openstack-api-version": f"compute {version}"}


def ids(resp: httpx.Response) -> list[str]:
    assert resp.status_code == 200, resp.text
    return [f["id"] for f in resp.json()["flavors"]]


def test_create_then_show_at_latest(compute: httpx.Client) -> None:
    made = create(compute, "m1.small", "2", ram=2048, vcpus=2, disk=20, swap=0,
                  description="small one", **{"OS-FLV-EXT-DATA:ephemeral": 5})
    shown = compute.get("/flavors/2").json()["flavor"]
    assert shown == made
    assert {k: shown[k] for k in ("id", "name", "ram", "vcpus", "disk", "swap")} == {
        "id": "2", "name": "m1.small", "ram": 2048, "vcpus": 2, "disk": 20, "swap": 0}
    assert shown["OS-FLV-EXT-DATA:ephemeral"] == 5
    assert shown["os-flavor-access:is_public"] is True
    assert shown["OS-FLV-DISABLED:disabled"] is False
    assert shown["rxtx_factor"] == 1.0
    assert shown["description"] == "small one"
    assert shown["extra_specs"] == {}
    assert shown["links"][0]["href"].endswith("/compute/v2.1/flavors/2")
    assert shown["links"][1]["href"].endswith("/compute/flavors/2")


def test_generated_id_is_a_uuid(compute: httpx.Client) -> None:
    made = create(compute, "auto")
    assert len(made["id"]) == 36
    assert compute.get(f"/flavors/{made['id']}").status_code == 200


@pytest.mark.parametrize(("version", "has_description", "has_specs", "swap"), [
    ("2.1", False, False, ""), ("2.54", False, False, ""), ("2.55", True, False, ""),
    ("2.61", True, True, ""), ("2.74", True, True, ""), ("2.75", True, True, 0),
])
def test_views_follow_the_microversion(compute: httpx.Client, version: str,
                                       has_description: bool, has_specs: bool,
                                       swap: object) -> None:
    create(compute, "tiny", "1")
    for view in (compute.get("/flavors/1", headers=at(version)).json()["flavor"],
                 compute.get("/flavors/detail", headers=at(version)).json()["flavors"][0]):
        assert ("description" in view) is has_description
        assert ("extra_specs" in view) is has_specs
        assert view["swap"] == swap
    brief = compute.get("/flavors", headers=at(version)).json()["flavors"][0]
    assert set(brief) == {"id", "name", "links"} | ({"description"} if has_description else set())


def test_list_filters_sorting_and_pages(compute: httpx.Client) -> None:
    create(compute, "a", "1", ram=512, disk=1)
    create(compute, "b", "2", ram=2048, disk=20)
    create(compute, "c", "3", ram=4096, disk=40)
    assert ids(compute.get("/flavors/detail")) == ["1", "2", "3"]
    assert ids(compute.get("/flavors", params={"minRam": 2048})) == ["2", "3"]
    assert ids(compute.get("/flavors", params={"minDisk": 40})) == ["3"]
    assert ids(compute.get("/flavors", params={"sort_key": "memory_mb",
                                               "sort_dir": "desc"})) == ["3", "2", "1"]
    page = compute.get("/flavors/detail", params={"limit": 2})
    assert ids(page) == ["1", "2"]
    next_href = page.json()["flavors_links"][0]["href"]
    assert "/compute/v2.1/flavors/detail?" in next_href and "marker=2" in next_href
    assert ids(compute.get("/flavors/detail", params={"limit": 2, "marker": "2"})) == ["3"]


@pytest.mark.parametrize("params", [
    {"marker": "nope"}, {"sort_key": "colour"}, {"sort_dir": "up"}, {"limit": "x"},
    {"minRam": "lots"}, {"minDisk": "1.5"}, {"is_public": "maybe"}, {"colour": "red"},
])
def test_bad_list_parameters_are_400(compute: httpx.Client, params: dict[str, str]) -> None:
    resp = compute.get("/flavors/detail", params=params)
    assert resp.status_code == 400
    assert resp.json()["badRequest"]["code"] == 400


def test_unknown_list_parameters_are_ignored_before_2_75(compute: httpx.Client) -> None:
    create(compute, "a", "1")
    assert ids(compute.get("/flavors", params={"colour": "red"}, headers=at("2.74"))) == ["1"]


def test_admin_is_public_filter(compute: httpx.Client) -> None:
    create(compute, "public", "pub")
    create(compute, "private", "priv", **{"os-flavor-access:is_public": False})
    assert ids(compute.get("/flavors")) == ["pub"]
    assert ids(compute.get("/flavors", params={"is_public": "True"})) == ["pub"]
    assert ids(compute.get("/flavors", params={"is_public": "false"})) == ["priv"]
    assert ids(compute.get("/flavors", params={"is_public": "None"})) == ["priv", "pub"]


@pytest.mark.parametrize("flavor", [
    {"name": "x", "ram": 0, "vcpus": 1, "disk": 1},
    {"name": "x", "ram": 512, "vcpus": "one", "disk": 1},
    {"name": "x", "ram": 512, "vcpus": 1, "disk": -1},
    {"ram": 512, "vcpus": 1, "disk": 1},
    {"name": " padded", "ram": 512, "vcpus": 1, "disk": 1},
    {"name": "x", "ram": 512, "vcpus": 1, "disk": 1, "colour": "red"},
    {"name": "x", "id": "bad/id", "ram": 512, "vcpus": 1, "disk": 1},
    {"name": "x", "ram": 512, "vcpus": 1, "disk": 1, "rxtx_factor": 0},
    {"name": "x", "ram": 512, "vcpus": 1, "disk": 1, "os-flavor-access:is_public": "sure"},
])
def test_bad_flavor_bodies_are_400_and_create_nothing(compute: httpx.Client,
                                                      flavor: dict[str, Any]) -> None:
    resp = compute.post("/flavors", json={"flavor": flavor})
    assert resp.status_code == 400, resp.text
    assert resp.json()["badRequest"]["message"]
    assert compute.get("/flavors", params={"is_public": "None"}).json()["flavors"] == []


def test_description_needs_2_55(compute: httpx.Client) -> None:
    resp = compute.post("/flavors", json=flavor_body("x", "1", description="d"),
                        headers=at("2.54"))
    assert resp.status_code == 400
    create(compute, "x", "1")
    assert compute.put("/flavors/1", json={"flavor": {"description": "d"}},
                       headers=at("2.54")).status_code == 404
    updated = compute.put("/flavors/1", json={"flavor": {"description": "now described"}})
    assert updated.status_code == 200
    assert updated.json()["flavor"]["description"] == "now described"
    assert compute.get("/flavors/1").json()["flavor"]["description"] == "now described"


def test_duplicate_name_or_id_conflicts(compute: httpx.Client) -> None:
    create(compute, "one", "1")
    for body in (flavor_body("one", "2"), flavor_body("two", "1")):
        resp = compute.post("/flavors", json=body)
        assert resp.status_code == 409
        assert resp.json()["conflictingRequest"]["code"] == 409
    assert ids(compute.get("/flavors")) == ["1"]


def test_delete_then_reuse_name_and_id(compute: httpx.Client) -> None:
    create(compute, "one", "1")
    assert compute.delete("/flavors/1").status_code == 202
    gone = compute.get("/flavors/1")
    assert gone.status_code == 404
    assert gone.json()["itemNotFound"]["message"] == "Flavor 1 could not be found."
    assert compute.delete("/flavors/1").status_code == 404
    create(compute, "one", "1")


def test_members_cannot_manage_flavors(compute: httpx.Client, live_stowage: LiveServer) -> None:
    create(compute, "one", "1")
    with api_client(f"{live_stowage.url}/compute/v2.1", token="alice:proj-a") as member:
        resp = member.post("/flavors", json=flavor_body("mine", "2"))
        assert resp.status_code == 403
        assert "os_compute_api:os-flavor-manage:create" in resp.json()["forbidden"]["message"]
        assert member.delete("/flavors/1").status_code == 403
        assert member.get("/flavors/1").status_code == 200
    assert ids(compute.get("/flavors")) == ["1"]


def test_members_see_public_and_their_private_flavors(compute: httpx.Client,
                                                      live_stowage: LiveServer) -> None:
    private = {"os-flavor-access:is_public": False}
    create(compute, "public", "pub")
    create(compute, "shared", "shared", **private)
    create(compute, "hidden", "hidden", **private)
    add = {"addTenantAccess": {"tenant": "proj-a"}}
    assert compute.post("/flavors/shared/action", json=add).status_code == 200
    with api_client(f"{live_stowage.url}/compute/v2.1", token="alice:proj-a") as alice, \
            api_client(f"{live_stowage.url}/compute/v2.1", token="bob:proj-b") as bob:
        assert ids(alice.get("/flavors/detail")) == ["pub", "shared"]
        assert ids(alice.get("/flavors", params={"is_public": "None"})) == ["pub", "shared"]
        assert alice.get("/flavors/shared").status_code == 200
        assert alice.get("/flavors/hidden").status_code == 404
        assert ids(bob.get("/flavors/detail")) == ["pub"]
        assert bob.get("/flavors/shared").status_code == 404


@pytest.mark.parametrize(("field", "value", "message"), [
    # A string of digits passes the schema's pattern, but is an infinite float.
    ("rxtx_factor", "1" + "0" * 400, "Invalid input received: 'rxtx_factor' argument must be "
                                     "a float between 0 and 3.40282e+38"),
    # The schema bounds the length of a string id, not the digits of a numeric one.
    ("id", 10**300, "Invalid input received: id has more than 255 characters."),
])
def test_values_no_column_holds_are_400(compute: httpx.Client, field: str, value: Any,
                                        message: str) -> None:
    resp = compute.post("/flavors", json=flavor_body("big", **{field: value}))
    assert resp.status_code == 400, resp.text
    assert resp.json()["badRequest"]["message"] == message
    assert ids(compute.get("/flavors")) == []
