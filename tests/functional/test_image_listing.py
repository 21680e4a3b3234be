"""GET /v2/images as Glance filters and sorts it, os_hidden, and the published schemas
(SQLite, PostgreSQL, MySQL)."""

from __future__ import annotations

from typing import Any

import httpx

OCTETS = {"content-type": "application/octet-stream"}
PATCH = {"content-type": "application/openstack-images-v2.1-json-patch"}


def _image(client: httpx.Client, name: str, data: bytes | None, **fields: Any) -> str:
    made = client.post("/v2/images", json={"name": name, "disk_format": "raw",
                                           "container_format": "bare", **fields})
    assert made.status_code == 201, made.text
    image_id = str(made.json()["id"])
    if data is not None:
        assert client.put(f"/v2/images/{image_id}/file", content=data,
                          headers=OCTETS).status_code == 204
    return image_id


def _names(client: httpx.Client, **params: Any) -> list[str]:
    resp = client.get("/v2/images", params=params)
    assert resp.status_code == 200, resp.text
    return [i["name"] for i in resp.json()["images"]]


def test_filters(image: httpx.Client) -> None:
    _image(image, "small", b"x" * 10, tags=["a", "b"], hw_disk_bus="scsi")
    _image(image, "big", b"x" * 1000, disk_format="qcow2", tags=["a"])
    _image(image, "empty", None, container_format="ovf")
    assert sorted(_names(image, tag="a")) == ["big", "small"]
    assert _names(image, tag=["a", "b"]) == ["small"]
    assert _names(image, disk_format="qcow2") == ["big"]
    assert _names(image, container_format="ovf") == ["empty"]
    assert _names(image, size=10) == ["small"]
    assert _names(image, size_min=11, size_max=5000) == ["big"]
    assert _names(image, hw_disk_bus="scsi") == ["small"]
    assert sorted(_names(image, owner="admin")) == ["big", "empty", "small"]
    assert image.get("/v2/images", params={"size_min": "lots"}).status_code == 400
    assert image.get("/v2/images", params={"os_hidden": "maybe"}).status_code == 400


def test_sorting(image: httpx.Client) -> None:
    for name, size in (("b", 30), ("a", 10), ("c", 20)):
        _image(image, name, b"x" * size)
    assert _names(image, sort="size:desc") == ["b", "c", "a"]
    assert _names(image, sort="name:asc") == ["a", "b", "c"]
    assert _names(image, sort_key="size", sort_dir="asc") == ["a", "c", "b"]
    first = image.get("/v2/images", params={"sort": "name:asc", "limit": 2}).json()
    assert [i["name"] for i in first["images"]] == ["a", "b"]
    rest = image.get(first["next"])
    assert rest.status_code == 200 and [i["name"] for i in rest.json()["images"]] == ["c"]
    for params in ({"sort": "colour:asc"}, {"sort": "name:up"},
                   {"sort": "name", "sort_key": "size"}):
        assert image.get("/v2/images", params=params).status_code == 400, params


def test_hidden_images_are_listed_only_when_asked(image: httpx.Client) -> None:
    hidden = _image(image, "hidden", None, os_hidden=True)
    _image(image, "shown", None)
    assert _names(image) == ["shown"]
    assert _names(image, os_hidden="true") == ["hidden"]
    assert image.get(f"/v2/images/{hidden}").json()["os_hidden"] is True
    resp = image.patch(f"/v2/images/{hidden}", headers=PATCH,
                       json=[{"op": "replace", "path": "/os_hidden", "value": False}])
    assert resp.status_code == 200, resp.text
    assert sorted(_names(image)) == ["hidden", "shown"]


def test_schemas(image: httpx.Client) -> None:
    one = image.get("/v2/schemas/image")
    assert one.status_code == 200 and one.json()["name"] == "image"
    assert {"name", "status", "checksum", "os_hidden"} <= set(one.json()["properties"])
    many = image.get("/v2/schemas/images")
    assert many.status_code == 200 and many.json()["name"] == "images"
