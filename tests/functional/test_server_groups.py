"""/os-server-groups over HTTP: create per microversion, list, show, delete, who sees what.

    admin           project "admin"
    alice:proj-a    a member of proj-a
    bob:proj-b      a member of proj-b
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from stowage.compute import instances, server_groups
from stowage.compute.instances import Instance
from tests.functional import servers as sv
from tests.functional.conftest import MEMBER, Cloud
from tests.functional.servers import new_uuid


def at(version: str) -> dict[str, str]:
    return {"openstack-api-version": f"compute {version}"}


def create(client: httpx.Client, name: str = "g", policy: str = "anti-affinity",
           rules: dict[str, Any] | None = None, version: str = "latest") -> dict[str, Any]:
    body: dict[str, Any] = {"name": name, "policy": policy}
    if rules is not None:
        body["rules"] = rules
    resp = client.post("/os-server-groups", json={"server_group": body}, headers=at(version))
    assert resp.status_code == 200, resp.text
    return dict(resp.json()["server_group"])


def error(resp: httpx.Response, status: int) -> str:
    assert resp.status_code == status, resp.text
    [(kind, body)] = resp.json().items()
    assert body["code"] == status
    return str(body["message"])


def test_create_and_show_at_latest(cloud: Cloud) -> None:
    with cloud.client("alice:proj-a", roles=MEMBER) as alice:
        made = create(alice, "web", "anti-affinity", {"max_server_per_host": 3})
        assert set(made) == {"id", "name", "policy", "rules", "members", "project_id",
                             "user_id"}
        assert made["name"] == "web" and made["policy"] == "anti-affinity"
        assert made["rules"] == {"max_server_per_host": 3}
        assert made["members"] == []
        assert (made["project_id"], made["user_id"]) == ("proj-a", "alice")
        shown = alice.get(f"/os-server-groups/{made['id']}")
        assert shown.status_code == 200
        assert shown.json()["server_group"] == made


def test_rules_given_as_a_numeric_string_are_integers(cloud: Cloud) -> None:
    made = create(cloud.compute, rules={"max_server_per_host": "2"})
    assert made["rules"] == {"max_server_per_host": 2}
    assert create(cloud.compute, policy="affinity")["rules"] == {}


@pytest.mark.parametrize(("version", "keys"), [
    ("2.1", {"id", "name", "policies", "members", "metadata"}),
    ("2.13", {"id", "name", "policies", "members", "metadata", "project_id", "user_id"}),
    ("2.63", {"id", "name", "policies", "members", "metadata", "project_id", "user_id"}),
])
def test_policies_list_before_2_64(cloud: Cloud, version: str, keys: set[str]) -> None:
    body = {"server_group": {"name": "old", "policies": ["affinity"]}}
    resp = cloud.compute.post("/os-server-groups", json=body, headers=at(version))
    assert resp.status_code == 200, resp.text
    made = resp.json()["server_group"]
    assert set(made) == keys
    assert made["policies"] == ["affinity"] and made["metadata"] == {}
    # The same group at the latest version speaks policy/rules.
    latest = cloud.compute.get(f"/os-server-groups/{made['id']}").json()["server_group"]
    assert latest["policy"] == "affinity" and latest["rules"] == {}


def test_soft_policies_arrive_with_2_15(cloud: Cloud) -> None:
    body = {"server_group": {"name": "soft", "policies": ["soft-anti-affinity"]}}
    message = error(cloud.compute.post("/os-server-groups", json=body, headers=at("2.14")),
                    400)
    assert message.startswith("Invalid input for field/attribute")
    resp = cloud.compute.post("/os-server-groups", json=body, headers=at("2.15"))
    assert resp.status_code == 200
    assert resp.json()["server_group"]["policies"] == ["soft-anti-affinity"]


@pytest.mark.parametrize(("version", "group", "expected"), [
    ("latest", {"name": "x", "policy": "best-effort"}, "Invalid input for field/attribute"),
    ("latest", {"name": "x", "policies": ["affinity"]}, "Invalid input for field/attribute"),
    ("latest", {"name": "x", "policy": "affinity", "rules": {"max_server_per_host": 2}},
     "Only anti-affinity policy supports rules."),
    ("latest", {"name": "x", "policy": "anti-affinity", "rules": {"max_server_per_host": 0}},
     "Invalid input for field/attribute"),
    ("latest", {"name": "x", "policy": "anti-affinity", "rules": {"other": 1}},
     "Invalid input for field/attribute"),
    ("latest", {"policy": "affinity"}, "Invalid input for field/attribute"),
    ("latest", {"name": " padded", "policy": "affinity"}, "Invalid input for field/attribute"),
    ("2.1", {"name": "x", "policies": ["affinity", "anti-affinity"]},
     "Invalid input for field/attribute"),
    ("2.1", {"name": "x", "policies": []}, "Invalid input for field/attribute"),
    ("2.1", {"name": "x", "policy": "affinity"}, "Invalid input for field/attribute"),
])
def test_bad_input_is_a_400_and_creates_nothing(cloud: Cloud, version: str,
                                                group: dict[str, Any], expected: str) -> None:
    resp = cloud.compute.post("/os-server-groups", json={"server_group": group},
                              headers=at(version))
    assert error(resp, 400).startswith(expected)
    assert resp.json()["badRequest"]["code"] == 400
    assert cloud.compute.get("/os-server-groups").json()["server_groups"] == []


def test_lists_are_project_scoped_and_admins_see_all(cloud: Cloud) -> None:
    with cloud.client("alice:proj-a", roles=MEMBER) as alice, \
            cloud.client("bob:proj-b", roles=MEMBER) as bob:
        a = create(alice, "a")
        b = create(bob, "b")
        assert [g["id"] for g in alice.get("/os-server-groups").json()["server_groups"]] == [
            a["id"]]
        # A non-admin's all_projects is ignored, as in Nova.
        resp = bob.get("/os-server-groups", params={"all_projects": "True"})
        assert [g["id"] for g in resp.json()["server_groups"]] == [b["id"]]
        # Another project's group does not exist for a non-admin.
        assert error(bob.get(f"/os-server-groups/{a['id']}"), 404) == (
            f"Instance group {a['id']} could not be found.")
        assert error(bob.delete(f"/os-server-groups/{a['id']}"), 404)
    admin = cloud.compute
    assert admin.get("/os-server-groups").json()["server_groups"] == []
    everyone = admin.get("/os-server-groups", params={"all_projects": "1"}).json()
    assert [g["id"] for g in everyone["server_groups"]] == [a["id"], b["id"]]
    assert admin.get(f"/os-server-groups/{a['id']}").status_code == 200


def test_limit_and_offset(cloud: Cloud) -> None:
    ids = [create(cloud.compute, f"g{i}")["id"] for i in range(4)]
    page = cloud.compute.get("/os-server-groups", params={"limit": 2, "offset": 1}).json()
    assert [g["id"] for g in page["server_groups"]] == ids[1:3]
    assert error(cloud.compute.get("/os-server-groups", params={"limit": -1}), 400)


def test_unknown_query_parameters_are_refused_from_2_75(cloud: Cloud) -> None:
    assert cloud.compute.get("/os-server-groups", params={"foo": "1"},
                             headers=at("2.74")).status_code == 200
    message = error(cloud.compute.get("/os-server-groups", params={"foo": "1"},
                                      headers=at("2.75")), 400)
    assert message.startswith("Invalid input for query parameters")


def test_delete(cloud: Cloud) -> None:
    with cloud.client("alice:proj-a", roles=MEMBER) as alice:
        made = create(alice)
        resp = alice.delete(f"/os-server-groups/{made['id']}")
        assert resp.status_code == 204 and resp.content == b""
        assert error(alice.get(f"/os-server-groups/{made['id']}"), 404)
        assert error(alice.delete(f"/os-server-groups/{made['id']}"), 404)


def test_members_are_live_instances(cloud: Cloud) -> None:
    made = create(cloud.compute)
    uuids = [new_uuid(), new_uuid()]
    with cloud.live.cell_db.write() as conn:
        for uuid in uuids:
            instances.create(conn, Instance(uuid=uuid, project_id="admin", user_id="admin",
                                            display_name="s", flavor={}, vm_state="active"))
    with cloud.live.db.write() as conn:
        for uuid in uuids:
            server_groups.add_member(conn, made["id"], uuid)
        server_groups.add_member(conn, made["id"], uuids[0])  # idempotent
        assert server_groups.group_of_instance(conn, uuids[1], cloud.live.cell_db) is not None
    shown = cloud.compute.get(f"/os-server-groups/{made['id']}").json()["server_group"]
    assert shown["members"] == uuids
    with cloud.live.cell_db.write() as conn:
        instances.soft_delete(conn, uuids[0])
    shown = cloud.compute.get(f"/os-server-groups/{made['id']}").json()["server_group"]
    assert shown["members"] == [uuids[1]]
    listed = cloud.compute.get("/os-server-groups").json()["server_groups"]
    assert listed[0]["members"] == [uuids[1]]
    with cloud.live.db.write() as conn:
        server_groups.remove_member(conn, uuids[1])
        assert server_groups.group_of_instance(conn, uuids[1]) is None


def test_unknown_group_is_a_404_and_methods_are_checked(cloud: Cloud) -> None:
    missing = new_uuid()
    assert error(cloud.compute.get(f"/os-server-groups/{missing}"), 404) == (
        f"Instance group {missing} could not be found.")
    assert cloud.compute.put(f"/os-server-groups/{missing}", json={}).status_code == 405


def test_boots_honour_the_group_policy(cloud: Cloud) -> None:
    for name in ("host1", "host2"):
        cloud.add_host(name)
    flavor_id = sv.flavor(cloud, "small", 1, 512, 1)
    image_id = sv.image(cloud)
    spread = create(cloud.compute, "spread", "anti-affinity")
    packed = create(cloud.compute, "packed", "affinity")
    a = [sv.boot(cloud, f"a{i}", flavor_id, image_id, hints={"group": spread["id"]})
         for i in range(2)]
    assert sorted(sv.host_of(cloud, s) for s in a) == ["host1", "host2"]
    third = sv.boot(cloud, "a2", flavor_id, image_id, hints={"group": spread["id"]})
    failed = sv.server(cloud, third)
    assert failed["status"] == "ERROR"
    assert "No valid host was found." in failed["fault"]["message"]
    assert sv.held(cloud, third) == {}
    p = [sv.boot(cloud, f"p{i}", flavor_id, image_id, hints={"group": packed["id"]})
         for i in range(3)]
    assert len({sv.host_of(cloud, s) for s in p}) == 1
    members = cloud.compute.get(f"/os-server-groups/{packed['id']}").json()
    assert sorted(members["server_group"]["members"]) == sorted(p)
