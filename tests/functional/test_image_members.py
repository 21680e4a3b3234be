"""Image members and visibility over HTTP, as Glance answers them.

    alice (proj-a)  owns the images and offers the shared ones
    bob   (proj-b)  a member: answers pending -> accepted / rejected
    carol (proj-c)  neither owner nor member
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from stowage.image import members, tables
from tests.functional.conftest import MEMBER, LiveServer, api_client
from tests.functional.image_calls import create


@pytest.fixture
def people(image: httpx.Client, live_stowage: LiveServer) -> Iterator[dict[str, httpx.Client]]:
    base = f"{live_stowage.url}/image"
    clients = {name: api_client(base, token=f"{name}:proj-{name[0]}", roles=MEMBER)
               for name in ("alice", "bob", "carol")}
    yield clients
    for client in clients.values():
        client.close()



def listed(client: httpx.Client, **params: str) -> list[str]:
    resp = client.get("/v2/images", params=params)
    assert resp.status_code == 200, resp.text
    return sorted(i["name"] for i in resp.json()["images"])


def share(owner: httpx.Client, image_id: str, project: str) -> httpx.Response:
    return owner.post(f"/v2/images/{image_id}/members", json={"member": project})


def test_share_then_accept_lists_the_image(people: dict[str, httpx.Client]) -> None:
    alice, bob, carol = people["alice"], people["bob"], people["carol"]
    made = create(alice, "offered")
    assert made["visibility"] == "shared"
    offered = share(alice, made["id"], "proj-b")
    assert offered.status_code == 200, offered.text
    body = offered.json()
    assert (body["member_id"], body["image_id"], body["status"], body["schema"]) == \
        ("proj-b", made["id"], "pending", "/v2/schemas/member")
    # Pending: not in the default list, but shown when asked for, and readable.
    assert listed(bob) == []
    assert listed(bob, visibility="shared", member_status="pending") == ["offered"]
    assert bob.get(f"/v2/images/{made['id']}").status_code == 200
    assert carol.get(f"/v2/images/{made['id']}").status_code == 404
    answered = bob.put(f"/v2/images/{made['id']}/members/proj-b", json={"status": "accepted"})
    assert answered.status_code == 200, answered.text
    assert answered.json()["status"] == "accepted"
    assert listed(bob) == ["offered"]
    assert listed(bob, member_status="pending") == []
    owners = alice.get(f"/v2/images/{made['id']}/members").json()
    assert [(m["member_id"], m["status"]) for m in owners["members"]] == \
        [("proj-b", "accepted")]
    assert owners["schema"] == "/v2/schemas/members"
    assert carol.get(f"/v2/images/{made['id']}/members").status_code == 404


def test_reject_hides_it_and_members_see_only_themselves(
        people: dict[str, httpx.Client]) -> None:
    alice, bob, carol = people["alice"], people["bob"], people["carol"]
    made = create(alice, "offered")
    for project in ("proj-b", "proj-c"):
        assert share(alice, made["id"], project).status_code == 200
    path = f"/v2/images/{made['id']}/members"
    assert bob.put(f"{path}/proj-b", json={"status": "rejected"}).status_code == 200
    assert listed(bob) == []
    assert listed(bob, member_status="rejected") == ["offered"]
    assert listed(bob, member_status="all") == ["offered"]
    assert [m["member_id"] for m in bob.get(path).json()["members"]] == ["proj-b"]
    assert bob.get(f"{path}/proj-c").status_code == 404
    assert bob.put(f"{path}/proj-c", json={"status": "accepted"}).status_code == 404
    assert carol.get(f"{path}/proj-c").json()["status"] == "pending"
    assert len(alice.get(path).json()["members"]) == 2


def test_only_the_member_answers(people: dict[str, httpx.Client]) -> None:
    alice, bob = people["alice"], people["bob"]
    made = create(alice, "offered")
    share(alice, made["id"], "proj-b")
    path = f"/v2/images/{made['id']}/members/proj-b"
    refused = alice.put(path, json={"status": "accepted"})
    assert refused.status_code == 403, refused.text
    assert refused.json()["message"] == \
        "You are not authorized to complete modify_member action."
    bad = bob.put(path, json={"status": "notavalidstatus"})
    assert bad.status_code == 400, bad.text
    assert bad.json()["message"] == \
        'Incorrect request: Status must be "pending", "accepted" or "rejected".'
    assert bob.put(path, json={}).json()["message"] == "Status not specified"
    assert bob.get(path).json()["status"] == "pending"
    # A member may not offer the image to others.
    assert share(bob, made["id"], "proj-c").json()["message"] == \
        "You are not authorized to complete add_member action."


def test_only_shared_images_have_members(people: dict[str, httpx.Client]) -> None:
    alice = people["alice"]
    made = create(alice, "mine", visibility="private")
    refused = share(alice, made["id"], "proj-b")
    assert refused.status_code == 403
    assert refused.json()["message"] == f"Not allowed to create members for image {made['id']}."
    listing = alice.get(f"/v2/images/{made['id']}/members")
    assert listing.status_code == 403
    assert listing.json()["message"] == (f"Not allowed to list members for image {made['id']}: "
                                         "Only shared images have members.")
    assert alice.get(f"/v2/images/{made['id']}/members/proj-b").status_code == 404


@pytest.mark.parametrize(("body", "message"), [
    ({}, "Member to be added not specified"),
    ({"member": ""}, "Member can't be empty"),
    ([1], 'Expected a member in the form: {"member": "image_id"}'),
    ({"member": 5}, 'Expected a member in the form: {"member": "image_id"}'),
    ({"member": "x" * 256}, "Member can be at most 255 characters long"),
])
def test_bad_member_bodies_change_nothing(people: dict[str, httpx.Client], body: Any,
                                          message: str) -> None:
    alice = people["alice"]
    made = create(alice, "offered")
    refused = alice.post(f"/v2/images/{made['id']}/members", json=body)
    assert refused.status_code == 400, refused.text
    assert refused.json()["message"] == message
    assert alice.get(f"/v2/images/{made['id']}/members").json()["members"] == []


def test_duplicates_limit_and_removal(people: dict[str, httpx.Client],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    alice, bob = people["alice"], people["bob"]
    made = create(alice, "offered")
    assert share(alice, made["id"], "proj-b").status_code == 200
    again = share(alice, made["id"], "proj-b")
    assert again.status_code == 409
    assert again.json()["message"] == f"Member proj-b is duplicated for image {made['id']}"
    monkeypatch.setattr(members, "IMAGE_MEMBER_QUOTA", 2)
    assert share(alice, made["id"], "proj-c").status_code == 200
    over = share(alice, made["id"], "proj-d")
    assert over.status_code == 413, over.text
    path = f"/v2/images/{made['id']}/members"
    assert len(alice.get(path).json()["members"]) == 2
    assert bob.delete(f"{path}/proj-b").json()["message"] == \
        "You are not authorized to complete delete_member action."
    assert alice.delete(f"{path}/proj-b").status_code == 204
    assert alice.delete(f"{path}/proj-b").status_code == 404
    assert bob.get(f"/v2/images/{made['id']}").status_code == 404


def test_deleting_the_image_drops_its_members(people: dict[str, httpx.Client],
                                              live_stowage: LiveServer) -> None:
    alice = people["alice"]
    made = create(alice, "offered")
    share(alice, made["id"], "proj-b")
    assert alice.delete(f"/v2/images/{made['id']}").status_code == 204
    with live_stowage.db.read() as conn:
        left = conn.execute(sa.select(sa.func.count()).select_from(tables.image_members)
                            ).scalar_one()
    assert left == 0


def test_visibility_listing_rules(image: httpx.Client, people: dict[str, httpx.Client]) -> None:
    alice, bob = people["alice"], people["bob"]
    create(alice, "a-community", visibility="community")
    create(alice, "a-private", visibility="private")
    create(image, "public", visibility="public")
    # Another project's community images: only when asked for.
    assert listed(bob) == ["public"]
    assert listed(bob, visibility="community") == ["a-community"]
    assert listed(bob, visibility="all") == ["a-community", "public"]
    assert listed(alice) == ["a-community", "a-private", "public"]
    assert listed(image) == ["a-private", "public"]
    assert bob.get("/v2/images", params={"visibility": "hidden"}).json()["message"] == \
        "Invalid visibility value: hidden"
    assert bob.get("/v2/images", params={"member_status": "maybe"}).json()["message"] == \
        "Invalid status: maybe"
    # Making an image public is an admin's; community is the owner's.
    assert alice.post("/v2/images", json={"name": "p", "visibility": "public"}) \
        .status_code == 403


def test_member_schemas(image: httpx.Client) -> None:
    assert image.get("/v2/schemas/member").json()["name"] == "member"
    assert image.get("/v2/schemas/members").json()["name"] == "members"


def test_compute_sees_a_shared_image_as_its_member(
        people: dict[str, httpx.Client], live_stowage: LiveServer) -> None:
    """Nova reads Glance as the user: a member (pending or not) sees the image, and
    may boot it (here: found, and refused only for having no data yet)."""
    alice = people["alice"]
    made = create(alice, "offered")
    share(alice, made["id"], "proj-b")
    base = f"{live_stowage.url}/compute/v2.1"
    with api_client(base) as admin:
        flavor = admin.post("/flavors", json={"flavor": {"name": "f", "vcpus": 1, "ram": 64,
                                                          "disk": 1}}).json()["flavor"]["id"]
    boot = {"server": {"name": "s", "flavorRef": flavor, "imageRef": made["id"],
                       "networks": "none"}}
    latest = {"openstack-api-version": "compute latest"}
    with api_client(base, token="bob:proj-b", roles=MEMBER, headers=latest) as bob, \
            api_client(base, token="carol:proj-c", roles=MEMBER, headers=latest) as carol:
        assert bob.get(f"/images/{made['id']}",
                       headers={"openstack-api-version": "compute 2.1"}).status_code == 200
        assert carol.get(f"/images/{made['id']}",
                         headers={"openstack-api-version": "compute 2.1"}).status_code == 404
        assert bob.post("/servers", json=boot).json()["badRequest"]["message"] == \
            f"Image {made['id']} is not active."
        assert carol.post("/servers", json=boot).json()["badRequest"]["message"] == \
            "Can not find requested image"


def test_a_member_downloads_the_shared_data(people: dict[str, httpx.Client]) -> None:
    alice, bob, carol = people["alice"], people["bob"], people["carol"]
    made = create(alice, "offered")
    assert alice.put(f"/v2/images/{made['id']}/file", content=b"shared-bytes",
                     headers={"content-type": "application/octet-stream"}).status_code == 204
    share(alice, made["id"], "proj-b")
    assert bob.get(f"/v2/images/{made['id']}/file").content == b"shared-bytes"
    assert carol.get(f"/v2/images/{made['id']}/file").status_code == 404


def test_concurrent_offers_respect_the_limit(people: dict[str, httpx.Client],
                                             live_stowage: LiveServer,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Eight offers at once, room for three: the image's row serialises them."""
    made = create(people["alice"], "offered")
    monkeypatch.setattr(members, "IMAGE_MEMBER_QUOTA", 3)
    base = f"{live_stowage.url}/image"

    def offer(i: int) -> int:
        with api_client(base, token="alice:proj-a", roles=MEMBER) as client:
            return share(client, made["id"], f"proj-{i}").status_code

    with ThreadPoolExecutor(8) as pool:
        statuses = sorted(pool.map(offer, range(8)))
    assert statuses == [200] * 3 + [413] * 5
    assert len(people["alice"].get(f"/v2/images/{made['id']}/members").json()["members"]) == 3
