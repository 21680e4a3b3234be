"""What POST /servers (and PUT, resize) do with key_name, security_groups, networks,
accessIPv4/v6, OS-DCF:diskConfig and tags: refused as Nova refuses them, else stored.

The conductor only records its casts here (`recorder`): what is under test is
what the API checks and writes, not the build.
"""

from __future__ import annotations

import uuid as uuidlib
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

from stowage.compute.api import server_boot_extras as extras
from stowage.web.errors import HTTPError
from tests.functional.conftest import Cloud, RecordingConductor, api_client
from tests.functional.serverdata import FLAVOR, at, instance, member, stored_server
from tests.functional.servers import image

_PUBLIC = ("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl "
           "demo@host")


@pytest.fixture
def booting(cloud: Cloud, recorder: RecordingConductor) -> dict[str, str]:
    """A flavor and an image the member of p1 may boot."""
    stored_server(cloud)  # creates the flavor
    return {"flavorRef": FLAVOR, "imageRef": image(cloud, visibility="public")}


def _create(client: httpx.Client, base: dict[str, str], version: str | None = None,
            **server: Any) -> httpx.Response:
    body = {"server": {"name": "vm", "networks": "none", **base, **server}}
    return client.post("/servers", json=body, headers=at(version) if version else {})


def _message(resp: httpx.Response) -> str:
    return str(resp.json()["badRequest"]["message"])


def test_key_name_is_the_callers_own_key_pair(cloud: Cloud, booting: dict[str, str]) -> None:
    with member(cloud) as alice, member(cloud, "bob:p1") as bob:
        assert alice.post("/os-keypairs", json={"keypair": {
            "name": "mine", "public_key": _PUBLIC}}).status_code == 201
        refused = _create(bob, booting, key_name="mine")
        assert (refused.status_code, _message(refused)) == (400, "Invalid key_name provided.")
        made = _create(alice, booting, key_name="mine")
        assert made.status_code == 202, made.text
        server = made.json()["server"]["id"]
        assert alice.delete("/os-keypairs/mine").status_code == 204
        assert alice.get(f"/servers/{server}").json()["server"]["key_name"] == "mine"
    kept = instance(cloud, server)
    assert (kept.key_name, kept.key_data) == ("mine", _PUBLIC)


def test_security_groups_and_networks_that_do_not_exist(cloud: Cloud,
                                                         booting: dict[str, str]) -> None:
    with member(cloud) as alice:
        refused = _create(alice, booting, security_groups=[{"name": "web"}])
        assert (refused.status_code, _message(refused)) == (
            400, "Unable to find security_group with name or id 'web'")
        assert _create(alice, booting, security_groups=[{"name": "default"}]).status_code == 202
        malformed = _create(alice, booting, "2.36", networks=[{"uuid": "not-a-uuid"}])
        assert (malformed.status_code, _message(malformed)) == (
            400, "Bad networks format: network uuid is not in proper format (not-a-uuid)")
        assert _create(alice, booting, networks=[{"uuid": "not-a-uuid"}]).status_code == 400
        unknown = str(uuidlib.uuid4())
        missing = _create(alice, booting, networks=[{"uuid": unknown}])
        assert (missing.status_code, _message(missing)) == (
            400, f"Network {unknown} could not be found.")
        servers = alice.get("/servers").json()["servers"]
    assert len(servers) == 2  # the fixture's stored server, and the "default" group's


def test_access_ips_on_create_and_update(cloud: Cloud, booting: dict[str, str]) -> None:
    with member(cloud) as alice:
        # Stored canonical, as Nova's IPAddress column (tempest compares with netaddr's form).
        made = _create(alice, booting, accessIPv4="192.0.2.7",
                       accessIPv6="0000:0000:0000:0000:0000:babe:220.12.22.2")
        server = made.json()["server"]["id"]
        shown = alice.get(f"/servers/{server}").json()["server"]
        assert (shown["accessIPv4"], shown["accessIPv6"]) == ("192.0.2.7", "::babe:dc0c:1602")
        bad = _create(alice, booting, accessIPv4="1.1.1.1.1.1")
        assert (bad.status_code, _message(bad)) == (
            400, "Invalid input for field/attribute accessIPv4. Value: 1.1.1.1.1.1. "
                 "'1.1.1.1.1.1' is not a 'ipv4'")
        bad = alice.put(f"/servers/{server}", json={"server": {"accessIPv6": "2.2.2.2"}})
        assert (bad.status_code, _message(bad)) == (
            400, "Invalid input for field/attribute accessIPv6. Value: 2.2.2.2. "
                 "'2.2.2.2' is not a 'ipv6'")
        updated = alice.put(f"/servers/{server}", json={"server": {"accessIPv4": "198.51.100.1"}})
        assert updated.json()["server"]["accessIPv4"] == "198.51.100.1"
    stored = instance(cloud, server)
    assert (stored.access_ip_v4, stored.access_ip_v6) == ("198.51.100.1", "::babe:dc0c:1602")


