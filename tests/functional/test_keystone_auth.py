"""`auth_strategy = "keystone"`: every service validates tokens against a real Keystone.

The users are made in Keystone 30.0.0 (tests/keystone) and log in there; stowage
sees only their tokens (see keystone_deploy.py for the picture). What a user
sees is what keystonemiddleware's auth_token gives upstream services:

- a member may write what members may, a reader only look (403), an admin
  anything; a system-scoped admin token is refused by Placement (403: its
  policies are project-scoped since 2023.1);
- no token, a made-up one, an expired one: 401 with
  `WWW-Authenticate: Keystone uri="<www_authenticate_uri>"`; a revoked one
  once its cache entry expires (`token_cache_time`);
- X-Service-Token: a bad one is a 401; one without the service role too,
  unless `service_token_roles_required` is turned off; with the role, an
  expired user token passes;
- Keystone stopped: 503 within the bounded timeout (cached tokens still
  work), and working again once it is back;
- the service's own token is fetched again once it expires.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from stowage.web.keystone import KeystoneAuthenticator
from tests.functional.conftest import LiveServer, free_port
from tests.functional.keystone_deploy import authtoken, client, keystone_stowage
from tests.functional.test_serve_process import _serve_argv, _wait_until_answering
from tests.keystone.fixture import Keystone

PLACEMENT = {"openstack-api-version": "placement 1.39"}
COMPUTE = {"openstack-api-version": "compute 2.90"}
# Seconds stowage believes a validated token: short, for the revocation test.
CACHE_TIME = 2


@pytest.fixture(scope="module")
def live(keystone: Keystone) -> Iterator[LiveServer]:
    with keystone_stowage(keystone, token_cache_time=CACHE_TIME) as server:
        yield server


@pytest.fixture(autouse=True)
def keystone_up(keystone: Keystone) -> Iterator[None]:
    """A test that stops Keystone (or shortens its tokens) leaves it as it found it."""
    yield
    if not keystone.server.running or keystone.server.expiration != 3600:
        keystone.server.restart(expiration=3600)


def test_member_reader_and_admin_on_compute(keystone: Keystone, live: LiveServer) -> None:
    member = keystone.admin.user("member")
    reader = keystone.admin.user("reader", project_id=member.project_id)
    group = {"server_group": {"name": "g", "policy": "anti-affinity"}}
    with client(live, keystone.admin.token(member), "/compute/v2.1", COMPUTE) as api:
        made = api.post("/os-server-groups", json=group)
        assert made.status_code == 200, made.text
        assert made.json()["server_group"]["project_id"] == member.project_id
        # member implies reader in Keystone's validation: the member may list too.
        assert api.get("/os-server-groups").status_code == 200
    with client(live, keystone.admin.token(reader), "/compute/v2.1", COMPUTE) as api:
        assert api.post("/os-server-groups", json=group).status_code == 403
        listed = api.get("/os-server-groups").json()["server_groups"]
        assert [g["id"] for g in listed] == [made.json()["server_group"]["id"]]
    with client(live, keystone.admin.admin_token(), "/compute/v2.1", COMPUTE) as api:
        flavor = {"flavor": {"name": "ks", "vcpus": 1, "ram": 512, "disk": 1}}
        assert api.post("/flavors", json=flavor).status_code == 200


def test_placement_admin_service_member_and_system_scope(keystone: Keystone,
                                                         live: LiveServer) -> None:
    with client(live, keystone.admin.admin_token(), "/placement", PLACEMENT) as api:
        made = api.post("/resource_providers", json={"name": "ks-rp"})
        assert made.status_code == 200, made.text
    service = keystone.admin.user("service")
    with client(live, keystone.admin.token(service), "/placement", PLACEMENT) as api:
        assert [p["name"] for p in api.get("/resource_providers").json()[
            "resource_providers"]] == ["ks-rp"]
    member = keystone.admin.user("member")
    with client(live, keystone.admin.token(member), "/placement", PLACEMENT) as api:
        assert api.get("/resource_providers").status_code == 403
    system = keystone.admin.admin_token(system=True)
    with client(live, system, "/placement", PLACEMENT) as api:
        assert api.get("/resource_providers").status_code == 403


def test_network_and_image_take_keystone_tokens(keystone: Keystone, live: LiveServer) -> None:
    member = keystone.admin.user("member")
    reader = keystone.admin.user("reader", project_id=member.project_id)
    body = {"network": {"name": "ks-net"}}
    with client(live, keystone.admin.token(member), "/network/v2.0") as api:
        made = api.post("/networks", json=body)
        assert made.status_code == 201, made.text
        assert made.json()["network"]["project_id"] == member.project_id
    with client(live, keystone.admin.token(reader), "/network/v2.0") as api:
        assert api.post("/networks", json=body).status_code == 403
    with client(live, keystone.admin.token(reader), "/image/v2") as api:
        assert api.get("/images").status_code == 200


@pytest.mark.parametrize("prefix", ["/placement/resource_providers", "/compute/v2.1/flavors",
                                    "/network/v2.0/networks", "/image/v2/images"])
@pytest.mark.parametrize("token", [None, "not-a-token"])
def test_no_or_bad_token_is_401_with_keystone_challenge(
        keystone: Keystone, live: LiveServer, prefix: str, token: str | None) -> None:
    with client(live, token) as api:
        resp = api.get(prefix)
    assert resp.status_code == 401
    assert resp.headers["www-authenticate"] == f'Keystone uri="{keystone.auth_url}"'
    assert resp.json()  # the service's own error body


def test_version_documents_need_no_token(live: LiveServer) -> None:
    with client(live, "not-a-token") as api:
        assert api.get("/placement/").status_code == 200
    assert live.url  # and no /identity stand-in is mounted with Keystone:
    with client(live, None) as api:
        assert api.get("/identity").status_code == 404


def test_revoked_token_works_until_its_cache_entry_expires(keystone: Keystone,
                                                           live: LiveServer) -> None:
    token = keystone.admin.token(keystone.admin.user("reader"))
    with client(live, token, "/compute/v2.1", COMPUTE) as api:
        assert api.get("/flavors").status_code == 200
        keystone.admin.revoke(token)
        assert api.get("/flavors").status_code == 200  # still cached, as auth_token
        time.sleep(CACHE_TIME + 0.2)
        assert api.get("/flavors").status_code == 401


def test_service_token_must_be_a_service_s(keystone: Keystone, live: LiveServer) -> None:
    member = keystone.admin.user("member")
    service = keystone.admin.token(keystone.admin.user("service"))
    plain = keystone.admin.token(keystone.admin.user("member"))
    with client(live, keystone.admin.token(member), "/compute/v2.1", COMPUTE) as api:
        assert api.get("/flavors", headers={"x-service-token": service}).status_code == 200
        # service_token_roles_required is true by default, as in keystonemiddleware 13.
        assert api.get("/flavors", headers={"x-service-token": plain}).status_code == 401
        bad = api.get("/flavors", headers={"x-service-token": "not-a-token"})
        assert bad.status_code == 401
        assert api.get("/flavors").status_code == 200  # no service token: the user alone


def test_any_valid_service_token_when_roles_are_not_required(keystone: Keystone) -> None:
    member = keystone.admin.user("member")
    plain = keystone.admin.token(keystone.admin.user("member"))
    with keystone_stowage(keystone, ("image",), service_token_roles_required=False) as live, \
            client(live, keystone.admin.token(member), "/v2") as api:
        assert api.get("/images", headers={"x-service-token": plain}).status_code == 200
        assert api.get("/images", headers={"x-service-token": "nope"}).status_code == 401


def test_expired_tokens(keystone: Keystone, live: LiveServer) -> None:
    """Tokens of a 3 s Keystone: 401 once expired, even though stowage cached them;
    with a service token of the service role, auth_token's allow_expired lets one in."""
    service = keystone.admin.token(keystone.admin.user("service"))
    keystone.server.restart(expiration=3)
    token = keystone.admin.token(keystone.admin.user("reader"))
    with client(live, token, "/compute/v2.1", COMPUTE) as api:
        assert api.get("/flavors").status_code == 200
        time.sleep(3.5)
        assert api.get("/flavors").status_code == 401
        assert api.get("/flavors", headers={"x-service-token": service}).status_code == 200


