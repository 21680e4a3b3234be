"""Nova's image proxy over HTTP: /images (2.1-2.35) and /images/{id}/metadata (2.1-2.38),
read from and written to the Image service's records."""

from __future__ import annotations

import concurrent.futures
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.functional.conftest import MEMBER, Cloud, api_client

SERVER = str(uuid.uuid4())


@dataclass
class World:
    cloud: Cloud
    glance: httpx.Client  # demo:p1's Image API client
    admin_glance: httpx.Client
    mine: dict[str, Any]  # demo:p1's private image
    public: dict[str, Any]  # admin's public snapshot of SERVER
    theirs: dict[str, Any]  # another project's private image

    def nova(self, version: str = "2.35", who: str = "demo:p1") -> httpx.Client:
        return self.cloud.client(who, version=version, roles=MEMBER)


def _create(client: httpx.Client, name: str, **fields: Any) -> dict[str, Any]:
    resp = client.post("/v2/images", json={"name": name, "disk_format": "raw",
                                           "container_format": "bare", **fields})
    assert resp.status_code == 201, resp.text
    return dict(resp.json())


@pytest.fixture
def world(cloud: Cloud) -> Iterator[World]:
    url = f"{cloud.live.url}/image"
    with api_client(url, token="demo:p1", roles=MEMBER) as glance, \
            api_client(url) as admin, \
            api_client(url, token="eve:p2", roles=MEMBER) as eve:
        mine = _create(glance, "mine", visibility="private", os_distro="cirros")
        assert glance.put(f"/v2/images/{mine['id']}/file", content=b"*" * 1024,
                          headers={"content-type": "application/octet-stream"}
                          ).status_code == 204
        public = _create(admin, "snap", visibility="public", min_ram=512, min_disk=2,
                         instance_uuid=SERVER, image_type="snapshot")
        assert admin.put(f"/v2/images/{public['id']}/file", content=b"snap",
                         headers={"content-type": "application/octet-stream"}
                         ).status_code == 204
        theirs = _create(eve, "theirs", visibility="private")
        yield World(cloud, glance, admin, mine, public, theirs)


def _ids(resp: httpx.Response) -> list[str]:
    assert resp.status_code == 200, resp.text
    return [image["id"] for image in resp.json()["images"]]


def _error(resp: httpx.Response, status: int) -> str:
    assert resp.status_code == status, resp.text
    return str(next(iter(resp.json().values()))["message"])


def test_views_and_microversions(world: World) -> None:
    base = world.cloud.live.url
    with world.nova() as nova:
        listed = nova.get("/images").json()["images"]
        assert {i["id"] for i in listed} == {world.mine["id"], world.public["id"]}
        assert all(set(i) == {"id", "name", "links"} for i in listed)
        shown = nova.get(f"/images/{world.mine['id']}").json()["image"]
        assert shown == {
            "id": world.mine["id"], "name": "mine", "minRam": 0, "minDisk": 0,
            "metadata": {"os_distro": "cirros"}, "status": "ACTIVE", "progress": 100,
            "created": shown["created"], "updated": shown["updated"],
            "OS-EXT-IMG-SIZE:size": 1024,
            "links": [
                {"rel": "self", "href": f"{base}/compute/v2.1/images/{world.mine['id']}"},
                {"rel": "bookmark", "href": f"{base}/compute/images/{world.mine['id']}"},
                {"rel": "alternate", "type": "application/vnd.openstack.image",
                 "href": f"{base}/image/images/{world.mine['id']}"}]}
        detail = {i["id"]: i for i in nova.get("/images/detail").json()["images"]}
        snap = detail[world.public["id"]]
        assert (snap["minRam"], snap["minDisk"], snap["OS-EXT-IMG-SIZE:size"]) == (512, 2, 4)
        assert snap["server"] == {"id": SERVER, "links": [
            {"rel": "self", "href": f"{base}/compute/v2.1/servers/{SERVER}"},
            {"rel": "bookmark", "href": f"{base}/compute/servers/{SERVER}"}]}
        assert detail[world.mine["id"]] == shown
        assert _error(nova.get(f"/images/{world.theirs['id']}"), 404) == "Image not found."
    with world.nova("2.36") as nova:
        assert nova.get("/images").status_code == 404
        assert nova.get(f"/images/{world.mine['id']}").status_code == 404
        assert nova.get(f"/images/{world.mine['id']}/metadata").status_code == 200
    with world.nova("2.39") as nova:
        assert nova.get(f"/images/{world.mine['id']}/metadata").status_code == 404


