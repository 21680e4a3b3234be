"""createImage: the server's disk becomes an active image with data; the server stays.

    host1: vm (small), booted by a member of p1 from a public image with a property
"""

from __future__ import annotations

import hashlib
import time
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from stowage.compute.agent.sim_console import DISK_SIZE, disk_bytes
from stowage.compute.states import PAUSED_POWER, RUNNING, SHUTDOWN
from stowage.image import data, images
from stowage.image import tables as image_tables
from tests.functional.conftest import MEMBER, READER, Cloud, RecordingConductor
from tests.functional.one_server import OneServer
from tests.functional.servers import action, assert_invariants, boot, server
from tests.functional.shelving import event_names, images_named, post_action, sts

Vm = OneServer


@pytest.fixture
def vm(cloud: Cloud) -> Vm:
    return Vm(cloud)


def _image_client(cloud: Cloud) -> httpx.Client:
    return httpx.Client(base_url=f"{cloud.live.url}/image", timeout=30,
                        headers={"x-auth-token": "admin"})


def _stored(cloud: Cloud, image_id: str) -> tuple[str | None, str | None, bytes | None]:
    """checksum, os_hash_value and the bytes the image store holds for the image."""
    settings = cloud.plane.image_settings
    assert settings is not None
    image, handle = data.open_data(cloud.live.db, settings, image_id)
    with cloud.live.db.read() as conn:
        row = conn.execute(sa.select(image_tables.images.c.checksum,
                                     image_tables.images.c.os_hash_value)
                           .where(image_tables.images.c.id == image.id)).one()
    content = None
    if handle is not None:
        with handle:
            content = handle.read()
    return row.checksum, row.os_hash_value, content


def _snapshot(cloud: Cloud, vm: Vm, name: str, **extra: Any) -> str:
    resp = action(cloud, vm.id, {"createImage": {"name": name, **extra}}, client=vm.owner)
    return str(resp.json()["image_id"])


def test_snapshot_is_an_active_image_with_the_guests_disk(cloud: Cloud, vm: Vm) -> None:
    image_id = _snapshot(cloud, vm, "snap", metadata={"purpose": "backup"})
    vm.check(cloud, "ACTIVE", "active", RUNNING)  # nothing else changed
    with _image_client(cloud) as glance:  # `openstack image save`
        image = glance.get(f"/v2/images/{image_id}").json()
        saved = glance.get(f"/v2/images/{image_id}/file")
    expected = disk_bytes(vm.id)
    assert image["status"] == "active" and image["size"] == DISK_SIZE
    assert saved.status_code == 200 and saved.content == expected
    assert image["checksum"] == hashlib.md5(expected).hexdigest()  # noqa: S324
    assert (image["os_hash_algo"], image["os_hash_value"]) == (
        "sha512", hashlib.sha512(expected).hexdigest())
    assert _stored(cloud, image_id) == (hashlib.md5(expected).hexdigest(),  # noqa: S324
                                        hashlib.sha512(expected).hexdigest(), expected)
    assert (image["owner"], image["visibility"]) == ("p1", "private")
    assert (image["image_type"], image["instance_uuid"], image["base_image_ref"]) == (
        "snapshot", vm.id, vm.image)
    assert image["purpose"] == "backup" and image["min_disk"] == 5
    assert event_names(cloud, vm.id, "createImage") == [("compute_snapshot_instance",
                                                         "Success")]
    # Boot from the snapshot works, and its owner sees it through Compute's image proxy.
    again = boot(cloud, "from-snap", vm.flavor, image_id, client=vm.owner)
    assert sts(server(cloud, again))[:2] == ("ACTIVE", "active")
    proxy = cloud.client("demo:p1", version="2.35", roles=MEMBER)  # the proxy ends at 2.35
    assert proxy.get(f"/images/{image_id}").json()["image"]["status"] == "ACTIVE"
    assert_invariants(cloud)


def test_microversions_and_states(cloud: Cloud, vm: Vm) -> None:
    old = cloud.client("demo:p1", version="2.44", roles=MEMBER)
    resp = old.post(f"/servers/{vm.id}/action", json={"createImage": {"name": "old"}})
    assert resp.status_code == 202 and resp.content == b""
    assert cloud.plane.drain(60)
    assert resp.headers["location"].rsplit("/", 1)[1] == images_named(cloud, "old")[0]["id"]
    for setup, power in (({"pause": None}, PAUSED_POWER), ({"unpause": None}, RUNNING),
                         ({"os-stop": None}, SHUTDOWN)):
        action(cloud, vm.id, setup)
        image_id = _snapshot(cloud, vm, f"after-{next(iter(setup))}")
        assert sts(server(cloud, vm.id))[2:4] == (None, power)
        with _image_client(cloud) as glance:
            assert glance.get(f"/v2/images/{image_id}").json()["status"] == "active"
    action(cloud, vm.id, {"rescue": None}, status=200)
    resp = post_action(vm.owner, vm.id, {"createImage": {"name": "x"}})
    assert resp.status_code == 409
    assert resp.json()["conflictingRequest"]["message"] == (
        f"Cannot 'createImage' instance {vm.id} while it is in vm_state rescued")


