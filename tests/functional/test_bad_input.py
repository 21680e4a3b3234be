"""Hostile input is a 400 or a 404 in each service's own error format, never a 500.

Covers the shared JSON loader (lone surrogates, NUL, deep nesting, NaN),
NUL in paths and queries on every service, bounded error bodies for huge bad
values, SQLite's bound-variable limit on PUT traits, and inventory keys that
are not class names.
"""

from __future__ import annotations

import json
import uuid

import httpx
import pytest

JSON = {"content-type": "application/json"}
# A bad value of 10 MB must come back as a small error body (Placement takes
# bodies of 16 MiB); Compute's bodies stop at 112 KiB (docs/security.md), so
# its bad values are as large as that allows.
HUGE = "x" * 10_000_000
LARGE = "x" * 50_000
SMALL_BODY = 10_000


def deep(levels: int) -> bytes:
    return b'{"name": ' + b"[" * levels + b"]" * levels + b"}"


@pytest.fixture
def rp(placement: httpx.Client) -> str:
    resp = placement.post("/resource_providers", json={"name": "cn1"})
    assert resp.status_code == 200, resp.text
    return str(resp.json()["uuid"])


def placement_error(resp: httpx.Response, status: int) -> str:
    assert resp.status_code == status, resp.text
    (error,) = resp.json()["errors"]
    assert error["status"] == status
    return str(error["detail"])


def provider_names(placement: httpx.Client) -> list[str]:
    return [p["name"] for p in placement.get("/resource_providers").json()["resource_providers"]]


@pytest.mark.parametrize("raw", [
    b'{"name": "\\ud800x"}',          # lone high surrogate
    b'{"name": "x\\udfff"}',          # lone low surrogate
    b'{"name": "a", "\\ud800": 1}',   # in a key
    b'{"name": "a\\u0000b"}',         # NUL
    b'{"name": NaN}',                 # not JSON
    deep(1000), deep(5000), deep(40),
], ids=["high", "low", "key", "nul", "nan", "deep1000", "deep5000", "deep40"])
def test_placement_unstorable_bodies_are_400(placement: httpx.Client, raw: bytes) -> None:
    detail = placement_error(placement.post("/resource_providers", content=raw, headers=JSON),
                             400)
    assert "Malformed JSON" in detail
    assert provider_names(placement) == []


def test_placement_nesting_within_the_limit_reaches_validation(placement: httpx.Client) -> None:
    detail = placement_error(placement.post("/resource_providers", content=deep(20),
                                            headers=JSON), 400)
    assert "JSON does not validate" in detail


@pytest.mark.parametrize("path", [
    "/resource_providers/%00", "/resource_providers/a%00b/inventories",
    "/resource_providers/%00/inventories/VCPU", "/resource_providers/%00/traits",
    "/resource_providers/%00/aggregates", "/resource_providers/%00/allocations",
    "/resource_providers/%00/usages", "/allocations/%00", "/traits/CUSTOM_%00",
    "/resource_classes/CUSTOM_%00",
])
def test_placement_nul_in_any_id_is_404(placement: httpx.Client, path: str) -> None:
    for method in ("GET", "PUT", "DELETE"):
        resp = placement.request(method, path, json={})
        placement_error(resp, 404)


def test_placement_nul_in_a_query_is_400(placement: httpx.Client, rp: str) -> None:
    for query in ("name=a%00", "uuid=%00", "in_tree=%00", "member_of=%00",
                  "required=CUSTOM_%00"):
        placement_error(placement.get(f"/resource_providers?{query}"), 400)
    placement_error(placement.get("/traits?name=in:CUSTOM_%00"), 400)


def test_placement_huge_bad_values_give_small_errors(placement: httpx.Client, rp: str) -> None:
    resp = placement.post("/resource_providers", json={"name": HUGE})
    assert len(resp.content) < SMALL_BODY
    assert "is too long" in placement_error(resp, 400)
    resp = placement.post("/resource_providers", json={"name": "n", HUGE: 1})
    assert len(resp.content) < SMALL_BODY
    assert "Additional properties are not allowed" in placement_error(resp, 400)
    resp = placement.put(f"/resource_providers/{rp}/aggregates",
                         json={"aggregates": [HUGE], "resource_provider_generation": 0})
    assert len(resp.content) < SMALL_BODY
    placement_error(resp, 400)
    assert provider_names(placement) == ["cn1"]


