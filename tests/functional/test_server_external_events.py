"""POST /os-server-external-events: per-event answers, routing to the hosts, what agents do.

    host1, host2: 8 vCPU, 8 GiB each; small = 1 vCPU / 512 MB, large = 2 vCPU / 1024 MB
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.functional.conftest import Cloud
from tests.functional.servers import (
    action,
    boot,
    flavor,
    guests,
    image,
    new_uuid,
    server,
    settle,
)

RUNNING, SHUTDOWN = 1, 4
URL = "/os-server-external-events"


@pytest.fixture
def world(cloud: Cloud) -> dict[str, str]:
    for host in ("host1", "host2"):
        cloud.add_host(host, vcpus=8, memory_mb=8192, disk_gb=100)
    small = flavor(cloud, "small", 1, 512, 5)
    large = flavor(cloud, "large", 2, 1024, 5)
    image_id = image(cloud)
    return {"server": boot(cloud, "vm", small, image_id), "small": small, "large": large,
            "image": image_id}


def _send(cloud: Cloud, *events: dict[str, Any], version: str = "latest",
          status: int = 200) -> list[dict[str, Any]]:
    resp = cloud.compute.post(URL, json={"events": list(events)},
                              headers={"openstack-api-version": f"compute {version}"})
    assert resp.status_code == status, resp.text
    settle(cloud)
    return list(resp.json()["events"]) if status in (200, 207) else [resp.json()]


def _actions(cloud: Cloud, server_id: str) -> dict[str, list[tuple[str, str | None]]]:
    """action name -> its events (name, result)."""
    found = {}
    listed = cloud.compute.get(f"/servers/{server_id}/os-instance-actions").json()
    for item in listed["instanceActions"]:
        one = cloud.compute.get(f"/servers/{server_id}/os-instance-actions/"
                                f"{item['request_id']}").json()["instanceAction"]
        found[one["action"]] = [(e["event"], e["result"]) for e in one["events"]]
    return found


def test_every_event_accepted_is_a_200_and_echoed(cloud: Cloud,
                                                   world: dict[str, str]) -> None:
    sid = world["server"]
    answered = _send(cloud, {"name": "network-changed", "server_uuid": sid, "tag": "port-1"},
                     {"name": "network-vif-plugged", "server_uuid": sid, "status": "failed"})
    assert answered == [
        {"name": "network-changed", "server_uuid": sid, "tag": "port-1", "status": "completed",
         "code": 200},
        {"name": "network-vif-plugged", "server_uuid": sid, "status": "completed", "code": 200}]
    assert server(cloud, sid)["status"] == "ACTIVE"


def test_unknown_servers_and_missing_tags_are_a_207(cloud: Cloud,
                                                     world: dict[str, str]) -> None:
    sid, ghost = world["server"], new_uuid()
    answered = _send(cloud, {"name": "network-changed", "server_uuid": ghost},
                     {"name": "volume-extended", "server_uuid": sid},
                     {"name": "network-changed", "server_uuid": sid}, status=207)
    assert [(e["code"], e["status"]) for e in answered] == [
        (404, "failed"), (400, "failed"), (200, "completed")]
    only_unknown = _send(cloud, {"name": "network-changed", "server_uuid": ghost}, status=207)
    assert only_unknown == [{"name": "network-changed", "server_uuid": ghost,
                             "status": "failed", "code": 404}]


def test_a_deleted_server_is_unknown(cloud: Cloud, world: dict[str, str]) -> None:
    sid = world["server"]
    assert cloud.compute.delete(f"/servers/{sid}").status_code == 204
    settle(cloud)
    [answer] = _send(cloud, {"name": "network-changed", "server_uuid": sid}, status=207)
    assert answer["code"] == 404


def test_a_server_without_a_host_is_a_422(cloud: Cloud, world: dict[str, str]) -> None:
    huge = flavor(cloud, "huge", 16, 512, 5)  # no host has 16 vCPU
    resp = cloud.compute.post("/servers", json={"server": {
        "name": "nowhere", "flavorRef": huge, "imageRef": world["image"], "networks": "none"}})
    settle(cloud)
    nowhere = resp.json()["server"]["id"]
    assert server(cloud, nowhere)["status"] == "ERROR"
    [answer] = _send(cloud, {"name": "network-changed", "server_uuid": nowhere}, status=207)
    assert (answer["code"], answer["status"]) == (422, "failed")


@pytest.mark.parametrize(("name", "since"), [("volume-extended", "2.51"),
                                             ("power-update", "2.76"),
                                             ("accelerator-request-bound", "2.82")])
def test_later_event_names_need_their_microversion(cloud: Cloud, world: dict[str, str],
                                                   name: str, since: str) -> None:
    event = {"name": name, "server_uuid": world["server"], "tag": "POWER_ON"}
    major, minor = since.split(".")
    [refused] = _send(cloud, event, version=f"{major}.{int(minor) - 1}", status=400)
    assert "events/0/name" in refused["badRequest"]["message"]
    assert _send(cloud, event, version=since)[0]["code"] == 200


@pytest.mark.parametrize(("body", "words"), [
    ({"events": []}, "events"),
    ({"events": [{"name": "network-changed"}]}, "'server_uuid' is a required property"),
    ({"events": [{"name": "network-changed", "server_uuid": "nope"}]},
     "Invalid input for field/attribute events/0/server_uuid. Value: nope. "
     "'nope' is not a 'uuid'"),
    ({"events": [{"name": "network-changed", "server_uuid": "%s", "color": "red"}]},
     "Additional properties are not allowed"),
    ({"events": [{"name": "network-changed", "server_uuid": "%s", "status": "done"}]},
     "events/0/status"),
    ({"events": [{"name": "network-changed", "server_uuid": "%s", "tag": "x" * 256}]},
     "events/0/tag"),
])
def test_malformed_bodies_are_a_400(cloud: Cloud, world: dict[str, str], body: dict[str, Any],
                                    words: str) -> None:
    for event in body["events"]:
        if event.get("server_uuid") == "%s":
            event["server_uuid"] = world["server"]
    resp = cloud.compute.post(URL, json=body)
    assert resp.status_code == 400, resp.text
    assert words in resp.json()["badRequest"]["message"]
    assert _actions(cloud, world["server"]).keys() == {"create"}


def test_only_admins_send_events(cloud: Cloud, world: dict[str, str]) -> None:
    with cloud.client("demo:admin", roles=("member", "reader")) as member:
        resp = member.post(URL, json={"events": [{"name": "network-changed",
                                                  "server_uuid": world["server"]}]})
    assert resp.status_code == 403, resp.text
    assert resp.json()["forbidden"]["message"] == (
        "Policy does not allow os_compute_api:os-server-external-events:create to be "
        "performed.")


def test_power_update_powers_the_guest_and_the_record(cloud: Cloud,
                                                      world: dict[str, str]) -> None:
    sid = world["server"]
    _send(cloud, {"name": "power-update", "server_uuid": sid, "tag": "POWER_OFF"})
    view = server(cloud, sid)
    assert (view["status"], view["OS-EXT-STS:power_state"]) == ("SHUTOFF", SHUTDOWN)
    assert guests(cloud, sid) == {(view["OS-EXT-SRV-ATTR:host"], ""): SHUTDOWN}
    assert _actions(cloud, sid)["stop"] == [("compute_power_update", "Success")]

    _send(cloud, {"name": "power-update", "server_uuid": sid, "tag": "POWER_ON"})
    view = server(cloud, sid)
    assert (view["status"], view["OS-EXT-STS:power_state"]) == ("ACTIVE", RUNNING)
    assert _actions(cloud, sid)["start"] == [("compute_power_update", "Success")]


def test_power_update_to_the_state_it_is_in_or_to_no_state_changes_nothing(
        cloud: Cloud, world: dict[str, str]) -> None:
    sid = world["server"]
    _send(cloud, {"name": "power-update", "server_uuid": sid, "tag": "POWER_ON"})
    answered = _send(cloud, {"name": "power-update", "server_uuid": sid, "tag": "SLEEP"})
    assert answered[0]["code"] == 200  # accepted, as Nova answers, then skipped
    assert server(cloud, sid)["status"] == "ACTIVE"
    assert _actions(cloud, sid)["start"] == []  # started, nothing for the agent to do
    assert set(_actions(cloud, sid)) == {"create", "start"}


def test_volume_extended_on_a_server_not_booted_from_a_volume_is_an_error_event(
        cloud: Cloud, world: dict[str, str]) -> None:
    sid = world["server"]
    volume = new_uuid()
    _send(cloud, {"name": "volume-extended", "server_uuid": sid, "tag": volume})
    [(event, result)] = _actions(cloud, sid)["extend_volume"]
    assert (event, result) == ("compute_extend_volume", "Error")


def test_events_during_a_resize_go_to_both_hosts(cloud: Cloud, world: dict[str, str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    sid = world["server"]
    action(cloud, sid, {"resize": {"flavorRef": world["large"]}})
    assert server(cloud, sid)["status"] == "VERIFY_RESIZE"
    sent: list[str] = []
    transport = cloud.plane.transport
    cast = transport.cast

    def recording(target: str, method: str, /, **kwargs: Any) -> None:
        if method == "external_instance_events":
            sent.append(target)
        cast(target, method, **kwargs)

    monkeypatch.setattr(transport, "cast", recording)
    _send(cloud, {"name": "network-changed", "server_uuid": sid})
    assert sorted(sent) == ["compute.host1", "compute.host2"]


def test_power_update_leaves_a_resize_waiting_for_confirm_alone(
        cloud: Cloud, world: dict[str, str]) -> None:
    sid = world["server"]
    action(cloud, sid, {"resize": {"flavorRef": world["large"]}})
    before = guests(cloud, sid)
    _send(cloud, {"name": "power-update", "server_uuid": sid, "tag": "POWER_OFF"})
    assert server(cloud, sid)["status"] == "VERIFY_RESIZE"
    assert guests(cloud, sid) == before
    [(event, result)] = _actions(cloud, sid)["stop"]
    assert (event, result) == ("compute_power_update", "Error")
    action(cloud, sid, {"confirmResize": None}, status=204)
    assert server(cloud, sid)["status"] == "ACTIVE"
