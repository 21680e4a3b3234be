"""Image data over HTTP: upload and download with checksums, byte ranges, an upload cut
off halfway, the size cap and storage quota, deactivate/reactivate, and the start-up
recovery of uploads a crash interrupted (SQLite, PostgreSQL, MySQL)."""

from __future__ import annotations

import hashlib
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import httpx
import pytest

from stowage import config
from stowage.image import data
from tests.conftest import BACKENDS
from tests.functional.conftest import MEMBER, LiveServer, api_client, serving
from tests.functional.image_calls import create, show

OCTETS = {"content-type": "application/octet-stream"}
PAYLOAD = bytes(range(256)) * 40 + b"tail"  # 10,244 bytes




def chunked(body: bytes, size: int = 1000) -> Iterator[bytes]:
    for at in range(0, len(body), size):
        yield body[at:at + size]


def test_round_trip_with_checksums(image: httpx.Client) -> None:
    made = create(image)
    assert (made["status"], made["size"], made["checksum"]) == ("queued", None, None)
    assert made["virtual_size"] is None and made["os_hash_value"] is None
    assert image.get(f"/v2/images/{made['id']}/file").status_code == 204
    resp = image.put(f"/v2/images/{made['id']}/file", content=chunked(PAYLOAD), headers=OCTETS)
    assert resp.status_code == 204, resp.text
    shown = show(image, made["id"])
    assert (shown["status"], shown["size"]) == ("active", len(PAYLOAD))
    assert shown["checksum"] == hashlib.md5(PAYLOAD).hexdigest()
    assert (shown["os_hash_algo"], shown["os_hash_value"]) == (
        "sha512", hashlib.sha512(PAYLOAD).hexdigest())
    got = image.get(f"/v2/images/{made['id']}/file")
    assert got.status_code == 200 and got.content == PAYLOAD
    assert got.headers["content-md5"] == shown["checksum"]
    assert got.headers["content-length"] == str(len(PAYLOAD))
    assert got.headers["content-type"] == "application/octet-stream"
    again = image.put(f"/v2/images/{made['id']}/file", content=b"other", headers=OCTETS)
    assert again.status_code == 409, again.text
    assert again.json()["message"] == \
        "Image status transition from active to saving is not allowed"
    assert image.get(f"/v2/images/{made['id']}/file").content == PAYLOAD


def test_upload_refusals_change_nothing(image: httpx.Client) -> None:
    made = create(image)
    wrong = image.put(f"/v2/images/{made['id']}/file", content=b"x",
                      headers={"content-type": "text/plain"})
    assert wrong.status_code == 415, wrong.text
    bare = create(image, "no-format", disk_format=None, container_format=None)
    resp = image.put(f"/v2/images/{bare['id']}/file", content=b"x", headers=OCTETS)
    assert resp.status_code == 400, resp.text
    assert resp.json()["message"] == \
        "Properties disk_format, container_format must be set prior to saving data."
    assert show(image, bare["id"])["status"] == "queued"
    missing = image.put("/v2/images/6c1f6b59-3b1e-4f0a-9d8e-00000000dead/file",
                        content=b"x", headers=OCTETS)
    assert missing.status_code == 404
    assert show(image, made["id"])["status"] == "queued"


@pytest.mark.parametrize(("asked", "status", "span"), [
    ("bytes=0-4", 206, (0, 4)),
    ("bytes=10000-", 206, (10000, 10243)),
    ("bytes=-4", 206, (10240, 10243)),
    ("bytes=10240-99999", 206, (10240, 10243)),
    ("bytes=10244-", 416, None),
    ("bytes=5-2", 416, None),
    ("bytes=0-1,4-5", 416, None),
    ("pages=1", 416, None),
])
def test_ranges(image: httpx.Client, asked: str, status: int,
                span: tuple[int, int] | None) -> None:
    made = create(image)
    assert image.put(f"/v2/images/{made['id']}/file", content=PAYLOAD,
                     headers=OCTETS).status_code == 204
    resp = image.get(f"/v2/images/{made['id']}/file", headers={"range": asked})
    assert resp.status_code == status, resp.text
    if span is not None:
        first, last = span
        assert resp.content == PAYLOAD[first:last + 1]
        assert resp.headers["content-range"] == f"bytes {first}-{last}/{len(PAYLOAD)}"
        assert resp.headers["content-length"] == str(last - first + 1)


