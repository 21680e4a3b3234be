"""With the built-in identity service on, every service checks tokens, and roles drive policy.

- without a token (or with a made-up one) each service answers 401 in its own
  error format, with keystonemiddleware's `WWW-Authenticate` header; version
  documents stay public;
- a reader's token may look but not boot a server; an admin's may boot;
- the identity read APIs answer as Keystone's default policy says.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from stowage.compute.hosts import HostConfig
from tests.conftest import BACKENDS
from tests.functional.conftest import LiveServer
from tests.functional.identity import identity_server, login, token_client

V3 = "/identity/v3"


@pytest.fixture(scope="module", params=BACKENDS)
def live(request: pytest.FixtureRequest) -> Iterator[LiveServer]:
    """A server of its own, with only the drawn directory: the directory reads below are
    compared whole, and the session's `live_identity` gets other modules' writes (the
    directory fuzzer's, test_identity_writes') when xdist deals them to the same worker."""
    with identity_server(request.param) as server:
        yield server


@pytest.fixture(scope="module")
def tokens(live: LiveServer) -> dict[str, str]:
    return {"admin": login(live, "admin", "admin"), "alice": login(live, "alice", "alpha"),
            "rita": login(live, "rita", "alpha"),
            "dora": login(live, "dora", scope={"domain": {"name": "Default"}})}


# service -> (a path that needs a token, the error body's top-level key, a public path)
SERVICES = {
    "placement": ("/placement/resource_providers", "errors", "/placement/"),
    "compute": ("/compute/v2.1/servers", "unauthorized", "/compute/"),
    "image": ("/image/v2/images", "message", "/image/"),
    "network": ("/network/v2.0/networks", "NeutronError", "/network/"),
    "identity": (f"{V3}/projects", "error", f"{V3}"),
}


@pytest.mark.parametrize("service", SERVICES)
def test_each_service_wants_a_valid_token(live: LiveServer, service: str) -> None:
    path, key, public = SERVICES[service]
    for headers in ({}, {"x-auth-token": "admin"}, {"x-auth-token": "made-up"}):
        resp = httpx.get(f"{live.url}{path}", headers=headers, timeout=30)
        assert resp.status_code == 401, (headers, resp.text)
        assert key in resp.json()
        assert resp.headers["www-authenticate"] == f'Keystone uri="{live.url}/identity"'
    assert httpx.get(f"{live.url}{public}", timeout=30).status_code in (200, 300)


def _image(live: LiveServer, token: str) -> str:
    with token_client(live, token, "/image") as client:
        resp = client.post("/v2/images", json={"name": "cirros", "disk_format": "qcow2",
                                               "container_format": "bare",
                                               "visibility": "public"})
        assert resp.status_code == 201, resp.text
        image_id = str(resp.json()["id"])
        resp = client.put(f"/v2/images/{image_id}/file", content=b"x",
                          headers={"content-type": "application/octet-stream"})
        assert resp.status_code in (201, 204), resp.text
    return image_id


def test_reader_cannot_boot_a_server_and_admin_can(live: LiveServer,
                                                   tokens: dict[str, str]) -> None:
    assert live.plane is not None
    live.plane.add_host(HostConfig(name="idhost1"))
    try:
        compute = {"openstack-api-version": "compute 2.90"}
        with token_client(live, tokens["admin"], "/compute/v2.1", compute) as admin, \
                token_client(live, tokens["rita"], "/compute/v2.1", compute) as reader:
            flavor = admin.post("/flavors", json={"flavor": {"name": "id.tiny", "vcpus": 1,
                                                             "ram": 64, "disk": 1}})
            assert flavor.status_code == 200, flavor.text
            body = {"server": {"name": "s1", "flavorRef": flavor.json()["flavor"]["id"],
                               "imageRef": _image(live, tokens["admin"]), "networks": "none"}}
            refused = reader.post("/servers", json=body)
            assert refused.status_code == 403, refused.text
            assert refused.json()["forbidden"]["message"] == (
                "Policy does not allow os_compute_api:servers:create to be performed.")
            assert reader.get("/servers").json()["servers"] == []
            booted = admin.post("/servers", json=body)
            assert booted.status_code == 202, booted.text
            assert live.plane.drain(60)
            server = admin.get(f"/servers/{booted.json()['server']['id']}").json()["server"]
            # The server belongs to the token's user and project, as with Keystone.
            token = httpx.get(f"{live.url}{V3}/auth/tokens", timeout=30, headers={
                "x-auth-token": tokens["admin"], "x-subject-token": tokens["admin"]})
            assert server["tenant_id"] == token.json()["token"]["project"]["id"]
            assert server["user_id"] == token.json()["token"]["user"]["id"]
            assert server["status"] == "ACTIVE"
            assert admin.delete(f"/servers/{server['id']}").status_code == 204
            assert live.plane.drain(60)
    finally:
        live.plane.stop_host("idhost1")


def test_placement_is_admin_only(live: LiveServer, tokens: dict[str, str]) -> None:
    with token_client(live, tokens["alice"], "/placement") as member:
        assert member.get("/resource_providers").status_code == 403
    with token_client(live, tokens["admin"], "/placement") as admin:
        assert admin.get("/resource_providers").status_code == 200


def _get(live: LiveServer, token: str, path: str) -> httpx.Response:
    return httpx.get(f"{live.url}{V3}{path}", headers={"x-auth-token": token}, timeout=30)


def test_directory_reads_follow_keystone_policy(live: LiveServer,
                                                tokens: dict[str, str]) -> None:
    admin, alice, dora = tokens["admin"], tokens["alice"], tokens["dora"]
    projects = _get(live, admin, "/projects").json()["projects"]
    assert {p["name"] for p in projects} == {"admin", "alpha", "closed"}
    alpha = next(p for p in projects if p["name"] == "alpha")
    assert _get(live, admin, "/projects?name=alpha").json()["projects"] == [alpha]
    assert _get(live, admin, "/projects?enabled=false").json()["projects"][0]["name"] == "closed"
    assert _get(live, dora, "/projects").status_code == 200  # a domain reader
    refused = _get(live, alice, "/projects")
    assert refused.status_code == 403
    assert refused.json()["error"]["message"] == (
        "You are not authorized to perform the requested action: identity:list_projects.")
    assert _get(live, alice, f"/projects/{alpha['id']}").json()["project"] == alpha
    admin_project = next(p for p in projects if p["name"] == "admin")
    assert _get(live, alice, f"/projects/{admin_project['id']}").status_code == 403
    assert _get(live, admin, "/projects/nope").status_code == 404

    users = {u["name"]: u for u in _get(live, admin, "/users").json()["users"]}
    assert set(users) == {"admin", "alice", "rita", "dora", "nobody", "gone"}
    assert users["gone"]["enabled"] is False
    assert all("scrypt" not in str(u) and "password_hash" not in u for u in users.values())
    assert _get(live, alice, f"/users/{users['alice']['id']}").json()["user"] == users["alice"]
    assert _get(live, alice, f"/users/{users['rita']['id']}").status_code == 403
    assert _get(live, alice, "/users").status_code == 403
    mine = _get(live, alice, f"/users/{users['alice']['id']}/projects").json()["projects"]
    assert {p["name"] for p in mine} == {"alpha"}  # "closed" is disabled
    auth_projects = _get(live, alice, "/auth/projects").json()["projects"]
    assert [p["name"] for p in auth_projects] == ["alpha"]

    roles = _get(live, admin, "/roles").json()["roles"]
    assert {r["name"] for r in roles} == {"admin", "manager", "member", "reader", "service"}
    assert _get(live, alice, "/roles").status_code == 403
    assert [d["id"] for d in _get(live, admin, "/domains").json()["domains"]] == ["default"]
    assert _get(live, alice, "/domains/default").json()["domain"]["name"] == "Default"
    assert _get(live, alice, "/domains").status_code == 403


def test_role_assignments_with_names_and_effective(live: LiveServer,
                                                   tokens: dict[str, str]) -> None:
    admin = tokens["admin"]
    users = {u["name"]: u["id"] for u in _get(live, admin, "/users").json()["users"]}
    direct = _get(live, admin, f"/role_assignments?user.id={users['alice']}&include_names")
    rows = direct.json()["role_assignments"]
    assert sorted((r["role"]["name"], r["scope"]["project"]["name"]) for r in rows) == [
        ("member", "alpha"), ("member", "closed")]
    assert rows[0]["user"]["name"] == "alice"
    effective = _get(live, admin, f"/role_assignments?user.id={users['admin']}&effective")
    assert len(effective.json()["role_assignments"]) == 4  # admin, manager, member, reader
    domain = _get(live, admin, "/role_assignments?scope.domain.id=default")
    assert [r["user"]["id"] for r in domain.json()["role_assignments"]] == [users["dora"]]
    both = _get(live, admin, "/role_assignments?scope.domain.id=default&scope.project.id=x")
    assert both.status_code == 400
    assert _get(live, tokens["alice"], "/role_assignments").status_code == 403


def test_catalog_resources(live: LiveServer, tokens: dict[str, str]) -> None:
    admin = tokens["admin"]
    services = _get(live, admin, "/services").json()["services"]
    assert {s["type"] for s in services} == {"identity", "compute", "placement", "image",
                                             "network"}
    compute = _get(live, admin, "/services?type=compute").json()["services"]
    public = _get(live, admin, f"/endpoints?interface=public&service_id={compute[0]['id']}")
    assert [e["url"] for e in public.json()["endpoints"]] == [f"{live.url}/compute/v2.1"]
    assert _get(live, tokens["alice"], "/services").status_code == 403
    assert [r["id"] for r in _get(live, tokens["alice"], "/regions").json()["regions"]] == [
        "RegionOne"]
    catalog = _get(live, tokens["alice"], "/auth/catalog").json()["catalog"]
    assert {s["type"] for s in catalog} == {s["type"] for s in services}
    unscoped = login(live, "nobody")
    for token in (unscoped, tokens["dora"]):  # unscoped, domain-scoped
        refused = _get(live, token, "/auth/catalog")
        assert refused.status_code == 403
        assert refused.json()["error"]["message"] == (
            "A project-scoped token is required to produce a service catalog.")


def test_tokens_without_a_project_are_refused_or_served_never_an_error(
        live: LiveServer, tokens: dict[str, str]) -> None:
    """A domain-scoped or unscoped token has no project: services must still answer sanely."""
    unscoped = login(live, "nobody")
    paths = ["/compute/v2.1/servers", "/compute/v2.1/flavors", "/placement/resource_providers",
             "/image/v2/images", "/network/v2.0/networks", "/network/v2.0/ports"]
    for token in (tokens["dora"], unscoped):
        for path in paths:
            resp = httpx.get(f"{live.url}{path}", headers={"x-auth-token": token}, timeout=30)
            assert resp.status_code in (200, 403), (path, resp.status_code, resp.text)