def test_user_data_is_kept_and_shown_to_admins(cloud: Cloud, booting: dict[str, str]) -> None:
    with member(cloud) as alice:
        server = _create(alice, booting, user_data="aGVsbG8=").json()["server"]["id"]
        assert "OS-EXT-SRV-ATTR:user_data" not in alice.get(f"/servers/{server}").json()["server"]
    assert instance(cloud, server).user_data == "aGVsbG8="
    shown = cloud.compute.get(f"/servers/{server}").json()["server"]
    assert shown["OS-EXT-SRV-ATTR:user_data"] == "aGVsbG8="


def test_disk_config_on_create_update_and_resize(cloud: Cloud, booting: dict[str, str]) -> None:
    with member(cloud) as alice:
        made = _create(alice, booting, **{"OS-DCF:diskConfig": "AUTO"})
        assert made.json()["server"]["OS-DCF:diskConfig"] == "AUTO"
        server = made.json()["server"]["id"]
        assert alice.get(f"/servers/{server}").json()["server"]["OS-DCF:diskConfig"] == "AUTO"
        assert _create(alice, booting).json()["server"]["OS-DCF:diskConfig"] == "MANUAL"
        assert _create(alice, booting, **{"OS-DCF:diskConfig": "auto"}).status_code == 400
        updated = alice.put(f"/servers/{server}", json={"server": {"OS-DCF:diskConfig": "MANUAL"}})
        assert updated.json()["server"]["OS-DCF:diskConfig"] == "MANUAL"
    assert instance(cloud, server).auto_disk_config is False
    with api_client(f"{cloud.live.url}/image") as glance:
        disabled = glance.post("/v2/images", json={
            "name": "fixed", "disk_format": "qcow2", "container_format": "bare",
            "visibility": "public", "auto_disk_config": "disabled"}).json()["id"]
        glance.put(f"/v2/images/{disabled}/file", content=b"x",
                   headers={"content-type": "application/octet-stream"})
    with member(cloud) as alice:
        refused = _create(alice, {**booting, "imageRef": disabled},
                          **{"OS-DCF:diskConfig": "AUTO"})
        assert (refused.status_code, _message(refused)) == (
            400, f"Requested image {disabled} has automatic disk resize disabled.")
    # A resize sets it anew, as Nova's: AUTO when asked, else MANUAL.
    cloud.add_host("host1")
    on_host, was_auto = stored_server(cloud), stored_server(cloud, auto_disk_config=True)
    assert cloud.compute.post("/flavors", json={"flavor": {
        "name": "sd.big", "id": "sd2", "vcpus": 2, "ram": 1024, "disk": 2}}).status_code == 200
    with member(cloud) as alice:
        for server_id, body in ((on_host, {"OS-DCF:diskConfig": "AUTO"}), (was_auto, {})):
            resized = alice.post(f"/servers/{server_id}/action",
                                 json={"resize": {"flavorRef": "sd2", **body}})
            assert resized.status_code == 202, resized.text
    assert instance(cloud, on_host).auto_disk_config is True
    assert instance(cloud, was_auto).auto_disk_config is False


def test_tags_on_create_from_2_52(cloud: Cloud, booting: dict[str, str]) -> None:
    with member(cloud) as alice:
        assert _create(alice, booting, "2.51", tags=["a"]).status_code == 400
        assert _create(alice, booting, tags=["a,b"]).status_code == 400
        made = _create(alice, booting, "2.52", tags=["b", "a"])
        assert made.status_code == 202, made.text
        server = made.json()["server"]["id"]
        assert alice.get(f"/servers/{server}/tags").json() == {"tags": ["a", "b"]}


def test_rebuild_values_check_as_create_does(cloud: Cloud) -> None:
    """The helper the rebuild handler calls: access IPs, disk config, key pair."""
    caller: Any = SimpleNamespace(context=SimpleNamespace(user_id="demo"),
                                  app=SimpleNamespace(db=cloud.live.db))
    with member(cloud) as alice:
        assert alice.post("/os-keypairs", json={"keypair": {
            "name": "mine", "public_key": _PUBLIC}}).status_code == 201
    with cloud.live.db.read() as conn:
        values = extras.rebuild_values(conn, caller, {
            "accessIPv4": "192.0.2.1", "OS-DCF:diskConfig": "AUTO", "key_name": "mine"},
            "img", {})
        assert values == {"access_ip_v4": "192.0.2.1", "auto_disk_config": True,
                          "key_name": "mine", "key_data": _PUBLIC}
        assert extras.rebuild_values(conn, caller, {"key_name": None}, "img", {}) == \
            {"key_name": None, "key_data": None}
        for body in ({"key_name": "other"}, {"accessIPv6": "2.2.2.2"},
                     {"OS-DCF:diskConfig": "AUTO"}):
            with pytest.raises(HTTPError) as refused:
                extras.rebuild_values(conn, caller, body, "img",
                                      {"auto_disk_config": "disabled"})
            assert refused.value.status == 400