def _half_upload(url: str, path: str, total: int, sent: bytes) -> None:
    """A raw client that announces `total` bytes, sends `sent`, and hangs up."""
    where = urlparse(url)
    with socket.create_connection((where.hostname, where.port)) as sock:
        head = (f"PUT {path} HTTP/1.1\r\nHost: {where.netloc}\r\nX-Auth-Token: admin\r\n"
                f"Content-Type: application/octet-stream\r\nContent-Length: {total}\r\n\r\n")
        sock.sendall(head.encode() + sent)
        time.sleep(0.5)


def _parts(store: Path) -> list[str]:
    return [p.name for p in store.glob("*.part")] if store.is_dir() else []


def test_upload_cut_halfway_leaves_it_queued_and_no_file(image: httpx.Client,
                                                         live_stowage: LiveServer) -> None:
    made = create(image)
    store = Path(live_stowage_store(live_stowage))
    _half_upload(live_stowage.url, f"/image/v2/images/{made['id']}/file", 100_000,
                 PAYLOAD)
    deadline = time.monotonic() + 15
    while show(image, made["id"])["status"] != "queued" or _parts(store):
        assert time.monotonic() < deadline, (show(image, made["id"]), _parts(store))
        time.sleep(0.1)
    assert not (store / made["id"]).exists()
    assert image.get(f"/v2/images/{made['id']}/file").status_code == 204
    resp = image.put(f"/v2/images/{made['id']}/file", content=PAYLOAD, headers=OCTETS)
    assert resp.status_code == 204, resp.text
    assert image.get(f"/v2/images/{made['id']}/file").content == PAYLOAD


def live_stowage_store(live: LiveServer) -> str:
    """The store directory the server was started with (conftest's `serving`)."""
    return str(data.store_dir(_settings_of(live)))


def _settings_of(live: LiveServer) -> config.Settings:
    assert live.settings is not None
    return live.settings


def test_delete_removes_the_file(image: httpx.Client, live_stowage: LiveServer) -> None:
    made = create(image)
    assert image.put(f"/v2/images/{made['id']}/file", content=b"abc",
                     headers=OCTETS).status_code == 204
    stored = Path(live_stowage_store(live_stowage)) / made["id"]
    assert stored.read_bytes() == b"abc"
    assert image.delete(f"/v2/images/{made['id']}").status_code == 204
    assert not stored.exists()


def test_the_compute_proxy_delete_removes_the_file(image: httpx.Client,
                                                  live_stowage: LiveServer) -> None:
    made = create(image)
    assert image.put(f"/v2/images/{made['id']}/file", content=b"abc",
                     headers=OCTETS).status_code == 204
    stored = Path(live_stowage_store(live_stowage)) / made["id"]
    with api_client(f"{live_stowage.url}/compute/v2.1",
                    headers={"openstack-api-version": "compute 2.1"}) as nova:
        assert nova.delete(f"/images/{made['id']}").status_code == 204
    assert not stored.exists()


def test_deactivate_and_reactivate(image: httpx.Client, live_stowage: LiveServer) -> None:
    made = create(image, visibility="public")
    path = f"/v2/images/{made['id']}"
    queued = image.post(f"{path}/actions/deactivate")
    assert queued.status_code == 403, queued.text
    assert queued.json()["message"] == "Not allowed to deactivate image in status 'queued'"
    assert image.put(f"{path}/file", content=b"data", headers=OCTETS).status_code == 204
    with api_client(f"{live_stowage.url}/image", token="alice:proj-a", roles=MEMBER) as alice:
        # Another project's member may not; the owner's (or an admin) may.
        assert alice.post(f"{path}/actions/deactivate").status_code == 403
        assert image.post(f"{path}/actions/deactivate").status_code == 204
        assert image.post(f"{path}/actions/deactivate").status_code == 204
        assert show(image, made["id"])["status"] == "deactivated"
        refused = alice.get(f"{path}/file")
        assert refused.status_code == 403
        assert refused.json()["message"] == ("The requested image has been deactivated. "
                                             "Image data download is forbidden.")
        assert image.get(f"{path}/file").content == b"data"
        assert alice.post(f"{path}/actions/reactivate").status_code == 403
        assert image.post(f"{path}/actions/reactivate").status_code == 204
        assert show(image, made["id"])["status"] == "active"
        assert alice.get(f"{path}/file").content == b"data"
    missing = image.post("/v2/images/6c1f6b59-3b1e-4f0a-9d8e-00000000dead/actions/reactivate")
    assert missing.status_code == 404