def test_bad_bodies_quota_and_policy(cloud: Cloud, vm: Vm) -> None:
    bads: list[dict[str, Any]] = [
        {}, {"name": ""}, {"name": " lead"}, {"name": "x" * 256}, {"name": "x", "y": 1},
        {"name": "x", "metadata": {"k" * 256: "v"}}, {"name": "x", "metadata": {"k": "v" * 256}},
        {"name": "x", "metadata": {"k": 1}}]
    for bad in bads:
        resp = post_action(vm.owner, vm.id, {"createImage": bad})
        assert resp.status_code == 400, (bad, resp.text)
    too_many = {f"k{i}": "v" for i in range(129)}  # metadata_items defaults to 128
    old = cloud.client("demo:p1", version="2.38", roles=MEMBER)  # Nova checks it to 2.38
    for body in ({"createImage": {"name": "x", "metadata": too_many}},
                 {"createBackup": {"name": "x", "backup_type": "daily", "rotation": 1,
                                   "metadata": too_many}}):
        resp = post_action(old, vm.id, body)
        assert resp.status_code == 403, resp.text
        assert resp.json()["forbidden"]["message"] == "Image metadata limit exceeded"
    for bad in ({"name": "x", "backup_type": "daily"}, {"name": "x", "rotation": 1},
                {"name": "x", "backup_type": "daily", "rotation": -1},
                {"name": "x", "backup_type": "daily", "rotation": "one"}):
        resp = post_action(vm.owner, vm.id, {"createBackup": bad})
        assert resp.status_code == 400, (bad, resp.text)
    reader = cloud.client("demo:p1", roles=READER)
    other = cloud.client("x:p2", roles=MEMBER)
    for body in ({"createImage": {"name": "x"}},
                 {"createBackup": {"name": "x", "backup_type": "daily", "rotation": 1}}):
        assert post_action(reader, vm.id, body).status_code == 403
        assert post_action(other, vm.id, body).status_code == 404
    assert images_named(cloud, "x") == []
    assert sts(server(cloud, vm.id))[:3] == ("ACTIVE", "active", None)


def test_a_failed_snapshot_leaves_no_image(cloud: Cloud, vm: Vm) -> None:
    cloud.plane.agent("host1").driver.fail("snapshot")
    action(cloud, vm.id, {"createImage": {"name": "doomed"}}, client=vm.owner)
    assert images_named(cloud, "doomed") == []
    vm.check(cloud, "ACTIVE", "active", RUNNING)  # task state cleared, a fault recorded
    assert event_names(cloud, vm.id, "createImage") == [("compute_snapshot_instance",
                                                         "Error")]
    cloud.plane.stop_host("host1")  # the compute is unreachable: the same outcome
    resp = post_action(vm.owner, vm.id, {"createImage": {"name": "unreachable"}})
    assert resp.status_code == 202, resp.text
    assert cloud.plane.drain(120)
    assert images_named(cloud, "unreachable") == []
    assert sts(server(cloud, vm.id))[2] is None


def test_shelved_image_has_data_and_unshelve_boots_from_it(cloud: Cloud, vm: Vm) -> None:
    cloud.configure(shelved_offload_time=0)
    action(cloud, vm.id, {"shelve": None}, client=vm.owner)
    view = server(cloud, vm.id)
    assert view["status"] == "SHELVED_OFFLOADED"
    (shelved,) = images_named(cloud, "vm-shelved")
    assert shelved["status"] == "active" and shelved["size"] == DISK_SIZE
    assert _stored(cloud, shelved["id"])[2] == disk_bytes(vm.id)
    action(cloud, vm.id, {"unshelve": None}, client=vm.owner)
    assert sts(server(cloud, vm.id))[:3] == ("ACTIVE", "active", None)
    assert images_named(cloud, "vm-shelved") == []  # Nova deletes it once unshelved
    settings = cloud.plane.image_settings
    assert settings is not None and not data.data_path(settings, shelved["id"]).exists()
    assert_invariants(cloud)