def test_filters_and_paging(world: World) -> None:
    mine, public = world.mine["id"], world.public["id"]
    with world.nova() as nova:
        def ids(**params: Any) -> list[str]:
            return _ids(nova.get("/images/detail", params=params))

        assert ids(name="mine") == [mine]
        assert sorted(ids(status="ACTIVE")) == sorted([mine, public])
        assert ids(status="SAVING") == []
        assert ids(minRam=512) == [public] and ids(minDisk=3) == []
        assert ids(minRam=10**30) == []
        assert ids(server=SERVER) == [public]
        assert ids(server=f"http://x/v2.1/servers/{SERVER}") == [public]
        assert ids(type="snapshot") == [public]
        assert ids(**{"property-os_distro": "cirros"}) == [mine]
        assert sorted(ids(**{"changes-since": "2000-01-01T00:00:00Z"})) == sorted([mine, public])
        assert ids(**{"changes-since": "2999-01-01T00:00:00Z"}) == []
        first = nova.get("/images", params={"limit": 1}).json()
        (link,) = first["images_links"]
        assert link["rel"] == "next" and f"marker={first['images'][0]['id']}" in link["href"]
        rest = _ids(nova.get("/images", params={"marker": first["images"][0]["id"]}))
        assert sorted(rest + [first["images"][0]["id"]]) == sorted([mine, public])
        for params, message in (({"limit": "x"}, "limit must be an integer"),
                                ({"limit": "-1"}, "limit must be >= 0"),
                                ({"minRam": "x"}, "Invalid minRam filter [x]"),
                                ({"changes-since": "soon"}, "Invalid filter field"),
                                ({"marker": str(uuid.uuid4())}, "No image found")):
            assert message in _error(nova.get("/images", params=params), 400), params


def test_delete(world: World) -> None:
    protected = _create(world.glance, "kept", protected=True)
    with world.nova() as nova:
        for image in (world.public, protected):
            assert _error(nova.delete(f"/images/{image['id']}"), 403) == \
                "You are not allowed to delete the image."
        assert _error(nova.delete(f"/images/{world.theirs['id']}"), 404) == "Image not found."
        assert nova.delete(f"/images/{world.mine['id']}").status_code == 204
        assert nova.get(f"/images/{world.mine['id']}").status_code == 404
    assert world.glance.get(f"/v2/images/{world.mine['id']}").status_code == 404
    assert world.admin_glance.get(f"/v2/images/{world.public['id']}").status_code == 200


def test_metadata_calls(world: World) -> None:
    image_id = world.mine["id"]
    path = f"/images/{image_id}/metadata"
    with world.nova("2.38") as nova:
        assert nova.get(path).json() == {"metadata": {"os_distro": "cirros"}}
        merged = nova.post(path, json={"metadata": {"a": "1", "os_distro": "fedora"}})
        assert merged.json() == {"metadata": {"a": "1", "os_distro": "fedora"}}
        replaced = nova.put(path, json={"metadata": {"b": "2", "c": "3"}})
        assert (replaced.status_code, replaced.json()) == (200, {"metadata": {"b": "2", "c": "3"}})
        assert nova.get(path + "/b").json() == {"meta": {"b": "2"}}
        one = nova.put(path + "/d", json={"meta": {"d": "4"}})
        assert (one.status_code, one.json()) == (200, {"meta": {"d": "4"}})
        assert nova.delete(path + "/c").status_code == 204
        assert _error(nova.delete(path + "/c"), 404) == "Invalid metadata key"
        assert nova.get(path + "/c").status_code == 404
    stored = world.glance.get(f"/v2/images/{image_id}").json()
    assert (stored["b"], stored["d"], "c" in stored, "os_distro" in stored) == \
        ("2", "4", False, False)


def test_metadata_refusals_change_nothing(world: World) -> None:
    path = f"/images/{world.mine['id']}/metadata"
    with world.nova() as nova:
        assert _error(nova.put(path + "/x", json={"meta": {"y": "1"}}), 400) == \
            "Request body and URI mismatch"
        for body in ({"metadata": {"k" * 256: "v"}}, {"metadata": {"k": 1}},
                     {"metadata": {"min_ram": "1"}}, {"metadata": {"status": "x"}}):
            assert nova.post(path, json=body).status_code == 400, body
        too_many = {f"k{i}": "v" for i in range(128)}
        assert _error(nova.post(path, json={"metadata": too_many}), 403) == \
            "Image metadata limit exceeded"
        assert nova.put(path, json={"metadata": too_many}).status_code == 200
        assert nova.put(path + "/more", json={"meta": {"more": "v"}}).status_code == 403
        public = f"/images/{world.public['id']}/metadata"
        assert _error(nova.post(public, json={"metadata": {"a": "b"}}), 403) == \
            f"Not authorized for image {world.public['id']}."
        assert nova.get(public).status_code == 200
        theirs = f"/images/{world.theirs['id']}/metadata"
        assert _error(nova.put(theirs, json={"metadata": {}}), 404) == "Image not found."
    assert len(world.glance.get(f"/v2/images/{world.mine['id']}").json()) > 128
    assert "a" not in world.admin_glance.get(f"/v2/images/{world.public['id']}").json()


def test_concurrent_merges_all_land(world: World) -> None:
    path = f"/images/{world.mine['id']}/metadata"

    def merge(n: int) -> int:
        with world.nova() as nova:
            return nova.post(path, json={"metadata": {f"k{n}": "v"}}).status_code

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        assert set(pool.map(merge, range(8))) == {200}
    with world.nova() as nova:
        assert set(nova.get(path).json()["metadata"]) == {"os_distro", *(f"k{n}" for n in range(8))}
