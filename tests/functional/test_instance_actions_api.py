"""GET /servers/{id}/os-instance-actions[/{request_id}]: listing, events, paging, policy.

Actions and events are written as the API and the conductor write them::

    vm (project p1)
      create   req-1   event conductor_schedule_and_build_instances  Success  host1
      stop     req-2   event compute_stop_instance                   Error    host1
      start    req-3   (no events yet)
"""

from __future__ import annotations

import datetime
import hashlib
import uuid as uuidlib
from typing import Any

import httpx
import pytest

from stowage.compute import actions
from stowage.compute import instances as inst
from stowage.timeutil import utcnow
from tests.functional.conftest import MEMBER, Cloud


def at(version: str) -> dict[str, str]:
    return {"openstack-api-version": f"compute {version}"}


@pytest.fixture
def vm(cloud: Cloud) -> str:
    with cloud.live.cell_db.write() as conn:
        made = inst.create(conn, inst.Instance(
            uuid=str(uuidlib.uuid4()), project_id="p1", user_id="demo", display_name="vm",
            flavor={"id": 1, "flavorid": "1", "name": "small"}, vm_state="active",
            host="host1", launched_at=utcnow()))
        for request_id, name in (("req-1", "create"), ("req-2", "stop"), ("req-3", "start")):
            actions.start_action(conn, made.uuid, name, request_id, "demo", "p1")
        actions.start_event(conn, made.uuid, "req-1",
                            "conductor_schedule_and_build_instances", host="host1")
        actions.finish_event(conn, made.uuid, "req-1", "conductor_schedule_and_build_instances")
        actions.start_event(conn, made.uuid, "req-2", "compute_stop_instance", host="host1")
        actions.finish_event(conn, made.uuid, "req-2", "compute_stop_instance",
                             error="Traceback: boom")
    return made.uuid


def request_ids(resp: httpx.Response) -> list[str]:
    assert resp.status_code == 200, resp.text
    return [a["request_id"] for a in resp.json()["instanceActions"]]


def test_list_newest_first(cloud: Cloud, vm: str) -> None:
    resp = cloud.compute.get(f"/servers/{vm}/os-instance-actions")
    assert request_ids(resp) == ["req-3", "req-2", "req-1"]
    first = resp.json()["instanceActions"][-1]
    assert {k: first[k] for k in ("action", "instance_uuid", "user_id", "project_id")} == {
        "action": "create", "instance_uuid": vm, "user_id": "demo", "project_id": "p1"}
    assert "updated_at" in first
    old = cloud.compute.get(f"/servers/{vm}/os-instance-actions", headers=at("2.57"))
    assert "updated_at" not in old.json()["instanceActions"][0]


def test_paging_and_changes_since_from_2_58(cloud: Cloud, vm: str) -> None:
    url = f"/servers/{vm}/os-instance-actions"
    page = cloud.compute.get(url, params={"limit": 2}).json()
    assert [a["request_id"] for a in page["instanceActions"]] == ["req-3", "req-2"]
    assert "marker=req-2" in page["links"][0]["href"]
    assert request_ids(cloud.compute.get(url, params={"marker": "req-2"})) == ["req-1"]
    bad = cloud.compute.get(url, params={"marker": "req-x"})
    assert bad.status_code == 400
    assert bad.json()["badRequest"]["message"] == "Marker req-x could not be found."
    future = (utcnow() + datetime.timedelta(hours=1)).isoformat()
    assert request_ids(cloud.compute.get(url, params={"changes-since": future})) == []
    assert cloud.compute.get(url, params={"limit": 1}, headers=at("2.57")).status_code == 200
    assert len(request_ids(cloud.compute.get(url, params={"limit": 1},
                                             headers=at("2.57")))) == 3


def test_show_with_events_for_admin(cloud: Cloud, vm: str) -> None:
    shown = cloud.compute.get(f"/servers/{vm}/os-instance-actions/req-2").json()
    action = shown["instanceAction"]
    assert action["action"] == "stop"
    (event,) = action["events"]
    assert (event["event"], event["result"], event["traceback"]) == (
        "compute_stop_instance", "Error", "Traceback: boom")
    assert event["host"] == "host1"
    assert event["hostId"] == hashlib.sha224(b"p1host1").hexdigest()
    assert event["details"] == "Traceback: boom"  # 2.84, for admins
    old = cloud.compute.get(f"/servers/{vm}/os-instance-actions/req-2", headers=at("2.83"))
    assert "details" not in old.json()["instanceAction"]["events"][0]
    created = cloud.compute.get(f"/servers/{vm}/os-instance-actions/req-1").json()
    assert created["instanceAction"]["events"][0]["details"] is None
    assert cloud.compute.get(f"/servers/{vm}/os-instance-actions/req-3").json()[
        "instanceAction"]["events"] == []


def test_owner_sees_events_without_traceback(cloud: Cloud, vm: str) -> None:
    owner = cloud.client("demo:p1", roles=MEMBER)
    event = owner.get(f"/servers/{vm}/os-instance-actions/req-2").json()[
        "instanceAction"]["events"][0]
    assert set(event) == {"event", "start_time", "finish_time", "result", "hostId"}
    old = owner.get(f"/servers/{vm}/os-instance-actions/req-2", headers=at("2.50")).json()
    assert "events" not in old["instanceAction"]
    v261 = owner.get(f"/servers/{vm}/os-instance-actions/req-1", headers=at("2.61")).json()
    assert set(v261["instanceAction"]["events"][0]) == {
        "event", "start_time", "finish_time", "result"}


def test_not_found_and_other_projects(cloud: Cloud, vm: str) -> None:
    resp = cloud.compute.get(f"/servers/{vm}/os-instance-actions/req-9")
    assert resp.status_code == 404
    assert resp.json()["itemNotFound"]["message"] == "Action req-9 not found"
    other = cloud.client("x:p2", roles=MEMBER)
    assert other.get(f"/servers/{vm}/os-instance-actions").status_code == 404


def test_actions_of_a_deleted_server_stay_visible(cloud: Cloud, vm: str) -> None:
    with cloud.live.cell_db.write() as conn:
        inst.soft_delete(conn, vm)
    assert request_ids(cloud.compute.get(f"/servers/{vm}/os-instance-actions")) == [
        "req-3", "req-2", "req-1"]
    assert cloud.compute.get(f"/servers/{vm}/os-instance-actions",
                             headers=at("2.20")).status_code == 404


def test_api_requests_record_their_action(cloud: Cloud, vm: str) -> None:
    resp = cloud.client("demo:p1", roles=MEMBER).put(f"/servers/{vm}",
                                                     json={"server": {"name": "x"}})
    assert resp.status_code == 200
    response: dict[str, Any] = cloud.compute.get(f"/servers/{vm}/os-instance-actions").json()
    assert len(response["instanceActions"]) == 3  # an update records no action, as in Nova
