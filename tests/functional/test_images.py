"""Image records over HTTP: create (queued until data arrives), show, list with filters,
patch, delete."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from tests.functional.conftest import MEMBER, LiveServer, api_client

PATCH = {"content-type": "application/openstack-images-v2.1-json-patch"}


def create(client: httpx.Client, name: str, **fields: Any) -> dict[str, Any]:
    resp = client.post("/v2/images", json={"name": name, "disk_format": "qcow2",
                                           "container_format": "bare", **fields})
    assert resp.status_code == 201, resp.text
    return dict(resp.json())


def names(resp: httpx.Response) -> list[str]:
    assert resp.status_code == 200, resp.text
    return [i["name"] for i in resp.json()["images"]]


def test_version_documents_need_no_token(live_stowage: LiveServer) -> None:
    root = httpx.get(f"{live_stowage.url}/image")
    assert root.status_code == 300
    (version,) = root.json()["versions"]
    assert version["links"][0]["href"] == f"{live_stowage.url}/image/v2/"
    assert httpx.get(f"{live_stowage.url}/image/v2").status_code == 200


def test_create_is_queued_with_properties_at_top_level(image: httpx.Client) -> None:
    made = create(image, "cirros", min_ram=64, **{"trait:HW_CPU_X86_AVX2": "required"})
    assert made["status"] == "queued"
    assert made["trait:HW_CPU_X86_AVX2"] == "required"
    assert (made["visibility"], made["owner"], made["min_ram"]) == ("shared", "admin", 64)
    assert made["self"] == f"/v2/images/{made['id']}"
    shown = image.get(f"/v2/images/{made['id']}")
    assert shown.json() == made


def test_list_filters(image: httpx.Client) -> None:
    a = create(image, "a")
    b = create(image, "b", visibility="public")
    create(image, "c")
    assert sorted(names(image.get("/v2/images"))) == ["a", "b", "c"]
    assert names(image.get("/v2/images", params={"name": "b"})) == ["b"]
    by_id = image.get("/v2/images", params={"id": f"in:{a['id']},{b['id']}"})
    assert sorted(names(by_id)) == ["a", "b"]
    assert names(image.get("/v2/images", params={"visibility": "public"})) == ["b"]
    assert names(image.get("/v2/images", params={"status": "active"})) == []
    assert len(names(image.get("/v2/images", params={"status": "queued"}))) == 3


def test_pages_follow_next(image: httpx.Client) -> None:
    for name in ("a", "b", "c"):
        create(image, name)
    seen: list[str] = []
    url: str | None = "/v2/images?limit=2"
    while url:
        resp = image.get(url)
        seen += names(resp)
        url = resp.json().get("next")
    assert sorted(seen) == ["a", "b", "c"]
    assert image.get("/v2/images", params={"marker": str(uuid.uuid4())}).status_code == 400


@pytest.mark.parametrize(("body", "status"), [
    ({"name": "x", "disk_format": "floppy"}, 400),
    ({"name": "x", "hw_disk_bus": 5}, 400),
    ({"name": "x", "min_ram": -1}, 400),
    ({"name": "x", "id": "not-a-uuid"}, 400),
    ({"name": "x", "status": "active"}, 403),
    ({"name": "x", "size": 5}, 403),
])
def test_bad_create_bodies_change_nothing(image: httpx.Client, body: dict[str, Any],
                                          status: int) -> None:
    resp = image.post("/v2/images", json=body)
    assert resp.status_code == status, resp.text
    assert resp.json()["message"]
    assert names(image.get("/v2/images")) == []


def test_patch_properties(image: httpx.Client) -> None:
    made = create(image, "x", hw_disk_bus="scsi")
    ops = [{"op": "add", "path": "/trait:CUSTOM_GOLD", "value": "required"},
           {"op": "replace", "path": "/name", "value": "renamed"},
           {"op": "remove", "path": "/hw_disk_bus"}]
    resp = image.patch(f"/v2/images/{made['id']}", json=ops, headers=PATCH)
    assert resp.status_code == 200, resp.text
    patched = resp.json()
    assert patched["name"] == "renamed" and patched["trait:CUSTOM_GOLD"] == "required"
    assert "hw_disk_bus" not in patched


@pytest.mark.parametrize(("ops", "headers", "status"), [
    ([{"op": "replace", "path": "/name", "value": "y"}], {}, 415),
    ([{"op": "replace", "path": "/status", "value": "killed"}], PATCH, 403),
    ([{"op": "remove", "path": "/missing"}], PATCH, 409),
    ([{"op": "add", "path": "/min_ram", "value": "lots"}], PATCH, 400),
    ([{"op": "move", "path": "/name"}], PATCH, 400),
])
def test_bad_patches_change_nothing(image: httpx.Client, ops: list[dict[str, Any]],
                                    headers: dict[str, str], status: int) -> None:
    made = create(image, "x")
    resp = image.patch(f"/v2/images/{made['id']}", json=ops, headers=headers)
    assert resp.status_code == status, resp.text
    assert image.get(f"/v2/images/{made['id']}").json() == made


def test_delete_and_protection(image: httpx.Client) -> None:
    keep = create(image, "keep", protected=True)
    drop = create(image, "drop")
    assert image.delete(f"/v2/images/{keep['id']}").status_code == 403
    assert image.delete(f"/v2/images/{drop['id']}").status_code == 204
    assert image.get(f"/v2/images/{drop['id']}").status_code == 404
    assert names(image.get("/v2/images")) == ["keep"]


def test_upload_records_only_a_size(image: httpx.Client) -> None:
    made = create(image, "x")
    resp = image.put(f"/v2/images/{made['id']}/file", content=b"12345",
                     headers={"content-type": "application/octet-stream"})
    assert resp.status_code == 204
    shown = image.get(f"/v2/images/{made['id']}").json()
    assert (shown["size"], shown["status"]) == (5, "active")


def test_projects_see_public_and_their_own_images(image: httpx.Client,
                                                  live_stowage: LiveServer) -> None:
    create(image, "public", visibility="public")
    admins = create(image, "admins-private", visibility="private")
    with api_client(f"{live_stowage.url}/image", token="alice:proj-a", roles=MEMBER) as alice:
        mine = create(alice, "alices")
        assert sorted(names(alice.get("/v2/images"))) == ["alices", "public"]
        assert alice.get(f"/v2/images/{admins['id']}").status_code == 404
        assert alice.post("/v2/images", json={"name": "p", "visibility": "public"}) \
            .status_code == 403
    assert image.get(f"/v2/images/{mine['id']}").json()["owner"] == "proj-a"
    with api_client(f"{live_stowage.url}/image", token="bob:proj-b", roles=MEMBER) as bob:
        assert bob.delete(f"/v2/images/{mine['id']}").status_code == 404


@pytest.mark.parametrize("field", ["min_ram", "min_disk"])
def test_min_values_beyond_an_integer_column_are_400(image: httpx.Client, field: str) -> None:
    """Glance's database check: min_disk and min_ram are 4-byte integers."""
    message = f"'{field}' value out of range, must not exceed 2147483647."
    refused = image.post("/v2/images", json={"name": "big", field: 2**31})
    assert refused.status_code == 400, refused.text
    assert refused.json()["message"] == message
    assert names(image.get("/v2/images")) == []
    made = create(image, "small", **{field: 2**31 - 1})
    patch = [{"op": "replace", "path": f"/{field}", "value": 2**63}]
    refused = image.patch(f"/v2/images/{made['id']}", json=patch, headers=PATCH)
    assert refused.status_code == 400, refused.text
    assert refused.json()["message"] == f"'{field}' value out of range, must not exceed " \
                                        "2147483647."
    assert image.get(f"/v2/images/{made['id']}").json()[field] == 2**31 - 1