def test_put_traits_with_more_names_than_sqlite_variables(placement: httpx.Client,
                                                          rp: str) -> None:
    """260,000 names: above the 250,000 bound variables of Debian's SQLite build."""
    assert placement.put("/traits/CUSTOM_GOLD").status_code == 201
    names = ["CUSTOM_GOLD", "HW_CPU_X86_AVX2"] + [f"CUSTOM_T{i}" for i in range(260_000)]
    resp = placement.put(f"/resource_providers/{rp}/traits",
                         json={"traits": names, "resource_provider_generation": 0})
    detail = placement_error(resp, 400)
    assert "No such trait" in detail and "CUSTOM_T0" in detail
    assert len(resp.content) < SMALL_BODY
    listed = placement.get(f"/resource_providers/{rp}/traits").json()
    assert listed == {"traits": [], "resource_provider_generation": 0}


def test_put_traits_with_many_existing_names(placement: httpx.Client, rp: str) -> None:
    """More names than one chunk of a bulk lookup (500), all known: set, then shrink."""
    standard = sorted(placement.get("/traits").json()["traits"])
    assert len(standard) > 300
    custom = [f"CUSTOM_C{i:03}" for i in range(300)]
    for name in custom:
        assert placement.put(f"/traits/{name}").status_code == 201
    every = sorted(standard + custom)
    resp = placement.put(f"/resource_providers/{rp}/traits",
                         json={"traits": every, "resource_provider_generation": 0})
    assert resp.status_code == 200, resp.text
    assert sorted(resp.json()["traits"]) == every
    assert sorted(placement.get(f"/resource_providers/{rp}/traits").json()["traits"]) == every
    resp = placement.put(f"/resource_providers/{rp}/traits",
                         json={"traits": every[:3], "resource_provider_generation": 1})
    assert resp.status_code == 200, resp.text
    shown = placement.get(f"/resource_providers/{rp}/traits").json()
    assert (sorted(shown["traits"]), shown["resource_provider_generation"]) == (every[:3], 2)


@pytest.mark.parametrize("inventories", [
    {"bad-class": []}, {"bad-class": {}}, {"bad-class": {"total": 1}},
    {"VCPU": {"total": 4}, "bad-class": None}, {"": 1},
])
def test_inventory_keys_that_are_not_class_names(placement: httpx.Client, rp: str,
                                                 inventories: dict[str, object]) -> None:
    resp = placement.put(f"/resource_providers/{rp}/inventories",
                         json={"resource_provider_generation": 0, "inventories": inventories})
    detail = placement_error(resp, 400)
    assert f"Unknown resource class in inventory for resource provider {rp}" in detail
    assert "No such resource class" in detail
    assert placement.get(f"/resource_providers/{rp}/inventories").json()["inventories"] == {}


def test_reshaper_inventory_keys_that_are_not_class_names(placement: httpx.Client,
                                                          rp: str) -> None:
    body = {"inventories": {rp: {"resource_provider_generation": 0,
                                 "inventories": {"bad-class": []}}},
            "allocations": {}}
    # Nova's report client reshapes as its service user, which holds the service role.
    resp = placement.post("/reshaper", json=body, headers={"x-roles": "admin,service"})
    detail = placement_error(resp, 400)
    assert "malformed reshaper data: No such resource class bad-class" in detail


def compute_error(resp: httpx.Response, status: int, fault: str) -> str:
    assert resp.status_code == status, resp.text
    return str(resp.json()[fault]["message"])


def flavor(name: str) -> dict[str, object]:
    return {"flavor": {"name": name, "ram": 512, "vcpus": 1, "disk": 1}}


@pytest.mark.parametrize("raw", [
    b'{"flavor": {"name": "\\ud800x", "ram": 512, "vcpus": 1, "disk": 1}}',
    b'{"flavor": {"name": "a\\u0000", "ram": 512, "vcpus": 1, "disk": 1}}',
    b'{"flavor": {"name": "a", "ram": 512, "vcpus": 1, "disk": 1, "\\udc00": 1}}',
    deep(1000), deep(40),
], ids=["surrogate", "nul", "key", "deep1000", "deep40"])
def test_compute_unstorable_bodies_are_400(compute: httpx.Client, raw: bytes) -> None:
    compute_error(compute.post("/flavors", content=raw, headers=JSON), 400, "badRequest")
    assert compute.get("/flavors").json()["flavors"] == []