def test_a_locked_server_can_be_snapshotted(cloud: Cloud, vm: Vm) -> None:
    action(cloud, vm.id, {"lock": None})  # by an admin: Nova's snapshot checks no lock
    image_id = _snapshot(cloud, vm, "locked")
    with _image_client(cloud) as glance:
        assert glance.get(f"/v2/images/{image_id}").json()["status"] == "active"


def _backup(cloud: Cloud, vm: Vm, name: str, kind: str, rotation: Any) -> str:
    resp = action(cloud, vm.id, {"createBackup": {"name": name, "backup_type": kind,
                                                  "rotation": rotation}}, client=vm.owner)
    return str(resp.json()["image_id"])


def _backups(cloud: Cloud, vm: Vm, kind: str) -> list[str]:
    """The server's backup images of `kind`, oldest first (by the Image records)."""
    wanted = {"image_type": "backup", "backup_type": kind, "instance_uuid": vm.id}
    with cloud.live.db.read() as conn:
        found = images.list_images(conn, data.SERVICE, images.ListQuery(properties=wanted))
    return [i.name or "" for i in reversed(found)]


def test_backups_rotate_per_type(cloud: Cloud, vm: Vm) -> None:
    first = _backup(cloud, vm, "b1", "daily", 2)
    with _image_client(cloud) as glance:
        image = glance.get(f"/v2/images/{first}").json()
    assert (image["status"], image["image_type"], image["backup_type"]) == (
        "active", "backup", "daily")
    assert _stored(cloud, first)[2] == disk_bytes(vm.id)
    assert event_names(cloud, vm.id, "createBackup") == [("compute_backup_instance",
                                                          "Success")]
    time.sleep(1.1)  # MySQL keeps created_at to the second: b1 < b2 < b3 for sure
    _backup(cloud, vm, "b2", "daily", "2")
    _backup(cloud, vm, "w1", "weekly", 2)
    assert _backups(cloud, vm, "daily") == ["b1", "b2"]
    time.sleep(1.1)
    _backup(cloud, vm, "b3", "daily", 2)  # b1 rotated out
    assert _backups(cloud, vm, "daily") == ["b2", "b3"]
    assert _backups(cloud, vm, "weekly") == ["w1"]
    old = cloud.client("demo:p1", version="2.44", roles=MEMBER)
    resp = old.post(f"/servers/{vm.id}/action", json={"createBackup": {
        "name": "b0", "backup_type": "daily", "rotation": 0}})
    assert resp.status_code == 202 and "location" not in resp.headers
    assert cloud.plane.drain(60)
    assert _backups(cloud, vm, "daily") == []  # rotation 0: every backup goes, b0 too
    vm.check(cloud, "ACTIVE", "active", RUNNING)
    assert_invariants(cloud)


def test_a_failed_backup_leaves_no_image_and_rotates_nothing_out(cloud: Cloud, vm: Vm) -> None:
    _backup(cloud, vm, "b1", "daily", 1)
    cloud.plane.agent("host1").driver.fail("snapshot")
    _backup(cloud, vm, "b2", "daily", 1)
    assert images_named(cloud, "b2") == []
    assert _backups(cloud, vm, "daily") == ["b1"]  # the rotation never ran
    vm.check(cloud, "ACTIVE", "active", RUNNING)  # task state cleared, the same allocation
    assert event_names(cloud, vm.id, "createBackup") == [("compute_backup_instance", "Error")]
    assert_invariants(cloud)


def test_a_second_snapshot_while_one_is_in_progress_is_409(cloud: Cloud, vm: Vm,
                                                           recorder: RecordingConductor) -> None:
    """Tempest's test_create_second_image_when_first_image_is_being_saved, with the first
    snapshot held at the conductor (the simulated one is done before a second request)."""
    resp = post_action(vm.owner, vm.id, {"createImage": {"name": "first"}})
    assert resp.status_code == 202, resp.text
    image_id = resp.json()["image_id"]
    assert cloud.plane.drain(60)  # the cast delivered (to the recorder, which keeps it)
    assert [(m, kw["image_id"]) for m, kw in recorder.casts] == [("snapshot_server", image_id)]
    assert images_named(cloud, "first")[0]["status"] == "queued"
    assert server(cloud, vm.id)["OS-EXT-STS:task_state"] == "image_snapshot"
    for body in ({"createImage": {"name": "second"}},
                 {"createBackup": {"name": "b", "backup_type": "daily", "rotation": 1}}):
        resp = post_action(vm.owner, vm.id, body)
        assert resp.status_code == 409, resp.text
        assert resp.json()["conflictingRequest"]["message"] == (
            f"Cannot '{next(iter(body))}' instance {vm.id} while it is in task_state "
            "image_snapshot")
    assert images_named(cloud, "second") == []
