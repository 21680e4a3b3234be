"""The Identity admin API writes the directory, as Tempest's dynamic credentials use it:

    admin ──POST /v3/projects──▶ project p ◀──PUT grant member── user u (POST /v3/users)
      u ──POST /v3/auth/tokens──▶ token scoped to p ──▶ compute answers it
    admin ──DELETE u / p, PATCH u (password, enabled)──▶ u's tokens are revoked

- only the admin role writes (403 naming the Keystone rule for anyone else);
- a name already taken (in the database or the settings file) is a 409;
- the settings file's users, projects, roles and grants are immutable (403);
- bad bodies are 400s in Keystone's format and change nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from stowage.identity.tables import identity_assignments, identity_projects, identity_users
from tests.functional.conftest import LiveServer
from tests.functional.identity import login, password_body, token_client

V3 = "/identity/v3"


@pytest.fixture(scope="module")
def live(live_identity: LiveServer) -> LiveServer:
    return live_identity


@pytest.fixture(scope="module")
def admin(live: LiveServer) -> Iterator[httpx.Client]:
    with token_client(live, login(live, "admin", "admin"), V3) as client:
        yield client


@pytest.fixture(scope="module")
def targets(admin: httpx.Client) -> dict[str, str]:
    """A user and a project the bad requests aim at."""
    return {"user": _user(admin)["id"], "project": _project(admin)["id"]}


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _project(admin: httpx.Client, **extra: Any) -> dict[str, Any]:
    resp = admin.post("/projects", json={"project": {"name": _name("p"), **extra}})
    assert resp.status_code == 201, resp.text
    project: dict[str, Any] = resp.json()["project"]
    return project


def _user(admin: httpx.Client, password: str = "pw-1", **extra: Any) -> dict[str, Any]:
    resp = admin.post("/users", json={"user": {"name": _name("u"), "password": password,
                                               "domain_id": "default", **extra}})
    assert resp.status_code == 201, resp.text
    user: dict[str, Any] = resp.json()["user"]
    return user


def _role_id(admin: httpx.Client, name: str) -> str:
    roles = admin.get("/roles").json()["roles"]
    return str(next(r["id"] for r in roles if r["name"] == name))


def _member_of_new_project(live: LiveServer, admin: httpx.Client) -> tuple[dict[str, Any],
                                                                            dict[str, Any], str]:
    """A new project, a new user holding member on it, and that user's token."""
    project, user = _project(admin), _user(admin)
    member = _role_id(admin, "member")
    assert admin.put(f"/projects/{project['id']}/users/{user['id']}/roles/{member}"
                     ).status_code == 204
    token = login(live, user["name"], project["name"], password="pw-1")
    return project, user, token


def _compute_status(live: LiveServer, token: str) -> int:
    resp = httpx.get(f"{live.url}/compute/v2.1/servers", headers={"x-auth-token": token},
                     timeout=30)
    return resp.status_code


def _error(resp: httpx.Response, status: int) -> str:
    assert resp.status_code == status, resp.text
    body = resp.json()["error"]
    assert body["code"] == status
    return str(body["message"])