def test_compute_nul_in_a_server_group_name_is_400(compute: httpx.Client) -> None:
    resp = compute.post("/os-server-groups", json={
        "server_group": {"name": "g\u0000", "policy": "affinity"}})
    message = compute_error(resp, 400, "badRequest")
    assert "server_group/name" in message
    assert compute.get("/os-server-groups").json()["server_groups"] == []


@pytest.mark.parametrize("path", [
    "/servers/%00", "/servers/%00/action", "/servers/%00/os-instance-actions",
    "/flavors/%00", "/flavors/%00/os-extra_specs", "/os-server-groups/%00",
    "/os-migrations/%00", "/os-hypervisors/%00", "/os-services/%00",
])
def test_compute_nul_in_any_id_is_404(compute: httpx.Client, path: str) -> None:
    for method in ("GET", "POST", "PUT", "DELETE"):
        resp = compute.request(method, path, json={})
        compute_error(resp, 404, "itemNotFound")


def test_compute_nul_in_a_query_is_400(compute: httpx.Client) -> None:
    for path in ("/servers?name=a%00", "/servers/detail?host=%00", "/flavors?marker=%00"):
        compute_error(compute.get(path), 400, "badRequest")


def test_compute_huge_bad_values_give_small_errors(compute: httpx.Client) -> None:
    resp = compute.post("/flavors", json=flavor(LARGE))
    assert len(resp.content) < SMALL_BODY
    assert "Invalid input for field/attribute" in compute_error(resp, 400, "badRequest")
    resp = compute.post("/flavors", json={"flavor": {"name": "f", "ram": LARGE, "vcpus": 1,
                                                     "disk": 1}})
    assert len(resp.content) < SMALL_BODY
    compute_error(resp, 400, "badRequest")
    resp = compute.post("/os-server-groups", json={"server_group": {
        "name": "g", "policy": "affinity", LARGE: [LARGE]}})
    assert len(resp.content) < SMALL_BODY
    compute_error(resp, 400, "badRequest")


def image_error(resp: httpx.Response, status: int) -> str:
    assert resp.status_code == status, resp.text
    return str(resp.json()["message"])


@pytest.mark.parametrize("raw", [
    b'{"name": "\\ud800x"}', b'{"name": "a\\u0000"}', b'{"x_\\udbff": "v"}', deep(1000),
    b'{"name": Infinity}',
], ids=["surrogate", "nul", "key", "deep1000", "infinity"])
def test_image_unstorable_bodies_are_400(image: httpx.Client, raw: bytes) -> None:
    image_error(image.post("/v2/images", content=raw, headers=JSON), 400)
    assert image.get("/v2/images").json()["images"] == []


def test_image_nul_in_ids_and_queries(image: httpx.Client) -> None:
    for method in ("GET", "PATCH", "DELETE"):
        image_error(image.request(method, "/v2/images/%00"), 404)
    image_error(image.put("/v2/images/%00/file", content=b"x",
                          headers={"content-type": "application/octet-stream"}), 404)
    image_error(image.get("/v2/images?name=%00"), 400)


def test_image_huge_bad_values_give_small_errors(image: httpx.Client) -> None:
    resp = image.post("/v2/images", json={"name": LARGE})
    assert len(resp.content) < SMALL_BODY
    image_error(resp, 400)
    made = image.post("/v2/images", json={"name": "ok"})
    assert made.status_code == 201, made.text
    patch = [{"op": "replace", "path": "/min_ram", "value": LARGE}]
    resp = image.patch(f"/v2/images/{made.json()['id']}", content=json.dumps(patch),
                       headers={"content-type": "application/openstack-images-v2.1-json-patch"})
    assert len(resp.content) < SMALL_BODY
    image_error(resp, 400)
    assert image.get(f"/v2/images/{uuid.UUID(made.json()['id'])}").json()["min_ram"] == 0
