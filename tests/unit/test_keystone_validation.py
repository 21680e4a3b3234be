"""The keystone strategy's parts, with a small identity double over real HTTP.

The double (`FakeIdentity`) answers what keystoneauth1 asks of Keystone --
version discovery, the service's login (with a catalog), token validation --
with whatever status a test sets, so the answers a healthy real Keystone
never gives (a 500, a refused service login) can be checked: each is a 503,
as keystonemiddleware's auth_token makes them. tests/functional/
test_keystone_auth.py runs the same code against the real Keystone.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from pymemcache.test.utils import MockMemcacheClient

from stowage.config import KeystoneAuthtokenSettings
from stowage.web.errors import HTTPError
from stowage.web.http import Request
from stowage.web.keystone import KeystoneAuthenticator
from stowage.web.keystone.cache import INVALID, MemcachedCache, MemoryCache
from stowage.web.keystone.tokeninfo import parse

FUTURE = "2999-01-01T00:00:00.000000Z"


def token_body(base: str = "", **extra: Any) -> dict[str, Any]:
    token = {"methods": ["password"], "expires_at": FUTURE,
             "user": {"id": "u1", "name": "alice", "domain": {"id": "default",
                                                              "name": "Default"}},
             "roles": [{"id": "r1", "name": "member"}, {"id": "r2", "name": "reader"}],
             **extra}
    if base:
        token["catalog"] = [{"type": "identity", "name": "keystone", "endpoints": [
            {"interface": i, "region_id": "RegionOne", "region": "RegionOne",
             "url": f"{base}/v3", "id": i} for i in ("public", "internal")]}]
    return {"token": token}


class FakeIdentity(ThreadingHTTPServer):
    """Status of GET /v3/auth/tokens in `validate_status`, of the login in `login_status`."""

    validate_status = 200
    login_status = 201
    validations = 0

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: FakeIdentity

    def log_message(self, *args: Any) -> None:
        pass

    def _answer(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        for name, value in {"content-type": "application/json", **(headers or {})}.items():
            self.send_header(name, value)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/v3":
            self._answer(200, {"version": {"id": "v3.14", "status": "stable", "links": [
                {"rel": "self", "href": f"{self.server.base}/v3/"}]}})
            return
        self.server.validations += 1
        status = self.server.validate_status
        self._answer(status, token_body() if status == 200 else {"error": {"code": status}})

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["content-length"]))
        status = self.server.login_status
        body = token_body(self.server.base, project={
            "id": "svc", "name": "service", "domain": {"id": "default", "name": "Default"}})
        self._answer(status, body if status == 201 else {"error": {"code": status}},
                     {"x-subject-token": "service-token"})


@pytest.fixture
def identity() -> Iterator[FakeIdentity]:
    server = FakeIdentity(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def guard_for(identity: FakeIdentity, **changes: Any) -> KeystoneAuthenticator:
    conf = KeystoneAuthtokenSettings(**{
        "auth_url": f"{identity.base}/v3", "username": "stowage", "password": "pw",
        "project_name": "service", "http_connect_timeout": 2.0,
        "http_request_max_retries": 0, **changes})
    return KeystoneAuthenticator(conf)


def request(**headers: str) -> Request:
    return Request(method="GET", path="/", query_string="", body=b"", base_url="http://x",
                   headers={k.replace("_", "-"): v for k, v in headers.items()})


def test_a_valid_token_becomes_the_request_context(identity: FakeIdentity) -> None:
    ctx = guard_for(identity)(request(x_auth_token="user-token"))
    assert ctx is not None
    assert (ctx.user_id, ctx.user_name, ctx.user_domain_id, ctx.roles) == (
        "u1", "alice", "default", ("member", "reader"))


def test_a_cached_token_asks_keystone_once(identity: FakeIdentity) -> None:
    guard = guard_for(identity)
    for _ in range(3):
        assert guard(request(x_auth_token="user-token")) is not None
    assert identity.validations == 1


@pytest.mark.parametrize("status", [500, 502, 503, 403, 400])
def test_keystone_errors_are_503(identity: FakeIdentity, status: int) -> None:
    identity.validate_status = status
    with pytest.raises(HTTPError) as raised:
        guard_for(identity)(request(x_auth_token="user-token"))
    assert raised.value.status == 503


def test_a_refused_service_login_is_503(identity: FakeIdentity) -> None:
    identity.login_status = 401
    with pytest.raises(HTTPError) as raised:
        guard_for(identity)(request(x_auth_token="user-token"))
    assert raised.value.status == 503


def test_a_404_is_no_context_and_briefly_remembered(identity: FakeIdentity) -> None:
    identity.validate_status = 404
    guard = guard_for(identity)
    assert guard(request(x_auth_token="bad")) is None
    assert guard(request(x_auth_token="bad")) is None
    assert identity.validations == 1


def test_no_cache_with_token_cache_time_minus_one(identity: FakeIdentity) -> None:
    guard = guard_for(identity, token_cache_time=-1)
    guard(request(x_auth_token="user-token"))
    guard(request(x_auth_token="user-token"))
    assert identity.validations == 2


def test_parse_reads_domain_scope_and_admin_project() -> None:
    info = parse(token_body(domain={"id": "d1", "name": "Dom"}, is_admin_project=False))
    ctx = info.context()
    assert (ctx.domain_id, ctx.domain_name, ctx.project_id, ctx.system_scope) == (
        "d1", "Dom", None, None)
    assert ctx.is_admin_project is False
    assert parse(token_body()).context().is_admin_project is True
    with pytest.raises(ValueError):
        parse({"error": {}})


def test_memory_cache_is_bounded_and_expires() -> None:
    cache = MemoryCache(max_entries=2)
    info = parse(token_body())
    cache.put("a", info, 60)
    cache.put("b", INVALID, 60)
    cache.put("c", info, 0.05)
    assert (cache.get("a"), cache.get("b"), len(cache)) == (None, INVALID, 2)
    time.sleep(0.06)
    assert cache.get("c") is None


def test_memcached_cache_round_trips_verdicts() -> None:
    cache = MemcachedCache((), timeout=1, client=MockMemcacheClient())
    info = parse(token_body(project={"id": "p", "name": "P", "domain": {"id": "default"}}))
    cache.put("token-1", info, 60)
    cache.put("token-2", INVALID, 60)
    cache.put("token-3", info, 0.5)  # under a second: memcached would keep it forever
    assert cache.get("token-1") == info
    assert cache.get("token-2") is INVALID
    assert cache.get("token-3") is None
