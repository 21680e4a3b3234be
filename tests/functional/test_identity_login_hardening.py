"""Password logins: no user-existence oracle, a log line per failure, Keystone's lockout.

    POST /identity/v3/auth/tokens
      unknown user  ─┐
      wrong password ┴─▶ scrypt verify either way ─▶ 401 + WARNING "... from <address>"
      wrong password x N (lockout on) ─▶ 401 "The account is locked for user: <id>."
                                         until lockout_duration passed, a success,
                                         or an admin PATCHes enabled: true
      disabled user (any password) ─▶ scrypt verify of the dummy ─▶ the generic 401,
                                      nothing counted, a lock not announced
      unknown / disabled project in scope ─▶ the generic 401 before any password check

The shared `live_identity` server keeps the lockout off (the default); the
`locking` server turns it on (3 attempts, 600 s).
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from stowage import config
from stowage.identity import login as login_module
from stowage.identity.lockout import Lockout
from stowage.identity.tables import identity_login_failures
from tests.conftest import BACKENDS
from tests.dbs import migrated_database
from tests.functional.conftest import LiveServer, start_server
from tests.functional.identity import identity_settings, login, password_body

TOKENS = "/identity/v3/auth/tokens"
GENERIC = "The request you have made requires authentication."


@pytest.fixture(scope="module", params=BACKENDS)
def locking(request: pytest.FixtureRequest) -> Iterator[LiveServer]:
    """Placement and identity, lockout after 3 wrong passwords for 600 s."""
    identity = dataclasses.replace(identity_settings(), lockout_failure_attempts=3,
                                   lockout_duration=600)
    with migrated_database(request.param) as url:
        live = start_server(config.Settings(
            database=url, services=("placement",), identity=identity,
            api=config.ApiSettings(auth_strategy="builtin-identity")), at_root=False)
        try:
            yield live
        finally:
            live.stop()
            live.db.dispose()


def _post(live: LiveServer, user: str, password: str, **extra: Any) -> httpx.Response:
    return httpx.post(f"{live.url}{TOKENS}", json=password_body(user, password=password),
                      timeout=30, **extra)


def _message(resp: httpx.Response) -> str:
    assert resp.status_code == 401, resp.text
    return str(resp.json()["error"]["message"])


def _failures(live: LiveServer, user_id: str) -> int | None:
    with live.db.engine.connect() as conn:
        count = conn.execute(sa.select(identity_login_failures.c.failed_count).where(
            identity_login_failures.c.user_id == user_id)).scalar()
    return None if count is None else int(count)


def _user_id(live: LiveServer, name: str) -> str:
    token = login(live, name)
    resp = httpx.get(f"{live.url}{TOKENS}", timeout=30,
                     headers={"x-auth-token": token, "x-subject-token": token})
    return str(resp.json()["token"]["user"]["id"])


# --- the oracle and the log ------------------------------------------------------------

@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The stored hashes each password check of a login verified, in order."""
    checked: list[str] = []
    real = login_module.verify_password

    def spy(password: str, stored: str) -> bool:
        checked.append(stored)
        return bool(real(password, stored))

    monkeypatch.setattr(login_module, "verify_password", spy)
    return checked


def test_unknown_user_and_wrong_password_both_run_the_hash(
        live_identity: LiveServer, seen: list[str]) -> None:
    unknown = _post(live_identity, "no-such-user", "whatever")
    assert _message(unknown) == GENERIC and len(seen) == 1
    wrong = _post(live_identity, "alice", "not-alice-pw")
    assert _message(wrong) == GENERIC and len(seen) == 2
    # By id too, and in a domain that does not exist: the same work, the same answer.
    by_id = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
        "id": "f" * 32, "password": "x"}}}}}
    resp = httpx.post(f"{live_identity.url}{TOKENS}", json=by_id, timeout=30)
    assert _message(resp) == GENERIC and len(seen) == 3
    body = password_body("alice")
    body["auth"]["identity"]["password"]["user"]["domain"] = {"name": "Elsewhere"}
    resp = httpx.post(f"{live_identity.url}{TOKENS}", json=body, timeout=30)
    assert _message(resp) == GENERIC and len(seen) == 4
    assert all(stored.startswith("scrypt$") for stored in seen)


