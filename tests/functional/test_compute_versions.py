"""Compute version documents and microversion negotiation, as clients discover them."""

from __future__ import annotations

import httpx
import pytest

from tests.functional.conftest import LiveServer


def test_versions_list_needs_no_token_and_links_absolutely(live_stowage: LiveServer) -> None:
    for path in ("/compute", "/compute/"):
        resp = httpx.get(live_stowage.url + path)
        assert resp.status_code == 200
        legacy, version = resp.json()["versions"]
        assert version["id"] == "v2.1" and version["status"] == "CURRENT"
        assert (version["min_version"], version["version"]) == ("2.1", "2.92")
        assert {"rel": "self", "href": f"{live_stowage.url}/compute/v2.1/"} in version["links"]
        assert (legacy["id"], legacy["status"]) == ("v2.0", "SUPPORTED")
        assert (legacy["min_version"], legacy["version"]) == ("", "")
        assert {"rel": "self", "href": f"{live_stowage.url}/compute/v2/"} in legacy["links"]


@pytest.mark.parametrize("path", ["/compute/v2", "/compute/v2/"])
def test_legacy_version_document_needs_no_token(live_stowage: LiveServer, path: str) -> None:
    resp = httpx.get(live_stowage.url + path)
    assert resp.status_code == 200
    assert resp.json()["version"]["id"] == "v2.0"


@pytest.mark.parametrize(("path", "names"), [
    ("/compute/v2.1/flavors", ("x-openstack-request-id", "x-compute-request-id")),
    ("/compute/v2.1/no-such-thing", ("x-openstack-request-id", "x-compute-request-id")),
    ("/placement/resource_providers", ("x-openstack-request-id",)),
    ("/image/v2/images", ("x-openstack-request-id",)),
    ("/network/v2.0/networks", ("x-openstack-request-id",)),
])
def test_every_answer_carries_its_request_id(
        live_stowage: LiveServer, path: str, names: tuple[str, ...]) -> None:
    headers = {"x-auth-token": "admin:admin", "openstack-api-version": "placement 1.39"}
    resp = httpx.get(live_stowage.url + path, headers=headers)
    ids = {resp.headers[name] for name in names}
    assert len(ids) == 1 and ids.pop().startswith("req-")
    assert "openstack-request-id" not in resp.headers


@pytest.mark.parametrize("path", ["/compute/v2.1", "/compute/v2.1/"])
def test_version_document_needs_no_token(live_stowage: LiveServer, path: str) -> None:
    resp = httpx.get(live_stowage.url + path)
    assert resp.status_code == 200
    version = resp.json()["version"]
    assert version["version"] == "2.92"
    assert version["links"][0] == {"rel": "self", "href": f"{live_stowage.url}/compute/v2.1/"}


def test_api_routes_need_a_token(live_stowage: LiveServer) -> None:
    resp = httpx.get(f"{live_stowage.url}/compute/v2.1/flavors")
    assert resp.status_code == 401
    assert resp.json()["unauthorized"]["code"] == 401


@pytest.mark.parametrize(("headers", "expected"), [
    ({}, "2.1"),
    ({"openstack-api-version": "compute 2.55"}, "2.55"),
    ({"openstack-api-version": "compute latest"}, "2.92"),
    ({"x-openstack-nova-api-version": "2.61"}, "2.61"),
    ({"openstack-api-version": "compute 2.75", "x-openstack-nova-api-version": "2.3"}, "2.75"),
    ({"openstack-api-version": "placement 1.39"}, "2.1"),
])
def test_negotiated_version_is_echoed_in_both_headers(
        compute: httpx.Client, headers: dict[str, str], expected: str) -> None:
    compute.headers.pop("openstack-api-version")
    resp = compute.get("/flavors", headers=headers)
    assert resp.status_code == 200
    assert resp.headers["openstack-api-version"] == f"compute {expected}"
    assert resp.headers["x-openstack-nova-api-version"] == expected
    vary = {v.strip().lower() for v in resp.headers["vary"].split(",")}
    assert {"openstack-api-version", "x-openstack-nova-api-version"} <= vary


@pytest.mark.parametrize(("version", "status", "fault"), [
    ("2.93", 406, "computeFault"), ("3.0", 406, "computeFault"), ("2.a", 400, "badRequest"),
])
def test_unsupported_or_malformed_versions_are_refused(
        compute: httpx.Client, version: str, status: int, fault: str) -> None:
    resp = compute.get("/flavors", headers={"openstack-api-version": f"compute {version}"})
    assert resp.status_code == status
    assert resp.json()[fault]["code"] == status


def test_unknown_route_and_method_use_nova_fault_names(compute: httpx.Client) -> None:
    missing = compute.get("/no-such-thing")
    assert missing.status_code == 404
    assert "itemNotFound" in missing.json()
    wrong = compute.patch("/flavors")
    assert wrong.status_code == 405
    assert "badMethod" in wrong.json()
