"""The server API's microversions after 2.80: more list filters for owners (2.83), hostname (2.90).

The records are written straight into the database, as in test_servers_api,
so that what is under test is the API alone; boots go to a recording
conductor. One host::

    host1 (zone "nova")
"""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from stowage.compute import states
from tests.functional.conftest import MEMBER, Cloud, RecordingConductor
from tests.functional.servers import image
from tests.functional.test_servers_api import (
    at,
    boot_body,
    fault_of,
    make_instance,
    servers_of,
)


@pytest.fixture
def small(cloud: Cloud) -> str:
    resp = cloud.compute.post("/flavors", json={"flavor": {
        "name": "small", "id": "1", "vcpus": 1, "ram": 512, "disk": 5}})
    assert resp.status_code == 200, resp.text
    return "1"


# --- 2.83: owners may filter on more of their servers' attributes ------------------


def test_owner_filters_from_2_83(cloud: Cloud, small: str) -> None:
    launched = datetime.datetime(2026, 1, 2, 3, 4, 5)
    running = make_instance(cloud, project_id="p1", user_id="demo", key_name="k1",
                            availability_zone="az1", launched_at=launched, progress=0)
    stopped = make_instance(cloud, project_id="p1", user_id="other", config_drive="True",
                            vm_state=states.STOPPED, power_state=states.SHUTDOWN,
                            progress=40)
    user = cloud.client("demo:p1", "2.83", roles=MEMBER)
    both = {running.uuid, stopped.uuid}
    assert servers_of(user, user_id="other") == [stopped.uuid]
    assert servers_of(user, vm_state="stopped") == [stopped.uuid]
    assert servers_of(user, power_state=f"^{states.SHUTDOWN}$") == [stopped.uuid]
    assert servers_of(user, key_name="^k1$") == [running.uuid]
    assert servers_of(user, availability_zone="az1") == [running.uuid]
    assert servers_of(user, config_drive="True") == [stopped.uuid]
    assert servers_of(user, progress="40") == [stopped.uuid]
    assert servers_of(user, launched_at="^2026-01-02") == [running.uuid]
    assert servers_of(user, task_state="spawning") == []
    # Before 2.83 an owner's filters on these are dropped, as Nova drops them.
    old = cloud.client("demo:p1", "2.82", roles=MEMBER)
    assert set(servers_of(old, user_id="other", power_state="4", key_name="k1")) == both
    # hostname waits for 2.90; host stays an admin's filter.
    assert set(servers_of(user, hostname="^nomatch$")) == both
    assert set(servers_of(user, host="nowhere")) == both
    # The admin always had them.
    assert servers_of(cloud.compute, all_tenants=1, power_state="4") == [stopped.uuid]


# --- 2.90: a hostname of the caller's choosing ---------------------------------------


def test_boot_with_a_hostname(cloud: Cloud, small: str,
                              recorder: RecordingConductor) -> None:
    user = cloud.client("demo:p1", "2.90", roles=MEMBER)
    resp = user.post("/servers", json=boot_body(small, image(cloud, visibility="public"),
                                            hostname="web.Example-1"))
    assert resp.status_code == 202, resp.text
    shown = user.get(f"/servers/{resp.json()['server']['id']}").json()["server"]
    assert shown["OS-EXT-SRV-ATTR:hostname"] == "web.Example-1"  # as given
    assert "OS-EXT-SRV-ATTR:host" not in shown  # the other attributes stay an admin's
    derived = user.post("/servers", json=boot_body(small, image(cloud, visibility="public"),
                                                name="My VM"))
    shown = user.get(f"/servers/{derived.json()['server']['id']}").json()["server"]
    assert shown["OS-EXT-SRV-ATTR:hostname"] == "my-vm"


@pytest.mark.parametrize(("version", "extra", "message"), [
    ("2.89", {"hostname": "web"}, "Additional properties are not allowed"),
    ("2.90", {"hostname": "web 1"}, "Invalid input for field/attribute server/hostname"),
    ("2.90", {"hostname": ""}, "Invalid input for field/attribute server/hostname"),
    ("2.90", {"hostname": "a" * 256}, "Invalid input for field/attribute server/hostname"),
    ("2.90", {"hostname": "web", "max_count": 2},
     "Unable to allocate a single hostname to multiple instances"),
])
def test_bad_hostnames_on_boot(cloud: Cloud, small: str, recorder: RecordingConductor,
                               version: str, extra: dict[str, Any], message: str) -> None:
    resp = cloud.compute.post("/servers", json=boot_body(small, image(cloud), **extra),
                              headers=at(version))
    assert message in fault_of(resp, 400)
    assert servers_of(cloud.compute, all_tenants=1) == []
    assert recorder.casts == []


def test_update_the_hostname(cloud: Cloud, small: str) -> None:
    server = make_instance(cloud, project_id="p1", hostname="vm")
    user = cloud.client("demo:p1", "2.90", roles=MEMBER)
    resp = user.put(f"/servers/{server.uuid}", json={"server": {"hostname": "db_1"}})
    assert resp.status_code == 200, resp.text
    assert resp.json()["server"]["OS-EXT-SRV-ATTR:hostname"] == "db_1"
    resp = user.put(f"/servers/{server.uuid}", json={"server": {"hostname": "db/1"}})
    assert "Invalid input for field/attribute server/hostname" in fault_of(resp, 400)
    resp = user.put(f"/servers/{server.uuid}", json={"server": {"hostname": "x"}},
                    headers=at("2.89"))
    assert "Additional properties are not allowed" in fault_of(resp, 400)
    assert user.get(f"/servers/{server.uuid}").json()["server"][
        "OS-EXT-SRV-ATTR:hostname"] == "db_1"


def test_hostname_for_owners_and_their_filter(cloud: Cloud, small: str) -> None:
    web = make_instance(cloud, project_id="p1", hostname="web-1")
    db = make_instance(cloud, project_id="p1", hostname="db-1")
    user = cloud.client("demo:p1", "2.90", roles=MEMBER)
    assert servers_of(user, hostname="^web") == [web.uuid]
    listed = user.get("/servers/detail").json()["servers"]
    assert {s["OS-EXT-SRV-ATTR:hostname"] for s in listed} == {"web-1", "db-1"}
    old = cloud.client("demo:p1", "2.89", roles=MEMBER)
    assert set(servers_of(old, hostname="^web")) == {web.uuid, db.uuid}
    assert "OS-EXT-SRV-ATTR:hostname" not in old.get(f"/servers/{web.uuid}").json()["server"]
