"""The policy table: upstream defaults in legacy and secure-RBAC modes, and overrides."""

from __future__ import annotations

import pytest

from stowage.compute.policy import COMPUTE_RULES
from stowage.config import PolicySettings
from stowage.context import RequestContext
from stowage.policy import Enforcer, PolicyNotAuthorized

ADMIN = RequestContext("admin", "admin", ("admin",))
SERVICE = RequestContext("nova", "service", ("service",))
READER = RequestContext("alice", "proj-a", ("reader",))
NOBODY = RequestContext("bob", "proj-b", ())


def test_admin_or_service_rules() -> None:
    legacy = Enforcer(PolicySettings(enforce_new_defaults=False))
    assert legacy.allowed("placement:resource_providers:list", ADMIN)
    assert legacy.allowed("placement:resource_providers:list", SERVICE)
    assert not legacy.allowed("placement:resource_providers:list", READER)
    assert not legacy.allowed("placement:resource_providers:list", NOBODY)


def test_project_reader_sees_only_its_own_usages() -> None:
    enforcer = Enforcer(PolicySettings(enforce_new_defaults=True))
    assert enforcer.allowed("placement:usages", READER, {"project_id": "proj-a"})
    assert not enforcer.allowed("placement:usages", READER, {"project_id": "proj-b"})


def test_reshaper_needs_service_role_in_secure_mode_only() -> None:
    secure = Enforcer(PolicySettings(enforce_new_defaults=True))
    legacy = Enforcer(PolicySettings(enforce_new_defaults=False))
    assert secure.allowed("placement:reshaper:reshape", SERVICE)
    assert not secure.allowed("placement:reshaper:reshape", ADMIN)
    # Legacy mode ORs the deprecated "role:admin" default in.
    assert legacy.allowed("placement:reshaper:reshape", ADMIN)


def test_overrides_replace_defaults() -> None:
    enforcer = Enforcer(PolicySettings(overrides={"placement:traits:list": "@",
                                                  "placement:traits:show": "!"}))
    assert enforcer.allowed("placement:traits:list", NOBODY)
    assert not enforcer.allowed("placement:traits:show", ADMIN)
    with pytest.raises(PolicyNotAuthorized, match="placement:traits:show"):
        enforcer.authorize("placement:traits:show", ADMIN)


@pytest.mark.parametrize(("check", "ctx", "expected"), [
    ("role:admin and not role:reader", ADMIN, True),
    ("(role:reader or role:member) and project_id:%(project_id)s", READER, True),
    ("user_id:%(user_id)s", NOBODY, True),
    ("is_admin:True", ADMIN, True),
])
def test_check_string_grammar(check: str, ctx: RequestContext, expected: bool) -> None:
    enforcer = Enforcer(PolicySettings(overrides={"x": check}))
    assert enforcer.allowed("x", ctx) is expected


def test_system_scoped_tokens_are_refused_by_project_scoped_rules() -> None:
    system_admin = RequestContext("admin", None, ("admin",), system_scope="all")
    open_rules = Enforcer(PolicySettings(overrides={"placement:traits:list": "@"}))
    assert not open_rules.allowed("placement:traits:list", system_admin)
    assert not open_rules.allowed("placement:resource_providers:list", system_admin)


_SERVER_WRITES = ("create", "delete", "update", "resize", "confirm_resize", "revert_resize",
                  "start", "stop")
_SERVER_READS = ("index", "detail", "show")
OWN = {"project_id": "proj-a", "user_id": "alice"}


def test_default_mode_is_secure_rbac() -> None:
    # A token of the owning project with no role may change nothing by default.
    enforcer = Enforcer(PolicySettings(), COMPUTE_RULES)
    nobody_in_a = RequestContext("carol", "proj-a", ())
    assert not enforcer.allowed("os_compute_api:servers:create", nobody_in_a, OWN)


@pytest.mark.parametrize("action", _SERVER_WRITES)
def test_server_writes_need_member_under_new_defaults(action: str) -> None:
    secure = Enforcer(PolicySettings(enforce_new_defaults=True), COMPUTE_RULES)
    rule = "os_compute_api:servers:" + action
    assert not secure.allowed(rule, RequestContext("carol", "proj-a", ()), OWN)
    assert not secure.allowed(rule, READER, OWN)
    assert secure.allowed(rule, RequestContext("alice", "proj-a", ("member", "reader")), OWN)
    assert not secure.allowed(rule, RequestContext("eve", "proj-b", ("member",)), OWN)
    assert secure.allowed(rule, ADMIN, OWN)


@pytest.mark.parametrize("action", _SERVER_READS)
def test_server_reads_need_reader_under_new_defaults(action: str) -> None:
    secure = Enforcer(PolicySettings(enforce_new_defaults=True), COMPUTE_RULES)
    rule = "os_compute_api:servers:" + action
    assert secure.allowed(rule, READER, OWN)
    assert not secure.allowed(rule, RequestContext("carol", "proj-a", ()), OWN)
    assert not secure.allowed(rule, RequestContext("eve", "proj-b", ("reader",)), OWN)


@pytest.mark.parametrize("action", _SERVER_WRITES + _SERVER_READS)
def test_legacy_defaults_let_any_token_of_the_project(action: str) -> None:
    legacy = Enforcer(PolicySettings(enforce_new_defaults=False), COMPUTE_RULES)
    rule = "os_compute_api:servers:" + action
    assert legacy.allowed(rule, RequestContext("carol", "proj-a", ()), OWN)
    assert not legacy.allowed(rule, RequestContext("eve", "proj-b", ()), OWN)
