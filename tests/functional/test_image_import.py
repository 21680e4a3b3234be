"""Interoperable image import over HTTP: discovery, stage, `glance-direct` import and
its task, the refusals (SQLite, PostgreSQL, MySQL); and the tasks API's admin rule."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from stowage import config
from stowage.image import data
from tests.conftest import BACKENDS
from tests.functional.conftest import MEMBER, LiveServer, api_client, serving
from tests.functional.image_calls import create, show

OCTETS = {"content-type": "application/octet-stream"}
PAYLOAD = bytes(range(256)) * 20




def do_import(client: httpx.Client, image_id: str, name: str = "glance-direct",
              **extra: Any) -> httpx.Response:
    return client.post(f"/v2/images/{image_id}/import",
                       json={"method": {"name": name}, **extra})


@pytest.fixture
def alice(image: httpx.Client, live_stowage: LiveServer) -> Iterator[httpx.Client]:
    with api_client(f"{live_stowage.url}/image", token="alice:proj-a", roles=MEMBER) as c:
        yield c


def test_discovery_and_the_create_header(image: httpx.Client) -> None:
    info = image.get("/v2/info/import").json()
    assert info["import-methods"]["value"] == ["glance-direct"]
    made = image.post("/v2/images", json={"name": "x"})
    assert made.headers["openstack-image-import-methods"] == "glance-direct"
    assert image.get("/v2/info/stores").status_code == 404
    versions = image.get("/v2/").json()["versions"]
    assert versions[0] == {**versions[0], "id": "v2.12", "status": "CURRENT"}


def test_stage_then_import_makes_it_active_with_a_task(alice: httpx.Client,
                                                      live_stowage: LiveServer) -> None:
    made = create(alice, visibility="private")
    staged = alice.put(f"/v2/images/{made['id']}/stage", content=PAYLOAD, headers=OCTETS)
    assert staged.status_code == 204, staged.text
    assert show(alice, made["id"])["status"] == "uploading"
    assert live_stowage.settings is not None
    assert data.staging_path(live_stowage.settings, made["id"]).read_bytes() == PAYLOAD
    done = do_import(alice, made["id"], all_stores=True)
    assert done.status_code == 202, done.text
    shown = show(alice, made["id"])
    assert (shown["status"], shown["size"]) == ("active", len(PAYLOAD))
    assert shown["checksum"] == hashlib.md5(PAYLOAD, usedforsecurity=False).hexdigest()
    assert alice.get(f"/v2/images/{made['id']}/file").content == PAYLOAD
    assert not data.staging_path(live_stowage.settings, made["id"]).exists()
    (task,) = alice.get(f"/v2/images/{made['id']}/tasks").json()["tasks"]
    assert (task["status"], task["type"], task["image_id"]) == \
        ("success", "api_image_import", made["id"])
    assert task["request_id"] == done.headers["x-openstack-request-id"]
    assert task["input"]["import_req"]["method"]["name"] == "glance-direct"
    assert task["result"] == {"image_id": made["id"]}
    again = do_import(alice, made["id"])
    assert again.status_code == 409
    assert again.json()["message"] == "Image with status active cannot be target for import"


@pytest.mark.parametrize(("body", "message"), [
    ({"method": {"name": "web-download", "uri": "http://example.com/x.img"}},
     "Import method 'web-download' is not available: the Image service has no outside "
     "network to download from. Stage the data and use 'glance-direct'."),
    ({"method": {"name": "teleport"}}, "Unknown import method name 'teleport'."),
    ({"method": {}}, "Import request requires a 'name' field."),
    ({}, "Import request requires a 'method' field."),
    ({"method": {"name": "glance-direct"}, "all_stores_must_succeed": False},
     "All_stores_must_succeed can only be set with enabled_backends"),
])
def test_bad_import_requests_change_nothing(alice: httpx.Client, body: dict[str, Any],
                                            message: str) -> None:
    made = create(alice)
    refused = alice.post(f"/v2/images/{made['id']}/import", json=body)
    assert refused.status_code == 400, refused.text
    assert refused.json()["message"] == message
    assert show(alice, made["id"])["status"] == "queued"
    assert alice.get(f"/v2/images/{made['id']}/tasks").json()["tasks"] == []


def test_import_needs_staged_data_and_formats(alice: httpx.Client) -> None:
    made = create(alice)
    refused = do_import(alice, made["id"])
    assert refused.status_code == 409
    assert refused.json()["message"] == \
        "Image needs to be staged before 'glance-direct' method can be used"
    bare = alice.post("/v2/images", json={"name": "no-formats"}).json()
    assert alice.put(f"/v2/images/{bare['id']}/stage", content=b"x",
                     headers=OCTETS).status_code == 204
    refused = do_import(alice, bare["id"])
    assert refused.status_code == 409
    assert refused.json()["message"] == "'container_format' needs to be set before import"
    assert show(alice, bare["id"])["status"] == "uploading"


def test_stage_refusals(alice: httpx.Client, live_stowage: LiveServer) -> None:
    made = create(alice)
    wrong = alice.put(f"/v2/images/{made['id']}/stage", content=b"x",
                      headers={"content-type": "text/plain"})
    assert wrong.status_code == 415
    assert alice.put(f"/v2/images/{made['id']}/stage", content=b"x",
                     headers=OCTETS).status_code == 204
    twice = alice.put(f"/v2/images/{made['id']}/stage", content=b"y", headers=OCTETS)
    assert twice.status_code == 409
    assert twice.json()["message"] == \
        "Image status transition from uploading to uploading is not allowed"
    with api_client(f"{live_stowage.url}/image", token="bob:proj-b", roles=MEMBER) as bob:
        other = create(alice, visibility="community")
        refused = bob.put(f"/v2/images/{other['id']}/stage", content=b"x", headers=OCTETS)
        assert refused.status_code == 403
        assert show(bob, other["id"])["status"] == "queued"
    # Deleting the image forgets its staged data.
    assert alice.delete(f"/v2/images/{made['id']}").status_code == 204
    assert live_stowage.settings is not None
    assert not data.staging_path(live_stowage.settings, made["id"]).exists()



def test_a_delete_through_novas_proxy_forgets_the_staged_data(
        alice: httpx.Client, live_stowage: LiveServer) -> None:
    """Every deleter drops the image's files through data.remove, Nova's too."""
    made = create(alice, visibility="private")
    assert alice.put(f"/v2/images/{made['id']}/stage", content=b"x",
                     headers=OCTETS).status_code == 204
    assert live_stowage.settings is not None
    staged = data.staging_path(live_stowage.settings, made["id"])
    assert staged.exists()
    with api_client(f"{live_stowage.url}/compute/v2.1", token="alice:proj-a", roles=MEMBER,
                    headers={"openstack-api-version": "compute 2.35"}) as nova:
        assert nova.delete(f"/images/{made['id']}").status_code == 204
    assert alice.get(f"/v2/images/{made['id']}").status_code == 404
    assert not staged.exists()

def test_tasks_api_is_an_admins(image: httpx.Client, alice: httpx.Client) -> None:
    made = create(alice)
    alice.put(f"/v2/images/{made['id']}/stage", content=PAYLOAD, headers=OCTETS)
    assert do_import(alice, made["id"]).status_code == 202
    denied = alice.get("/v2/tasks")
    assert denied.status_code == 403
    assert denied.json()["message"] == \
        "You are not authorized to complete tasks_api_access action."
    (stub,) = image.get("/v2/tasks").json()["tasks"]
    assert (stub["type"], stub["status"], stub["owner"]) == \
        ("api_image_import", "success", "proj-a")
    full = image.get(f"/v2/tasks/{stub['id']}").json()
    assert full["result"] == {"image_id": made["id"]}
    assert image.get("/v2/tasks", params={"status": "failure"}).json()["tasks"] == []
    assert image.get("/v2/tasks/00000000-0000-0000-0000-000000000000").status_code == 404
    url_task = {"type": "import", "input": {"import_from": "http://example.com/x.qcow2",
                                            "import_from_format": "qcow2",
                                            "image_properties": {"name": "x"}}}
    refused = image.post("/v2/tasks", json=url_task)
    assert refused.status_code == 400
    assert "no outside network" in refused.json()["message"]
    assert image.post("/v2/tasks", json={"type": "import"}).status_code == 400
    assert alice.post("/v2/tasks", json=url_task).status_code == 403
    assert len(image.get("/v2/tasks").json()["tasks"]) == 1


@pytest.fixture(scope="module", params=BACKENDS)
def quota(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[LiveServer]:
    """The Image service alone, 100 bytes of image data per project (staging is not
    counted, as Glance's user_storage_quota counts the store)."""
    store = tmp_path_factory.mktemp("store")
    with serving(request.param, ("image",),
                 image=config.ImageSettings(store_dir=str(store), user_storage_quota=100)
                 ) as live:
        yield live


def test_a_failed_import_keeps_the_staged_data(quota: LiveServer) -> None:
    with api_client(quota.url, token="alice:proj-q", roles=MEMBER) as alice:
        made = create(alice)
        assert alice.put(f"/v2/images/{made['id']}/stage", content=b"x" * 101,
                         headers=OCTETS).status_code == 204
        assert do_import(alice, made["id"]).status_code == 202
        assert show(alice, made["id"])["status"] == "uploading"
        (task,) = alice.get(f"/v2/images/{made['id']}/tasks").json()["tasks"]
        assert task["status"] == "failure"
        assert "exceeds the quota" in task["message"]
        assert quota.settings is not None
        assert data.staging_path(quota.settings, made["id"]).stat().st_size == 101
