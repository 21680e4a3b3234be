"""Glance's metadata definitions over HTTP: namespaces, resource types, objects,
properties and tags, with Glance's statuses, refusals and visibility.

    admin           writes (the metadef_admin rule)
    alice (proj-a)  a project member: reads what she may see, writes nothing
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from stowage.image import metadefs, tables
from tests.functional.conftest import MEMBER, LiveServer, api_client

NS = "/v2/metadefs/namespaces"


@pytest.fixture
def admin(image: httpx.Client, live_stowage: LiveServer) -> httpx.Client:
    """The admin client, on empty tables with the standard resource types seeded."""
    metadefs.seed_resource_types(live_stowage.db)
    return image


@pytest.fixture
def alice(admin: httpx.Client, live_stowage: LiveServer) -> Iterator[httpx.Client]:
    with api_client(f"{live_stowage.url}/image", token="alice:proj-a", roles=MEMBER) as c:
        yield c


def make(client: httpx.Client, name: str, **fields: Any) -> dict[str, Any]:
    resp = client.post(NS, json={"namespace": name, **fields})
    assert resp.status_code == 201, resp.text
    return dict(resp.json())


def names(client: httpx.Client, **params: str) -> list[str]:
    resp = client.get(NS, params=params)
    assert resp.status_code == 200, resp.text
    return sorted(n["namespace"] for n in resp.json()["namespaces"])


def test_namespace_lifecycle(admin: httpx.Client) -> None:
    created = admin.post(NS, json={"namespace": "ns-loc"})
    assert created.headers["location"].endswith("/v2/metadefs/namespaces/ns-loc")
    made = make(admin, "ns-life", display_name="Life", description="d", visibility="public",
                protected=True, resource_type_associations=[{"name": "OS::Glance::Image",
                                                             "prefix": "hw_"}],
                properties={"p1": {"title": "P1", "type": "string", "enum": ["a", "b"]}},
                objects=[{"name": "o1", "required": ["p1"]}], tags=[{"name": "t1"}])
    assert (made["namespace"], made["visibility"], made["protected"], made["owner"],
            made["schema"], made["self"]) == ("ns-life", "public", True, "admin",
                                              "/v2/schemas/metadefs/namespace",
                                              "/v2/metadefs/namespaces/ns-life")
    shown = admin.get(f"{NS}/ns-life").json()
    assert shown["properties"] == {"p1": {"name": "p1", "title": "P1", "type": "string",
                                          "enum": ["a", "b"]}}
    assert [o["name"] for o in shown["objects"]] == ["o1"]
    assert shown["tags"] == [{"name": "t1"}]
    assert shown["resource_type_associations"][0]["prefix"] == "hw_"
    assert shown["objects"][0]["self"] == "/v2/metadefs/namespaces/ns-life/objects/o1"
    # As the resource type knows them: property names with the association's prefix.
    as_image = admin.get(f"{NS}/ns-life", params={"resource_type": "OS::Glance::Image"}).json()
    assert list(as_image["properties"]) == ["hw_p1"]
    assert as_image["objects"][0]["required"] == ["hw_p1"]
    as_flavor = admin.get(f"{NS}/ns-life", params={"resource_type": "OS::Nova::Flavor"}).json()
    assert list(as_flavor["properties"]) == ["p1"]
    image_rt = {"resource_type": "OS::Glance::Image"}
    one = admin.get(f"{NS}/ns-life/properties/hw_p1", params=image_rt)
    assert (one.status_code, one.json()["name"]) == (200, "p1")
    assert admin.get(f"{NS}/ns-life/properties/p1", params=image_rt).status_code == 404
    assert names(admin, resource_types="OS::Glance::Image") == ["ns-life"]
    assert admin.delete(f"{NS}/ns-loc").status_code == 204
    assert names(admin, resource_types="OS::Nova::Flavor") == []
    # Protected: not deleted, nor emptied.
    refused = admin.delete(f"{NS}/ns-life")
    assert refused.status_code == 403
    assert "is protected and cannot be deleted" in refused.text
    assert admin.delete(f"{NS}/ns-life/objects").status_code == 403
    one = admin.delete(f"{NS}/ns-life/objects/o1")
    assert one.status_code == 403
    assert "Metadata definition object o1 is protected" in one.text
    assert admin.delete(f"{NS}/ns-life/tags/t1").status_code == 403
    assert admin.delete(f"{NS}/ns-life/resource_types/OS::Glance::Image").status_code == 403
    assert admin.get(f"{NS}/ns-life/tags/t1").status_code == 200
    changed = admin.put(f"{NS}/ns-life", json={"namespace": "ns-renamed",
                                               "visibility": "private", "protected": False})
    assert changed.status_code == 200, changed.text
    assert (changed.json()["visibility"], changed.json()["protected"]) == ("private", False)
    assert admin.get(f"{NS}/ns-life").status_code == 404
    # What it held followed the rename; deleting it deletes them too.
    assert admin.get(f"{NS}/ns-renamed/objects/o1").status_code == 200
    assert admin.delete(f"{NS}/ns-renamed").status_code == 204
    assert admin.get(f"{NS}/ns-renamed").status_code == 404


def test_objects_properties_tags(admin: httpx.Client, live_stowage: LiveServer) -> None:
    make(admin, "ns-items")
    base = f"{NS}/ns-items"
    obj = admin.post(f"{base}/objects", json={"name": "o", "description": "an object"})
    assert obj.status_code == 201, obj.text
    assert obj.json()["self"] == f"{base}/objects/o"
    assert admin.post(f"{base}/objects", json={"name": "o"}).status_code == 409
    moved = admin.put(f"{base}/objects/o", json={"name": "o2"})
    assert (moved.status_code, moved.json()["name"]) == (200, "o2")
    assert [o["name"] for o in admin.get(f"{base}/objects").json()["objects"]] == ["o2"]
    prop = admin.post(f"{base}/properties", json={"name": "p", "title": "T", "type": "string"})
    assert prop.status_code == 201, prop.text
    no_type = admin.post(f"{base}/properties", json={"name": "q", "title": "T"})
    assert no_type.status_code == 400
    assert admin.get(f"{base}/properties").json()["properties"] == {
        "p": {"name": "p", "title": "T", "type": "string"}}
    tags = admin.post(f"{base}/tags", json={"tags": [{"name": "a"}, {"name": "b"}]})
    assert tags.status_code == 201, tags.text
    again = admin.post(f"{base}/tags", json={"tags": [{"name": "c"}]},
                       headers={"x-openstack-append": "true"})
    assert again.status_code == 201
    listed = [t["name"] for t in admin.get(f"{base}/tags").json()["tags"]]
    assert listed == ["a", "b", "c"]
    assert admin.post(f"{base}/tags/A").status_code == 409  # case-insensitive
    replaced = admin.post(f"{base}/tags", json={"tags": [{"name": "z"}]})
    assert [t["name"] for t in replaced.json()["tags"]] == ["z"]
    # Appending a tag already held: 409, and nothing appended.
    clash = admin.post(f"{base}/tags", json={"tags": [{"name": "w"}, {"name": "Z"}]},
                       headers={"x-openstack-append": "true"})
    assert clash.status_code == 409
    assert [t["name"] for t in admin.get(f"{base}/tags").json()["tags"]] == ["z"]
    assert admin.post(f"{base}/tags/y").status_code == 201
    assert admin.put(f"{base}/tags/y", json={"name": "x"}).json()["name"] == "x"
    assert admin.delete(f"{base}/tags/x").status_code == 204
    assert admin.delete(f"{base}/tags/x").status_code == 404
    assert admin.delete(f"{base}/tags").status_code == 204
    assert admin.get(f"{base}/tags").json()["tags"] == []
    assert admin.delete(f"{base}/properties/p").status_code == 204
    assert admin.get(f"{base}/properties/p").status_code == 404
    assert admin.delete(f"{base}").status_code == 204
    with live_stowage.db.read() as conn:
        for table in (tables.metadef_objects, tables.metadef_properties, tables.metadef_tags):
            left = conn.execute(sa.select(sa.func.count()).select_from(table)).scalar()
            assert left == 0, table.name


def test_resource_types_and_associations(admin: httpx.Client) -> None:
    listed = [r["name"] for r in admin.get("/v2/metadefs/resource_types").json()
              ["resource_types"]]
    assert "OS::Glance::Image" in listed and "OS::Nova::Flavor" in listed
    make(admin, "ns-rt")
    made = admin.post(f"{NS}/ns-rt/resource_types", json={"name": "OS::Nova::Flavor"})
    assert (made.status_code, made.json()["name"]) == (201, "OS::Nova::Flavor")
    again = admin.post(f"{NS}/ns-rt/resource_types", json={"name": "OS::Nova::Flavor"})
    assert again.status_code == 409
    # As Glance: an unknown resource type is created by its first association.
    unknown = admin.post(f"{NS}/ns-rt/resource_types", json={"name": "OS::Fz::Thing"})
    assert unknown.status_code == 201, unknown.text
    listed = [r["name"] for r in admin.get("/v2/metadefs/resource_types").json()
              ["resource_types"]]
    assert "OS::Fz::Thing" in listed
    missing = admin.delete(f"{NS}/ns-rt/resource_types/OS::Nope")
    assert missing.status_code == 404
    assert "resource-type with name=OS::Nope" in missing.text
    linked = admin.get(f"{NS}/ns-rt/resource_types").json()["resource_type_associations"]
    assert [a["name"] for a in linked] == ["OS::Fz::Thing", "OS::Nova::Flavor"]
    assert admin.delete(f"{NS}/ns-rt/resource_types/OS::Nova::Flavor").status_code == 204
    assert admin.delete(f"{NS}/ns-rt/resource_types/OS::Nova::Flavor").status_code == 404


def test_duplicates_and_bad_input_change_nothing(admin: httpx.Client) -> None:
    make(admin, "ns-dup")
    dup = admin.post(NS, json={"namespace": "ns-dup"})
    assert dup.status_code == 409
    assert "ns-dup" in dup.text
    assert admin.post(NS, json={"namespace": "x" * 81}).status_code == 400
    assert admin.post(NS, json={"namespace": "ns-v", "visibility": "shared"}).status_code == 400
    long_prop = admin.post(NS, json={"namespace": "ns-p", "properties": {
        "p" * 81: {"title": "t", "type": "string"}}})
    assert long_prop.status_code == 400
    assert admin.post(NS, json={"namespace": "ns-ro", "self": "/x"}).status_code == 403
    # A nested object that clashes: nothing of the namespace is kept.
    clash = admin.post(NS, json={"namespace": "ns-half", "tags": [{"name": "a"},
                                                                  {"name": "A"}]})
    assert clash.status_code == 409
    assert names(admin) == ["ns-dup"]
    assert admin.get(f"{NS}/nope").status_code == 404
    assert admin.get(f"{NS}/nope/objects").status_code == 404
    hidden = admin.get(f"{NS}/nope/properties")
    assert hidden.status_code == 404
    assert "Namespace nope not found" in hidden.text
    assert admin.get(f"{NS}/ns-dup/objects/nope").status_code == 404
    assert admin.put(f"{NS}/nope", json={"namespace": "nope"}).status_code == 404
    make(admin, "ns-other")
    taken = admin.put(f"{NS}/ns-other", json={"namespace": "ns-dup"})
    assert taken.status_code == 409
    assert admin.get(f"{NS}/ns-other").status_code == 200


def test_members_read_public_and_own_write_nothing(admin: httpx.Client,
                                                   alice: httpx.Client) -> None:
    make(admin, "ns-public", visibility="public")
    make(admin, "ns-private")
    make(admin, "ns-alice", owner="proj-a")
    assert names(alice) == ["ns-alice", "ns-public"]
    assert names(admin) == ["ns-alice", "ns-private", "ns-public"]
    assert alice.get(f"{NS}/ns-private").status_code == 404
    assert alice.get(f"{NS}/ns-public/objects").status_code == 200
    refused = alice.post(NS, json={"namespace": "ns-mine"})
    assert refused.status_code == 403
    assert "add_metadef_namespace" in refused.text
    assert alice.delete(f"{NS}/ns-public").status_code == 403
    assert alice.delete(f"{NS}/ns-private").status_code == 404
    assert alice.post(f"{NS}/ns-alice/tags/t").status_code == 403
    assert alice.put(f"{NS}/ns-alice", json={"namespace": "ns-alice"}).status_code == 403
    assert names(admin) == ["ns-alice", "ns-private", "ns-public"]


def test_listing_pages_and_sorts(admin: httpx.Client) -> None:
    for name in ("ns-c", "ns-a", "ns-b"):
        make(admin, name)
    first = admin.get(NS, params={"limit": "2", "sort_key": "namespace",
                                  "sort_dir": "asc"}).json()
    assert [n["namespace"] for n in first["namespaces"]] == ["ns-a", "ns-b"]
    rest = admin.get(first["next"]).json()
    assert [n["namespace"] for n in rest["namespaces"]] == ["ns-c"]
    assert admin.get(NS, params={"sort_key": "owner"}).status_code == 400
    assert admin.get(NS, params={"limit": "x"}).status_code == 400


def test_concurrent_creates_of_one_name(admin: httpx.Client) -> None:
    with ThreadPoolExecutor(4) as pool:
        codes = sorted(pool.map(lambda _: admin.post(NS, json={"namespace": "ns-race"})
                                .status_code, range(4)))
    assert codes == [201, 409, 409, 409]


@pytest.mark.parametrize("name", ["namespace", "namespaces", "object", "objects", "property",
                                  "properties", "tag", "tags", "resource_type",
                                  "resource_types"])
def test_schemas(image: httpx.Client, name: str) -> None:
    resp = image.get(f"/v2/schemas/metadefs/{name}")
    assert resp.status_code == 200
    expected = {"resource_type": "resource_type_association",
                "resource_types": "resource_type_associations"}.get(name, name)
    assert resp.json()["name"] == expected