def test_each_failed_login_is_logged_with_the_source_address(
        live_identity: LiveServer, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="stowage.identity.api.common"):
        _post(live_identity, "no-such-user", "x")
        _post(live_identity, "alice", "wrong")
        assert _post(live_identity, "alice", "alice-pw").status_code == 201
    lines = [r for r in caplog.records if r.name == "stowage.identity.api.common"]
    assert [r.levelno for r in lines] == [logging.WARNING, logging.WARNING]
    assert [r.getMessage() for r in lines] == [
        f"Authorization failed. {GENERIC} from 127.0.0.1"] * 2


def test_lockout_is_off_by_default(live_identity: LiveServer) -> None:
    rita = _user_id(live_identity, "rita")
    for _ in range(6):
        assert _message(_post(live_identity, "rita", "wrong")) == GENERIC
    assert _post(live_identity, "rita", "rita-pw").status_code == 201
    assert _failures(live_identity, rita) is None  # nothing counted, nothing written


# --- the lockout ------------------------------------------------------------------------

def test_three_wrong_passwords_lock_the_account(locking: LiveServer) -> None:
    alice = _user_id(locking, "alice")
    for _ in range(3):
        assert _message(_post(locking, "alice", "wrong")) == GENERIC
    assert _failures(locking, alice) == 3
    locked = f"The account is locked for user: {alice}."
    # Locked: the right password does not help, and tries while locked are not counted.
    assert _message(_post(locking, "alice", "alice-pw")) == locked
    assert _message(_post(locking, "alice", "wrong")) == locked
    assert _failures(locking, alice) == 3
    # Other users are not affected.
    assert _post(locking, "rita", "rita-pw").status_code == 201


def test_the_lock_ends_after_lockout_duration(locking: LiveServer) -> None:
    dora = _user_id(locking, "dora")
    for _ in range(3):
        _post(locking, "dora", "wrong")
    assert _message(_post(locking, "dora", "dora-pw")).startswith("The account is locked")
    # Move the last failure 601 s into the past instead of waiting.
    with locking.db.write() as conn:
        conn.execute(identity_login_failures.update().where(
            identity_login_failures.c.user_id == dora).values(
            failed_at=datetime.datetime(2000, 1, 1)))
    assert _post(locking, "dora", "dora-pw").status_code == 201
    assert _failures(locking, dora) is None


def test_a_success_resets_the_count(locking: LiveServer) -> None:
    nobody = _user_id(locking, "nobody")
    for _ in range(2):
        _post(locking, "nobody", "wrong")
    assert _failures(locking, nobody) == 2
    assert _post(locking, "nobody", "nobody-pw").status_code == 201
    assert _failures(locking, nobody) is None
    for _ in range(2):  # two more are again below the limit
        _post(locking, "nobody", "wrong")
    assert _post(locking, "nobody", "nobody-pw").status_code == 201


def test_an_admin_enabling_the_user_unlocks_it(locking: LiveServer) -> None:
    admin = login(locking, "admin", "admin")
    with httpx.Client(base_url=f"{locking.url}/identity/v3", timeout=30,
                      headers={"x-auth-token": admin}) as client:
        made = client.post("/users", json={"user": {"name": "locked-out", "password": "pw-1",
                                                    "domain_id": "default"}})
        assert made.status_code == 201, made.text
        user_id = made.json()["user"]["id"]
        for _ in range(3):
            _post(locking, "locked-out", "wrong")
        assert _message(_post(locking, "locked-out", "pw-1")).endswith(f"{user_id}.")
        resp = client.patch(f"/users/{user_id}", json={"user": {"enabled": True}})
        assert resp.status_code == 200, resp.text
    assert _post(locking, "locked-out", "pw-1").status_code == 201


def test_wrong_original_passwords_count_too(locking: LiveServer,
                                            caplog: pytest.LogCaptureFixture) -> None:
    """Keystone's password change authenticates the original password: same lockout."""
    admin = login(locking, "admin", "admin")
    made = httpx.post(f"{locking.url}/identity/v3/users", timeout=30,
                      headers={"x-auth-token": admin},
                      json={"user": {"name": "changer", "password": "pw-1"}})
    assert made.status_code == 201, made.text
    user_id = made.json()["user"]["id"]
    token = login(locking, "changer", password="pw-1")

    def change(original: str) -> httpx.Response:
        return httpx.post(f"{locking.url}/identity/v3/users/{user_id}/password", timeout=30,
                          headers={"x-auth-token": token},
                          json={"user": {"original_password": original, "password": "pw-2"}})

    with caplog.at_level(logging.WARNING, logger="stowage.identity.api.common"):
        for _ in range(3):
            assert _message(change("wrong")) == GENERIC
    assert len([r for r in caplog.records if "from 127.0.0.1" in r.getMessage()]) == 3
    locked = f"The account is locked for user: {user_id}."
    assert _message(change("pw-1")) == locked
    assert _message(_post(locking, "changer", "pw-1")) == locked