def test_patch_media_types_and_reserved_properties(image: httpx.Client) -> None:
    made = create(image, hw_disk_bus="scsi")
    path = f"/v2/images/{made['id']}"
    old = {"content-type": "application/openstack-images-v2.0-json-patch"}
    new = {"content-type": "application/openstack-images-v2.1-json-patch"}
    resp = image.patch(path, json=[{"replace": "/name", "value": "renamed"},
                                   {"add": "/extra", "value": "1"}], headers=old)
    assert resp.status_code == 200, resp.text
    assert (resp.json()["name"], resp.json()["extra"]) == ("renamed", "1")
    twice = image.patch(path, json=[{"add": "/extra", "value": "2"}], headers=old)
    assert twice.status_code == 409, twice.text
    resp = image.patch(path, json=[{"op": "add", "path": "/extra", "value": "2"}], headers=new)
    assert resp.status_code == 200 and resp.json()["extra"] == "2"
    both = image.patch(path, json=[{"add": "/a", "remove": "/b", "value": "x"}], headers=old)
    assert both.status_code == 400
    for body, headers in (([{"op": "add", "path": "/os_glance_x", "value": "y"}], new),
                          ([{"add": "/os_glance_x", "value": "y"}], old)):
        assert image.patch(path, json=body, headers=headers).status_code == 403
    refused = image.post("/v2/images", json={"name": "r", "os_glance_foo": "bar"})
    assert refused.status_code == 403, refused.text
    assert refused.json()["message"] == "Attribute 'os_glance_foo' is reserved."
    assert "os_glance_x" not in show(image, made["id"])


def test_tags(image: httpx.Client) -> None:
    made = create(image, tags=["a"])
    path = f"/v2/images/{made['id']}/tags"
    assert image.put(f"{path}/b").status_code == 204
    assert image.put(f"{path}/b").status_code == 204
    assert sorted(show(image, made["id"])["tags"]) == ["a", "b"]
    assert image.delete(f"{path}/a").status_code == 204
    assert image.delete(f"{path}/a").status_code == 404
    assert show(image, made["id"])["tags"] == ["b"]


def test_a_queued_image_does_not_boot(image: httpx.Client, live_stowage: LiveServer) -> None:
    made = create(image, visibility="public")
    with api_client(f"{live_stowage.url}/compute/v2.1",
                    headers={"openstack-api-version": "compute latest"}) as nova:
        flavor = nova.post("/flavors", json={"flavor": {"name": "f", "vcpus": 1, "ram": 64,
                                                         "disk": 1}})
        assert flavor.status_code == 200, flavor.text
        booted = nova.post("/servers", json={"server": {
            "name": "s", "flavorRef": flavor.json()["flavor"]["id"], "imageRef": made["id"],
            "networks": "none"}})
    assert booted.status_code == 400, booted.text
    assert booted.json()["badRequest"]["message"] == f"Image {made['id']} is not active."


def test_recover_puts_interrupted_uploads_back(image: httpx.Client,
                                               live_stowage: LiveServer) -> None:
    made, live_one = create(image), create(image)
    settings = _settings_of(live_stowage)
    store = data.store_dir(settings)
    store.mkdir(parents=True, exist_ok=True)
    from stowage.image import tables as t
    with live_stowage.db.write() as conn:
        conn.execute(t.images.update().where(t.images.c.id.in_([made["id"], live_one["id"]]))
                     .values(status="saving"))
    dead = store / f"{made['id']}.999999999.x.part"
    alive = store / f"{live_one['id']}.{os.getpid()}.x.part"
    dead.write_bytes(b"half")
    alive.write_bytes(b"half")
    kept = create(image)
    assert image.put(f"/v2/images/{kept['id']}/file", content=b"kept",
                     headers=OCTETS).status_code == 204
    orphan = store / "6c1f6b59-3b1e-4f0a-9d8e-00000000beef"
    orphan.write_bytes(b"nobody's")
    try:
        assert data.recover(live_stowage.db, settings) == [made["id"]]
        assert show(image, made["id"])["status"] == "queued"
        assert show(image, live_one["id"])["status"] == "saving"
        assert not dead.exists() and alive.exists()
        assert not orphan.exists() and (store / kept["id"]).read_bytes() == b"kept"
    finally:
        alive.unlink()


