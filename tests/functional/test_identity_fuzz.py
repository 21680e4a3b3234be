"""Fuzz the identity service's write routes: never a 5xx, and a 4xx issues or revokes nothing.

`test_fuzz.py` attacks the four other services on a noauth2 world, where
`/identity` is the discovery stand-in; these routes exist only with
`[api] auth_strategy = "builtin-identity"`, so they get their own server and
harness, built from the same hostile values (`fuzz_values`)::

    POST   /identity/v3/auth/tokens   valid bodies made hostile (password, token, scopes)
    DELETE /identity/v3/auth/tokens   hostile X-Auth-Token / X-Subject-Token pairs

After each request: status < 500; on a 4xx the token table is unchanged.
"""

from __future__ import annotations

import os
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stowage.identity.tables import identity_tokens
from tests.functional.conftest import LiveServer
from tests.functional.fuzz_values import body_variants, encode, hostile_text, weighted
from tests.functional.identity import login, password_body

EXAMPLES = int(os.environ.get("STOWAGE_FUZZ_EXAMPLES", "25"))
TOKENS = "/identity/v3/auth/tokens"


@pytest.fixture(scope="module")
def live(live_identity: LiveServer) -> LiveServer:
    return live_identity


def _hashes(live: LiveServer) -> set[str]:
    with live.db.engine.connect() as conn:
        return set(conn.execute(sa.select(identity_tokens.c.token_hash)).scalars())


def _check(live: LiveServer, send: Any) -> None:
    before = _hashes(live)
    resp: httpx.Response = send()
    assert resp.status_code < 500, f"{resp.request.method} -> {resp.status_code} {resp.text}"
    if resp.status_code >= 400:
        assert _hashes(live) == before, f"a {resp.status_code} changed the tokens: {resp.text}"


def _header_text(text: str) -> bool:
    """Whether an HTTP client sends `text` as a header value (no controls, not padded)."""
    return text == text.strip(" \t") and all(" " <= ch != "\x7f" or ch == "\t"
                                              for ch in text)


def _fuzz(test: Any) -> Any:
    return settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
                    suppress_health_check=list(HealthCheck))(test)


def test_issue_never_fails_and_refusals_issue_nothing(live: LiveServer) -> None:
    parent = login(live, "alice", scope="unscoped")
    templates = [password_body("alice", "alpha"), password_body("dora", scope={
        "domain": {"id": "default"}}), password_body("admin", scope="unscoped"),
        {"auth": {"identity": {"methods": ["token"], "token": {"id": parent}},
                  "scope": {"project": {"name": "alpha", "domain": {"name": "Default"}}}}}]
    client = httpx.Client(base_url=live.url, timeout=60)

    @_fuzz
    @given(body_variants(templates), st.sampled_from(["", "?nocatalog", "?nocatalog=0"]))
    def attack(body: tuple[str, Any], query: str) -> None:
        kind, value = body
        content = value if kind == "bytes" else encode(value, lambda ref: ref).encode()
        _check(live, lambda: client.post(TOKENS + query, content=content,
                                         headers={"content-type": "application/json"}))

    with client:
        attack()


def test_revoke_never_fails_and_refusals_revoke_nothing(live: LiveServer) -> None:
    alice, admin = login(live, "alice", "alpha"), login(live, "admin", "admin")
    client = httpx.Client(base_url=live.url, timeout=60)
    sendable = hostile_text().filter(_header_text)
    tokens = st.one_of(st.sampled_from([alice, admin, "", "made-up"]), sendable)
    subjects = weighted((1, st.sampled_from([alice, admin])), (3, sendable))

    @_fuzz
    @given(tokens, subjects)
    def attack(token: str, subject: str) -> None:
        headers = [(b"x-auth-token", token.encode()), (b"x-subject-token", subject.encode())]
        _check(live, lambda: client.request("DELETE", TOKENS, headers=headers))

    with client:
        attack()
