"""The Keystone fixture works: tokens come from a real Keystone and it reads them back."""

from __future__ import annotations

import httpx
import pytest

from tests.keystone.fixture import Keystone


def test_admin_token_is_validated_by_keystone_with_its_roles(keystone: Keystone) -> None:
    token = keystone.admin.admin_token()
    body = keystone.admin.validate(token)
    assert body["user"]["name"] == "admin"
    assert body["project"]["name"] == "admin"
    assert {"admin", "member", "reader"} <= {r["name"] for r in body["roles"]}


def test_a_made_user_holds_its_roles_on_its_own_project(keystone: Keystone) -> None:
    reader = keystone.admin.user("reader")
    body = keystone.admin.validate(keystone.admin.token(reader))
    assert body["project"]["id"] == reader.project_id
    assert [r["name"] for r in body["roles"]] == ["reader"]


def test_a_revoked_token_is_refused_by_keystone(keystone: Keystone) -> None:
    token = keystone.admin.token(keystone.admin.user("member"))
    keystone.admin.revoke(token)
    resp = httpx.get(keystone.auth_url + "/auth/tokens",
                     headers={"X-Auth-Token": keystone.admin.admin_token(),
                              "X-Subject-Token": token})
    assert resp.status_code == 404


def test_system_scoped_admin_token(keystone: Keystone) -> None:
    body = keystone.admin.validate(keystone.admin.admin_token(system=True))
    assert body["system"] == {"all": True}
    assert "project" not in body


def test_stopped_keystone_refuses_connections_and_restarts(keystone: Keystone) -> None:
    keystone.server.stop()
    with pytest.raises(httpx.ConnectError):
        httpx.get(keystone.auth_url, timeout=5)
    keystone.server.restart()
    assert httpx.get(keystone.auth_url, timeout=5).status_code == 200
