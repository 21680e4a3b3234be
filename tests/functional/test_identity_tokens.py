"""Identity v3 tokens: issue by password or token, scopes, refusals, validate, revoke, expiry.

Every test talks to `/identity/v3/auth/tokens` over HTTP on a stowage whose
directory is drawn in `tests/functional/identity.py`.
"""

from __future__ import annotations

import datetime
import hashlib
from collections.abc import Iterator

import httpx
import pytest
import sqlalchemy as sa

from stowage.identity.tables import identity_tokens
from tests.functional.conftest import LiveServer
from tests.functional.identity import login, password_body

TOKENS = "/identity/v3/auth/tokens"
UNAUTHORIZED = {"error": {"code": 401, "title": "Unauthorized",
                          "message": "The request you have made requires authentication."}}


@pytest.fixture(scope="module")
def live(live_identity: LiveServer) -> LiveServer:
    return live_identity


@pytest.fixture
def http(live: LiveServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=live.url, timeout=30) as client:
        yield client


def _rows(live: LiveServer) -> int:
    with live.db.engine.connect() as conn:
        return int(conn.execute(sa.select(sa.func.count()).select_from(identity_tokens))
                   .scalar_one())


def test_password_by_name_scoped_to_a_project_by_name(live: LiveServer,
                                                      http: httpx.Client) -> None:
    resp = http.post(TOKENS, json=password_body("alice", "alpha"))
    assert resp.status_code == 201, resp.text
    text = resp.headers["x-subject-token"]
    token = resp.json()["token"]
    assert token["methods"] == ["password"]
    assert token["user"]["name"] == "alice"
    assert token["user"]["domain"] == {"id": "default", "name": "Default"}
    assert token["project"]["name"] == "alpha" and token["is_domain"] is False
    # member implies reader: the token carries both, as Keystone's does.
    assert sorted(r["name"] for r in token["roles"]) == ["member", "reader"]
    assert len(token["audit_ids"]) == 1
    issued = datetime.datetime.fromisoformat(token["issued_at"].rstrip("Z"))
    expires = datetime.datetime.fromisoformat(token["expires_at"].rstrip("Z"))
    assert expires - issued == datetime.timedelta(hours=1)
    # The catalog names this stowage's endpoints, three interfaces each, in RegionOne.
    catalog = {s["type"]: s for s in token["catalog"]}
    assert set(catalog) == {"identity", "compute", "placement", "image", "network"}
    compute = catalog["compute"]
    assert compute["name"] == "nova"
    assert sorted(e["interface"] for e in compute["endpoints"]) == ["admin", "internal",
                                                                     "public"]
    assert {e["url"] for e in compute["endpoints"]} == {f"{live.url}/compute/v2.1"}
    assert {e["region_id"] for e in compute["endpoints"]} == {"RegionOne"}
    assert catalog["identity"]["endpoints"][0]["url"] == f"{live.url}/identity"
    # Only the hash is stored.
    with live.db.engine.connect() as conn:
        stored = conn.execute(sa.select(identity_tokens.c.token_hash)).scalars().all()
    assert text not in stored and len(stored) >= 1


def test_ids_domain_scope_unscoped_and_default_project(http: httpx.Client) -> None:
    admin = http.post(TOKENS, json=password_body("admin", "admin")).json()["token"]
    by_id = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
        "id": admin["user"]["id"], "password": "admin-pw"}}},
        "scope": {"project": {"id": admin["project"]["id"]}}}}
    resp = http.post(TOKENS, json=by_id, params={"nocatalog": "1"})
    assert resp.status_code == 201, resp.text
    assert resp.json()["token"]["project"]["name"] == "admin"
    assert "catalog" not in resp.json()["token"]
    assert {r["name"] for r in resp.json()["token"]["roles"]} == {"admin", "manager",
                                                                  "member", "reader"}

    domain = http.post(TOKENS, json=password_body("dora", scope={"domain": {"id": "default"}}))
    assert domain.status_code == 201, domain.text
    assert domain.json()["token"]["domain"] == {"id": "default", "name": "Default"}
    assert [r["name"] for r in domain.json()["token"]["roles"]] == ["reader"]

    unscoped = http.post(TOKENS, json=password_body("alice", scope="unscoped")).json()["token"]
    assert "project" not in unscoped and "roles" not in unscoped and "catalog" not in unscoped
    # No scope at all: the default project, where alice holds a role (Keystone's rule).
    implicit = http.post(TOKENS, json=password_body("alice")).json()["token"]
    assert implicit["project"]["name"] == "alpha"
    # nobody has no default project: unscoped.
    assert "project" not in http.post(TOKENS, json=password_body("nobody")).json()["token"]


@pytest.mark.parametrize("body", [
    password_body("alice", "alpha", password="wrong"),
    password_body("mallory", "alpha", password="mallory-pw"),
    password_body("gone", "alpha"),
], ids=["bad-password", "unknown-user", "disabled-user"])
def test_refused_credentials_are_one_401(live: LiveServer, http: httpx.Client,
                                         body: dict[str, object]) -> None:
    before = _rows(live)
    resp = http.post(TOKENS, json=body)
    assert resp.status_code == 401
    assert resp.json() == UNAUTHORIZED
    assert resp.headers["www-authenticate"] == f'Keystone uri="{live.url}/identity"'
    assert "x-subject-token" not in resp.headers
    assert _rows(live) <= before  # nothing issued (an expired one may have been pruned)