def test_created_user_logs_in_to_created_project(live: LiveServer,
                                                 admin: httpx.Client) -> None:
    project = _project(admin, description="made by Tempest")
    assert uuid.UUID(hex=project["id"]).version == 4 and len(project["id"]) == 32
    assert (project["domain_id"], project["enabled"], project["description"]) == (
        "default", True, "made by Tempest")
    user = _user(admin, email="u@example.org", default_project_id=project["id"])
    assert "password" not in user and user["email"] == "u@example.org"
    assert user["default_project_id"] == project["id"] and user["options"] == {}
    member = _role_id(admin, "member")
    grant = f"/projects/{project['id']}/users/{user['id']}/roles/{member}"
    assert admin.head(grant).status_code == 404
    for _ in range(2):  # a second grant of a held role changes nothing
        assert admin.put(grant).status_code == 204
    assert admin.head(grant).status_code == 204
    listed = admin.get(f"/projects/{project['id']}/users/{user['id']}/roles").json()
    assert [r["name"] for r in listed["roles"]] == ["member"]
    resp = httpx.post(f"{live.url}{V3}/auth/tokens?nocatalog", timeout=30,
                      json=password_body(user["name"], password="pw-1"))
    assert resp.status_code == 201, resp.text
    body = resp.json()["token"]
    assert body["project"]["id"] == project["id"]
    assert {r["name"] for r in body["roles"]} == {"member", "reader"}
    assert _compute_status(live, resp.headers["x-subject-token"]) == 200
    found = admin.get("/users", params={"name": user["name"]}).json()["users"]
    assert [u["id"] for u in found] == [user["id"]]
    with live.db.engine.connect() as conn:
        rows = conn.execute(sa.select(identity_assignments).where(
            identity_assignments.c.user_id == user["id"])).all()
    assert [(r.role_id, r.target_type, r.target_id) for r in rows] == [
        (member, "project", project["id"])]


def test_names_taken_anywhere_are_conflicts(admin: httpx.Client) -> None:
    project = _project(admin)
    for name in (project["name"], "alpha"):
        resp = admin.post("/projects", json={"project": {"name": name}})
        assert "Duplicate entry found with name" in _error(resp, 409)
    user = _user(admin)
    for name in (user["name"], "alice"):
        resp = admin.post("/users", json={"user": {"name": name}})
        assert f"with name {name} at domain ID default" in _error(resp, 409)
    renamed = admin.patch(f"/users/{user['id']}", json={"user": {"name": "alice"}})
    _error(renamed, 409)
    _error(admin.post("/roles", json={"role": {"name": "member"}}), 409)


def test_only_the_admin_role_writes(live: LiveServer, admin: httpx.Client) -> None:
    project, user = _project(admin), _user(admin)
    member = _role_id(admin, "member")
    grant = f"/projects/{project['id']}/users/{user['id']}/roles/{member}"
    attempts = [("POST", "/projects", {"project": {"name": "x"}}, "create_project"),
                ("PATCH", f"/projects/{project['id']}", {"project": {"enabled": False}},
                 "update_project"),
                ("DELETE", f"/projects/{project['id']}", None, "delete_project"),
                ("POST", "/users", {"user": {"name": "x"}}, "create_user"),
                ("PATCH", f"/users/{user['id']}", {"user": {"enabled": False}}, "update_user"),
                ("DELETE", f"/users/{user['id']}", None, "delete_user"),
                ("POST", "/roles", {"role": {"name": "x"}}, "create_role"),
                ("DELETE", f"/roles/{member}", None, "delete_role"),
                ("PUT", grant, None, "create_grant"), ("DELETE", grant, None, "revoke_grant")]
    for who, scope in (("alice", "alpha"), ("rita", "alpha")):
        with token_client(live, login(live, who, scope), V3) as client:
            for method, path, body, rule in attempts:
                resp = client.request(method, path, json=body)
                assert _error(resp, 403).endswith(f"identity:{rule}."), (who, method, path)
    assert admin.head(grant).status_code == 404
    assert admin.get(f"/projects/{project['id']}").json()["project"]["enabled"] is True
    assert admin.get(f"/users/{user['id']}").status_code == 200