def test_keystone_stopped_is_503_quickly_then_recovers(keystone: Keystone) -> None:
    """A server of its own whose cache outlives the test, however slow the machine:
    the module's 2 s cache could let the cached token lapse while Keystone is down."""
    cached = keystone.admin.token(keystone.admin.user("reader"))
    fresh = keystone.admin.token(keystone.admin.user("reader"))
    with keystone_stowage(keystone, token_cache_time=300) as live, \
            client(live, cached, "/compute/v2.1", COMPUTE) as api:
        assert api.get("/flavors").status_code == 200
        keystone.server.stop()
        assert api.get("/flavors").status_code == 200  # cached: Keystone not asked
        started = time.monotonic()
        refused = api.get("/flavors", headers={"x-auth-token": fresh})
        assert refused.status_code == 503
        assert time.monotonic() - started < 3.0
        assert "temporarily unavailable" in refused.text
        body = api.post("/os-server-groups", headers={"x-auth-token": fresh},
                        json={"server_group": {"name": "g", "policy": "affinity"}})
        assert body.status_code == 503
        keystone.server.restart()
        assert api.get("/flavors", headers={"x-auth-token": fresh}).status_code == 200


def test_the_service_fetches_its_own_token_again_once_it_expires(keystone: Keystone) -> None:
    """With 10 s tokens the service's own token dies between two validations; the
    second still succeeds (Keystone refuses an expired X-Auth-Token), with a new one.
    (10 s: the user's token must outlive its first validation on a busy CI machine.)"""
    keystone.server.restart(expiration=10)
    guard = KeystoneAuthenticator(authtoken(keystone))
    first_user = keystone.admin.token(keystone.admin.user("reader"))
    assert guard.verdict(first_user) is not None
    first_own = guard.validator.session.get_token()
    time.sleep(10.5)
    second_user = keystone.admin.token(keystone.admin.user("reader"))
    info = guard.verdict(second_user)
    assert info is not None and info.roles == ("reader",)
    assert guard.validator.session.get_token() != first_own