@pytest.fixture(scope="module", params=BACKENDS)
def capped(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[LiveServer]:
    """The Image service alone, uploads capped at 1,000 bytes and 1,500 per project,
    and at 1 s between two chunks."""
    store = tmp_path_factory.mktemp("store")
    api = config.ApiSettings(image_size_cap=1000, body_timeout=1)
    with serving(request.param, ("image",), api=api,
                 image=config.ImageSettings(store_dir=str(store),
                                            user_storage_quota=1500)) as live:
        yield live


def test_size_cap_and_storage_quota(capped: LiveServer) -> None:
    with api_client(capped.url, token="alice:proj-q", roles=MEMBER) as alice:
        first, second, third = create(alice, "1"), create(alice, "2"), create(alice, "3")
        over = alice.put(f"/v2/images/{first['id']}/file", content=chunked(b"x" * 1001, 100),
                         headers=OCTETS)
        assert over.status_code == 413, over.text
        assert show(alice, first["id"])["status"] == "queued"
        assert alice.put(f"/v2/images/{first['id']}/file", content=b"x" * 1000,
                         headers=OCTETS).status_code == 204
        quota = alice.put(f"/v2/images/{second['id']}/file", content=b"y" * 600,
                          headers=OCTETS)
        assert quota.status_code == 413, quota.text
        assert "500 bytes remaining" in quota.json()["message"]
        assert show(alice, second["id"])["status"] == "queued"
        assert alice.put(f"/v2/images/{second['id']}/file", content=b"y" * 500,
                         headers=OCTETS).status_code == 204
        full = alice.put(f"/v2/images/{third['id']}/file", content=b"z", headers=OCTETS)
        assert full.status_code == 413, full.text
        assert show(alice, third["id"])["size"] is None
    store = Path(_settings_of(capped).image.store_dir)
    assert sorted(p.name for p in store.iterdir()) == sorted([first["id"], second["id"]])


def test_the_owner_deactivates_and_may_not_download(live_stowage: LiveServer,
                                                    image: httpx.Client) -> None:
    """Glance's defaults let the owner's members deactivate (Tempest does so); only an
    admin downloads a deactivated image."""
    with api_client(f"{live_stowage.url}/image", token="alice:proj-a", roles=MEMBER) as alice:
        made = create(alice, visibility="private")
        path = f"/v2/images/{made['id']}"
        assert alice.put(f"{path}/file", content=b"mine", headers=OCTETS).status_code == 204
        assert alice.post(f"{path}/actions/deactivate").status_code == 204
        assert alice.get(f"{path}/file").status_code == 403
        assert image.get(f"{path}/file").content == b"mine"
        assert alice.post(f"{path}/actions/reactivate").status_code == 204
        assert alice.get(f"{path}/file").content == b"mine"
        other = alice.patch(path, json=[{"replace": "/owner", "value": "proj-b"}],
                            headers={"content-type":
                                     "application/openstack-images-v2.0-json-patch"})
        assert other.status_code == 403, other.text
    moved = image.patch(path, json=[{"replace": "/owner", "value": "proj-b"}],
                        headers={"content-type": "application/openstack-images-v2.0-json-patch"})
    assert moved.status_code == 200 and moved.json()["owner"] == "proj-b"


def test_a_stalled_upload_is_408_and_leaves_it_queued(capped: LiveServer) -> None:
    with api_client(capped.url) as admin:
        made = create(admin)
        where = urlparse(capped.url)
        with socket.create_connection((where.hostname, where.port), timeout=10) as sock:
            sock.sendall((f"PUT /v2/images/{made['id']}/file HTTP/1.1\r\n"
                          f"Host: {where.netloc}\r\nX-Auth-Token: admin\r\n"
                          "Content-Type: application/octet-stream\r\n"
                          "Content-Length: 500\r\n\r\n").encode() + b"x" * 100)
            answer = sock.recv(65536).decode("latin-1")
        assert answer.startswith("HTTP/1.1 408"), answer
        assert "connection: close" in answer.lower()
        assert show(admin, made["id"])["status"] == "queued"
    store = Path(_settings_of(capped).image.store_dir)
    assert not list(store.glob(f"{made['id']}*"))


def test_an_image_deleted_during_its_upload_is_410_and_leaves_no_file(
        image: httpx.Client, live_stowage: LiveServer) -> None:
    made = create(image)
    where = urlparse(live_stowage.url)
    with socket.create_connection((where.hostname, where.port), timeout=10) as sock:
        sock.sendall((f"PUT /image/v2/images/{made['id']}/file HTTP/1.1\r\n"
                      f"Host: {where.netloc}\r\nX-Auth-Token: admin\r\n"
                      "Content-Type: application/octet-stream\r\n"
                      "Content-Length: 200\r\n\r\n").encode() + b"x" * 100)
        deadline = time.monotonic() + 10
        while show(image, made["id"])["status"] != "saving":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert image.delete(f"/v2/images/{made['id']}").status_code == 204
        sock.sendall(b"y" * 100)
        answer = sock.recv(65536).decode("latin-1")
    assert answer.startswith("HTTP/1.1 410"), answer
    store = Path(live_stowage_store(live_stowage))
    assert not list(store.glob(f"{made['id']}*"))