def test_settings_file_entries_are_immutable(admin: httpx.Client) -> None:
    alpha = admin.get("/projects", params={"name": "alpha"}).json()["projects"][0]
    alice = admin.get("/users", params={"name": "alice"}).json()["users"][0]
    member = _role_id(admin, "member")
    assert alpha["options"] == {"immutable": True}
    for method, path, body in (
            ("PATCH", f"/projects/{alpha['id']}", {"project": {"enabled": False}}),
            ("DELETE", f"/projects/{alpha['id']}", None),
            ("PATCH", f"/users/{alice['id']}", {"user": {"password": "x"}}),
            ("DELETE", f"/users/{alice['id']}", None),
            ("DELETE", f"/roles/{member}", None),
            ("DELETE", f"/projects/{alpha['id']}/users/{alice['id']}/roles/{member}", None)):
        assert "immutable" in _error(admin.request(method, path, json=body), 403)
    assert admin.head(f"/projects/{alpha['id']}/users/{alice['id']}/roles/{member}"
                      ).status_code == 204


def test_deleting_a_user_revokes_its_tokens(live: LiveServer, admin: httpx.Client) -> None:
    project, user, token = _member_of_new_project(live, admin)
    assert _compute_status(live, token) == 200
    assert admin.delete(f"/users/{user['id']}").status_code == 204
    assert _compute_status(live, token) == 401
    _error(admin.delete(f"/users/{user['id']}"), 404)
    _error(admin.get(f"/users/{user['id']}"), 404)
    resp = httpx.post(f"{live.url}{V3}/auth/tokens", timeout=30,
                      json=password_body(user["name"], project["name"], password="pw-1"))
    assert resp.status_code == 401
    with live.db.engine.connect() as conn:
        held = conn.execute(sa.select(sa.func.count()).select_from(identity_assignments)
                            .where(identity_assignments.c.user_id == user["id"])).scalar()
    assert held == 0


def test_deleting_or_disabling_a_project_revokes_its_tokens(live: LiveServer,
                                                             admin: httpx.Client) -> None:
    project, user, token = _member_of_new_project(live, admin)
    resp = admin.patch(f"/projects/{project['id']}", json={"project": {"enabled": False}})
    assert resp.status_code == 200 and resp.json()["project"]["enabled"] is False
    assert _compute_status(live, token) == 401
    admin.patch(f"/projects/{project['id']}", json={"project": {"enabled": True}})
    token = login(live, user["name"], project["name"], password="pw-1")
    assert admin.delete(f"/projects/{project['id']}").status_code == 204
    assert _compute_status(live, token) == 401
    _error(admin.get(f"/projects/{project['id']}"), 404)
    with live.db.engine.connect() as conn:
        left = conn.execute(sa.select(identity_projects.c.id).where(
            identity_projects.c.id == project["id"])).all()
    assert left == []


def test_password_changes_revoke_tokens(live: LiveServer, admin: httpx.Client) -> None:
    project, user, token = _member_of_new_project(live, admin)
    resp = admin.patch(f"/users/{user['id']}", json={"user": {"password": "pw-2"}})
    assert resp.status_code == 200, resp.text
    assert _compute_status(live, token) == 401
    assert httpx.post(f"{live.url}{V3}/auth/tokens", timeout=30, json=password_body(
        user["name"], project["name"], password="pw-1")).status_code == 401
    token = login(live, user["name"], project["name"], password="pw-2")
    with token_client(live, token, V3) as own:
        wrong = own.post(f"/users/{user['id']}/password", json={"user": {
            "password": "pw-3", "original_password": "nope"}})
        assert wrong.status_code == 401
        assert own.post(f"/users/{user['id']}/password", json={"user": {
            "password": "pw-3", "original_password": "pw-2"}}).status_code == 204
    assert _compute_status(live, token) == 401
    login(live, user["name"], project["name"], password="pw-3")
    with live.db.engine.connect() as conn:
        stored = conn.execute(sa.select(identity_users.c.password_hash).where(
            identity_users.c.id == user["id"])).scalar_one()
    assert stored.startswith("scrypt$") and "pw-3" not in stored