def test_concurrent_first_requests_are_each_validated(keystone: Keystone,
                                                      live: LiveServer) -> None:
    """Sixteen users' first requests at once: each token validated, none mixed up."""
    users = [keystone.admin.user("member") for _ in range(4)]
    tokens = [keystone.admin.token(user) for user in users for _ in range(4)]

    def groups_of(token: str) -> tuple[int, str]:
        with client(live, token, "/compute/v2.1", COMPUTE) as api:
            made = api.post("/os-server-groups", json={
                "server_group": {"name": "c", "policy": "affinity"}})
            return made.status_code, made.json()["server_group"]["user_id"]

    with ThreadPoolExecutor(max_workers=16) as pool:
        answers = list(pool.map(groups_of, tokens))
    assert answers == [(200, user.id) for user in users for _ in range(4)]


def test_stowage_serve_with_keystone(keystone: Keystone, tmp_path: Path) -> None:
    """The settings file an operator writes, read by `stowage serve` in its own process."""
    conf = authtoken(keystone)
    port = free_port()
    argv = _serve_argv(tmp_path, port, (
        '[api]\nauth_strategy = "keystone"\n[keystone_authtoken]\n'
        f'auth_url = "{conf.auth_url}"\nusername = "{conf.username}"\n'
        f'password = "{conf.password}"\nproject_name = "{conf.project_name}"\n'
        f'region_name = "{conf.region_name}"\n'))
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    try:
        _wait_until_answering(proc, port, log)
        base = f"http://127.0.0.1:{port}/resource_providers"
        token = keystone.admin.admin_token()
        assert httpx.get(base, headers={"x-auth-token": token}).status_code == 200
        refused = httpx.get(base)
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"] == f'Keystone uri="{conf.auth_url}"'
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert f"tokens validated by Keystone at {conf.auth_url}" in log.read_text()
