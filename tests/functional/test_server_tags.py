"""/servers/{id}/tags (2.26) over HTTP: the six calls, the limits, views and list filters."""

from __future__ import annotations

from stowage.compute import instances as inst
from stowage.compute import states
from stowage.compute import tags as tag_records
from tests.functional.conftest import Cloud
from tests.functional.serverdata import at, member, reader, stored_server


def _tags(cloud: Cloud, server: str) -> list[str]:
    with cloud.live.cell_db.read() as conn:
        return tag_records.tags_of(conn, server)


def test_add_show_replace_and_delete(cloud: Cloud) -> None:
    server = stored_server(cloud)
    path = f"/servers/{server}/tags"
    with member(cloud) as alice:
        added = alice.put(path + "/blue")
        assert added.status_code == 201
        assert added.headers["location"].endswith(f"/v2.1/servers/{server}/tags/blue")
        assert alice.put(path + "/blue").status_code == 204  # already there
        assert alice.put(path + "/green", json=None).status_code == 201
        assert alice.get(path + "/blue").status_code == 204
        missing = alice.get(path + "/red")
        assert (missing.status_code, missing.json()["itemNotFound"]["message"]) == \
            (404, f"Server {server} has no tag 'red'")
        assert alice.get(path).json() == {"tags": ["blue", "green"]}
        assert alice.get(f"/servers/{server}").json()["server"]["tags"] == ["blue", "green"]
        replaced = alice.put(path, json={"tags": ["x", "y", "x"]})
        assert (replaced.status_code, replaced.json()) == (200, {"tags": ["x", "y"]})
        assert alice.delete(path + "/x").status_code == 204
        assert alice.delete(path + "/x").status_code == 404
        assert _tags(cloud, server) == ["y"]
        assert alice.delete(path).status_code == 204
        assert alice.get(path).json() == {"tags": []}
    with member(cloud, version="2.25") as old:
        assert old.get(path).status_code == 404
        assert old.put(path + "/blue").status_code == 404
        assert "tags" not in old.get(f"/servers/{server}").json()["server"]


def test_limits_and_bad_tags(cloud: Cloud) -> None:
    server = stored_server(cloud)
    path = f"/servers/{server}/tags"
    with member(cloud) as alice:
        bad = alice.put(path + "/a,b")
        assert bad.status_code == 400
        assert bad.json()["badRequest"]["message"].startswith(
            "Tag 'a,b' is invalid. It must be a non empty string without characters '/' and "
            "','.")
        assert alice.put(path + "/" + "t" * 61).status_code == 400
        assert alice.put(path + "/ok", json={"no": "body"}).status_code == 400
        assert alice.put(path, json={"tags": [f"t{i}" for i in range(51)]}).status_code == 400
        assert alice.put(path, json={"tags": ["a/b"]}).status_code == 400
        assert alice.put(path, json={"tags": [f"t{i}" for i in range(50)]}).status_code == 200
        full = alice.put(path + "/one-more")
        assert (full.status_code, full.json()["badRequest"]["message"]) == \
            (400, "The number of tags exceeded the per-server limit 50")
    assert len(_tags(cloud, server)) == 50


def test_policy_and_state(cloud: Cloud) -> None:
    server = stored_server(cloud)
    building = stored_server(cloud, vm_state=states.BUILDING, task_state="scheduling")
    with reader(cloud) as bob:
        assert bob.get(f"/servers/{server}/tags").status_code == 200
        assert bob.put(f"/servers/{server}/tags/x").status_code == 403
    with member(cloud, "eve:p2") as eve:
        assert eve.put(f"/servers/{server}/tags/x").status_code == 404
    with member(cloud) as alice:
        busy = alice.put(f"/servers/{building}/tags/x")
        assert (busy.status_code, busy.json()["conflictingRequest"]["message"]) == \
            (409, f"Cannot 'update tag' instance {building} while it is in vm_state building")
    assert _tags(cloud, server) == [] and _tags(cloud, building) == []


def test_list_filters(cloud: Cloud) -> None:
    both = stored_server(cloud, display_name="both")
    red = stored_server(cloud, display_name="red")
    stored_server(cloud, display_name="none")
    with member(cloud) as alice:
        alice.put(f"/servers/{both}/tags", json={"tags": ["red", "blue"]})
        alice.put(f"/servers/{red}/tags", json={"tags": ["red"]})

        def names(**params: str) -> set[str]:
            found = alice.get("/servers/detail", params=params).json()["servers"]
            return {s["name"] for s in found}

        assert names(tags="red,blue") == {"both"}
        assert names(**{"tags-any": "blue,red"}) == {"both", "red"}
        assert names(**{"not-tags": "red,blue"}) == {"red", "none"}
        assert names(**{"not-tags-any": "blue"}) == {"red", "none"}
        assert names(tags="red", **{"not-tags-any": "blue"}) == {"red"}
        detail = {s["name"]: s["tags"] for s in
                  alice.get("/servers/detail").json()["servers"]}
        assert detail == {"both": ["blue", "red"], "red": ["red"], "none": []}


def test_deleting_a_server_drops_its_tags(cloud: Cloud) -> None:
    server = stored_server(cloud, host=None, vm_state=states.ERROR)
    assert cloud.compute.put(f"/servers/{server}/tags", json={"tags": ["a"]}).status_code == 409
    active = stored_server(cloud)
    assert cloud.compute.put(f"/servers/{active}/tags", json={"tags": ["a"]}).status_code == 200
    with cloud.live.cell_db.write() as conn:
        inst.soft_delete(conn, active)
    assert _tags(cloud, active) == []
    assert cloud.compute.get("/servers/detail", params={"tags": "a"},
                             headers=at("2.26")).json()["servers"] == []


def test_a_unicode_tag_gets_an_ascii_location(cloud: Cloud) -> None:
    """A Location header is ASCII: the tag goes in percent-encoded (an astral-plane tag
    was once stored and then answered with a 500)."""
    server = stored_server(cloud)
    tag = "\U00052bf5ð\U0007ab3d"
    with member(cloud) as alice:
        added = alice.put(f"/servers/{server}/tags/{tag}")
        assert added.status_code == 201, added.text
        location = added.headers["location"]
        assert location.isascii() and location.endswith(
            f"/servers/{server}/tags/%F1%92%AF%B5%C3%B0%F1%BA%AC%BD")
        assert alice.get(location).status_code == 204
    assert _tags(cloud, server) == [tag]