def test_unknown_users_are_not_counted(locking: LiveServer) -> None:
    for _ in range(4):
        assert _message(_post(locking, "no-such-user", "x")) == GENERIC
    with locking.db.engine.connect() as conn:
        ids = set(conn.execute(sa.select(identity_login_failures.c.user_id)).scalars())
    assert "no-such-user" not in ids


def test_concurrent_failures_are_all_counted(locking: LiveServer) -> None:
    lockout = Lockout(locking.db, attempts=100, duration=600)
    now = datetime.datetime(2030, 1, 1)
    threads = [threading.Thread(target=lockout.failed, args=("racer", now)) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert _failures(locking, "racer") == 8
    lockout.succeeded("racer")
    assert _failures(locking, "racer") is None


@pytest.mark.parametrize("values", [
    {"lockout_failure_attempts": -1}, {"lockout_failure_attempts": "3"},
    {"lockout_failure_attempts": True}, {"lockout_duration": 0},
])
def test_bad_lockout_settings_are_refused(values: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"\[identity\] lockout_"):
        config.IdentitySettings(**values)


# --- disabled users and scopes (Keystone's order) --------------------------------------

def _admin_client(live: LiveServer) -> httpx.Client:
    return httpx.Client(base_url=f"{live.url}/identity/v3", timeout=30,
                        headers={"x-auth-token": login(live, "admin", "admin")})


def _set_enabled(client: httpx.Client, user_id: str, enabled: bool) -> None:
    resp = client.patch(f"/users/{user_id}", json={"user": {"enabled": enabled}})
    assert resp.status_code == 200, resp.text


def test_a_disabled_user_is_refused_before_its_password(
        locking: LiveServer, seen: list[str], caplog: pytest.LogCaptureFixture) -> None:
    """Keystone checks `enabled` before the password: the generic 401 either way,
    no failure counted, and (as for an unknown user) the dummy hash is verified."""
    with _admin_client(locking) as client:
        made = client.post("/users", json={"user": {"name": "switched-off", "password": "pw"}})
        assert made.status_code == 201, made.text
        user_id = made.json()["user"]["id"]
        _set_enabled(client, user_id, False)
    seen.clear()  # the admin's own login above
    with caplog.at_level(logging.WARNING, logger="stowage.identity.login"):
        for _ in range(4):
            assert _message(_post(locking, "switched-off", "wrong")) == GENERIC
        assert _message(_post(locking, "switched-off", "pw")) == GENERIC
    assert seen == [login_module.dummy_hash()] * 5
    assert _failures(locking, user_id) is None  # never counted, so never locked
    assert f"User is disabled: {user_id}" in caplog.messages  # the cause, for the log only


def test_a_locked_user_that_is_disabled_reads_as_disabled(locking: LiveServer) -> None:
    with _admin_client(locking) as client:
        made = client.post("/users", json={"user": {"name": "locked-then-off",
                                                    "password": "pw"}})
        assert made.status_code == 201, made.text
        user_id = made.json()["user"]["id"]
        for _ in range(3):
            _post(locking, "locked-then-off", "wrong")
        assert _message(_post(locking, "locked-then-off", "pw")).startswith(
            "The account is locked")
        _set_enabled(client, user_id, False)
        assert _message(_post(locking, "locked-then-off", "pw")) == GENERIC


@pytest.mark.parametrize("project", ["closed", "no-such-project"])
def test_a_bad_scope_refuses_before_the_password_is_checked(locking: LiveServer,
                                                            project: str) -> None:
    """Keystone looks the scope up first: a wrong password there is not counted."""
    nobody = _user_id(locking, "nobody")
    body = password_body("nobody", project, password="wrong")
    for _ in range(3):
        resp = httpx.post(f"{locking.url}{TOKENS}", json=body, timeout=30)
        assert _message(resp) == GENERIC
    assert _failures(locking, nobody) is None
    assert _post(locking, "nobody", "nobody-pw").status_code == 201