def test_scopes_the_user_cannot_have_are_401(http: httpx.Client) -> None:
    for body in (password_body("nobody", "alpha"), password_body("alice", "admin"),
                 password_body("alice", "closed"), password_body("alice", "no-such"),
                 password_body("alice", scope={"domain": {"id": "default"}}),
                 password_body("alice", scope={"domain": {"name": "Elsewhere"}}),
                 password_body("admin", scope={"system": {"all": True}})):
        resp = http.post(TOKENS, json=body)
        # Keystone (insecure_debug off) names no cause: not the project, not the user.
        assert resp.json() == UNAUTHORIZED, (body, resp.text)


def test_malformed_bodies_are_400(http: httpx.Client) -> None:
    for body in ({}, {"auth": {}}, {"auth": {"identity": {"methods": "password"}}},
                 {"auth": {"identity": {"methods": ["password"], "password": {}}}}):
        resp = http.post(TOKENS, json=body)
        assert resp.status_code == 400, (body, resp.text)
        assert resp.json()["error"]["message"].startswith("Invalid input for field")
    resp = http.post(TOKENS, content=b"{", headers={"content-type": "application/json"})
    assert resp.status_code == 400
    unsupported = {"auth": {"identity": {"methods": ["totp"]}}}
    assert http.post(TOKENS, json=unsupported).status_code == 401


def test_token_method_rescopes_and_keeps_expiry_and_audit_chain(live: LiveServer,
                                                                http: httpx.Client) -> None:
    first = http.post(TOKENS, json=password_body("alice", scope="unscoped"))
    parent = first.json()["token"]
    body = {"auth": {"identity": {"methods": ["token"],
                                  "token": {"id": first.headers["x-subject-token"]}},
                     "scope": {"project": {"name": "alpha", "domain": {"name": "Default"}}}}}
    resp = http.post(TOKENS, json=body)
    assert resp.status_code == 201, resp.text
    child = resp.json()["token"]
    assert child["project"]["name"] == "alpha"
    assert child["methods"] == ["token", "password"]
    assert child["expires_at"] == parent["expires_at"]
    assert child["audit_ids"][1] == parent["audit_ids"][0]
    body["auth"]["identity"]["token"]["id"] = "not-a-token"
    assert http.post(TOKENS, json=body).status_code == 401


def test_validate_check_and_revoke(live: LiveServer, http: httpx.Client) -> None:
    alice = login(live, "alice", "alpha")
    rita = login(live, "rita", "alpha")
    admin = login(live, "admin", "admin")
    own = http.get(TOKENS, headers={"x-auth-token": alice, "x-subject-token": alice})
    assert own.status_code == 200 and own.headers["x-subject-token"] == alice
    assert own.json()["token"]["user"]["name"] == "alice"
    assert http.head(TOKENS, headers={"x-auth-token": alice,
                                      "x-subject-token": alice}).status_code == 200
    # Someone else's token: only an admin may look at it.
    other = http.get(TOKENS, headers={"x-auth-token": rita, "x-subject-token": alice})
    assert other.status_code == 403
    assert other.json()["error"]["message"].endswith("identity:validate_token.")
    assert http.get(TOKENS, headers={"x-auth-token": admin,
                                     "x-subject-token": alice}).status_code == 200
    unknown = http.get(TOKENS, headers={"x-auth-token": admin, "x-subject-token": "nope"})
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == 404
    assert http.get(TOKENS, headers={"x-subject-token": alice}).status_code == 401

    before = _rows(live)
    assert http.delete(TOKENS, headers={"x-auth-token": admin,
                                        "x-subject-token": alice}).status_code == 204
    assert _rows(live) == before - 1
    assert http.get(TOKENS, headers={"x-auth-token": admin,
                                     "x-subject-token": alice}).status_code == 404
    servers = http.get("/compute/v2.1/servers", headers={"x-auth-token": alice})
    assert servers.status_code == 401


def test_expired_tokens_are_refused_then_pruned(live: LiveServer, http: httpx.Client) -> None:
    alice = login(live, "alice", "alpha")
    assert http.get("/compute/v2.1/flavors", headers={"x-auth-token": alice}).status_code == 200
    mine = identity_tokens.c.token_hash == hashlib.sha256(alice.encode()).hexdigest()
    with live.db.write() as conn:
        conn.execute(identity_tokens.update().where(mine).values(
            expires_at=datetime.datetime(2000, 1, 1)))
    assert http.get("/compute/v2.1/flavors", headers={"x-auth-token": alice}).status_code == 401
    assert http.get(TOKENS, headers={"x-auth-token": alice,
                                     "x-subject-token": alice}).status_code == 401
    login(live, "rita", "alpha")  # issuing a token prunes every expired one
    with live.db.engine.connect() as conn:
        assert conn.execute(sa.select(identity_tokens).where(mine)).first() is None