def test_a_created_role_is_granted_carried_and_deleted(live: LiveServer,
                                                       admin: httpx.Client) -> None:
    project, user, _ = _member_of_new_project(live, admin)
    resp = admin.post("/roles", json={"role": {"name": _name("auditor")}})
    assert resp.status_code == 201, resp.text
    role = resp.json()["role"]
    grant = f"/projects/{project['id']}/users/{user['id']}/roles/{role['id']}"
    assert admin.put(grant).status_code == 204
    token = login(live, user["name"], project["name"], password="pw-1")
    with token_client(live, token, V3, {"x-subject-token": token}) as own:
        roles = {r["name"] for r in own.get("/auth/tokens").json()["token"]["roles"]}
    assert roles == {"member", "reader", role["name"]}
    assert admin.delete(f"/roles/{role['id']}").status_code == 204
    assert _compute_status(live, token) == 401
    assert admin.head(grant).status_code == 404


def test_revoking_a_grant_revokes_the_tokens_it_scoped(live: LiveServer,
                                                       admin: httpx.Client) -> None:
    project, user, token = _member_of_new_project(live, admin)
    member = _role_id(admin, "member")
    domain_grant = f"/domains/default/users/{user['id']}/roles/{member}"
    assert admin.put(domain_grant).status_code == 204
    assert admin.head(domain_grant).status_code == 204
    grant = f"/projects/{project['id']}/users/{user['id']}/roles/{member}"
    assert admin.delete(grant).status_code == 204
    assert _compute_status(live, token) == 401
    assert "Could not find role assignment" in _error(admin.delete(grant), 404)
    assert admin.delete(domain_grant).status_code == 204


@pytest.mark.parametrize(("method", "path", "body", "status", "words"), [
    ("POST", "/projects", {"project": {"name": ""}}, 400, "Invalid input for field 'project/"),
    ("POST", "/projects", {"project": {"description": "no name"}}, 400, "'name'"),
    ("POST", "/projects", {"project": {"name": "x", "enabled": "yes"}}, 400, "enabled"),
    ("POST", "/projects", {"project": {"name": "x", "domain_id": "other"}}, 404,
     "Could not find domain: other."),
    ("POST", "/projects", {"project": {"name": "x", "is_domain": True}}, 400, "domains"),
    ("POST", "/projects", {"project": {"name": "x", "parent_id": "abc"}}, 400, "hierarch"),
    ("POST", "/projects", {"name": "x"}, 400, "'project'"),
    ("POST", "/users", {"user": {"name": "x" * 256}}, 400, "Invalid input for field"),
    ("POST", "/users", {"user": {"name": "x", "default_project_id": "default"}}, 400,
     "cannot be a domain ID"),
    ("PATCH", "/users/{user}", {"user": {}}, 400, "Invalid input"),
    ("PATCH", "/users/{user}", {"user": {"domain_id": "elsewhere"}}, 400, "domain_id"),
    ("PATCH", "/projects/nothing-here", {"project": {"name": "y"}}, 404,
     "Could not find project: nothing-here."),
    ("PUT", "/projects/{project}/users/{user}/roles/nothing", None, 404,
     "Could not find role: nothing."),
    ("PUT", "/projects/{project}/users/nobody-at-all/roles/nothing", None, 404,
     "Could not find user: nobody-at-all."),
    ("PUT", "/projects/nowhere/users/{user}/roles/nothing", None, 404,
     "Could not find project: nowhere."),
    ("POST", "/roles", {"role": {"name": "x", "domain_id": "default"}}, 400, "domain_id"),
])
def test_bad_requests_change_nothing(live: LiveServer, admin: httpx.Client,
                                     targets: dict[str, str], method: str, path: str,
                                     body: Any, status: int, words: str) -> None:
    with live.db.engine.connect() as conn:
        users = conn.execute(sa.select(sa.func.count()).select_from(identity_users)).scalar()
    path = path.format(**targets)
    assert words in _error(admin.request(method, path, json=body), status)
    with live.db.engine.connect() as conn:
        after = conn.execute(sa.select(sa.func.count()).select_from(identity_users)).scalar()
    assert after == users

