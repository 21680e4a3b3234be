"""Neutron's and Glance's rules as stowage evaluates them: the check-string forms they use
(`tenant_id:%(network:tenant_id)s`, `field:networks:shared=True`, `"public":%(visibility)s`)
and their secure-RBAC defaults for readers, members, role-less tokens and other projects."""

from __future__ import annotations

from stowage.config import PolicySettings
from stowage.context import RequestContext
from stowage.image.policy import IMAGE_RULES
from stowage.network.policy import NETWORK_RULES
from stowage.policy import Enforcer

ADMIN = RequestContext("admin", "admin", ("admin", "member", "reader"))
MEMBER = RequestContext("alice", "proj-a", ("member", "reader"))
READER = RequestContext("rita", "proj-a", ("reader",))
NOBODY = RequestContext("nobody", "proj-a", ())
OTHER = RequestContext("bob", "proj-b", ("member", "reader"))
SERVICE = RequestContext("nova", "service", ("service",))
SYSTEM_ADMIN = RequestContext("admin", None, ("admin",), system_scope="all")

NET_A = {"project_id": "proj-a", "tenant_id": "proj-a", "shared": False}
SHARED_NET_OF_B = {"project_id": "proj-b", "tenant_id": "proj-b", "shared": True}


def _net() -> Enforcer:
    return Enforcer(PolicySettings(), NETWORK_RULES)


def test_check_string_forms_neutron_and_glance_use() -> None:
    rules = Enforcer(PolicySettings(), {
        "owner": ("tenant_id:%(network:tenant_id)s", None),
        "shared": ("field:networks:shared=True", None),
        "device": ("field:port:device_owner=~^network:", None),
        "public": ('"public":%(visibility)s', None)})
    assert rules.allowed("owner", MEMBER, {"network:tenant_id": "proj-a"})
    assert not rules.allowed("owner", MEMBER, {"network:tenant_id": "proj-b"})
    assert rules.allowed("shared", NOBODY, {"shared": True})
    assert not rules.allowed("shared", NOBODY, {"shared": False})
    assert not rules.allowed("shared", NOBODY, {})
    assert rules.allowed("device", NOBODY, {"device_owner": "network:dhcp"})
    assert not rules.allowed("device", NOBODY, {"device_owner": "compute:nova"})
    assert rules.allowed("public", NOBODY, {"visibility": "public"})
    assert not rules.allowed("public", NOBODY, {"visibility": "private"})


def test_readers_read_members_write_their_projects_networks() -> None:
    rules = _net()
    for action in ("create_network", "update_network", "delete_network"):
        assert rules.allowed(action, MEMBER, NET_A)
        assert rules.allowed(action, ADMIN, NET_A)
        for caller in (READER, NOBODY, OTHER, SYSTEM_ADMIN):
            assert not rules.allowed(action, caller, NET_A), (action, caller)
    assert rules.allowed("get_network", READER, NET_A)
    assert not rules.allowed("get_network", NOBODY, NET_A)
    assert not rules.allowed("get_network", OTHER, NET_A)
    # A shared network is seen by anybody, and changed by its project or an admin only.
    assert rules.allowed("get_network", OTHER, SHARED_NET_OF_B | {"project_id": "proj-b"})
    assert not rules.allowed("update_network", MEMBER, SHARED_NET_OF_B)


def test_attribute_rules_and_the_network_owner() -> None:
    rules = _net()
    port = {"project_id": "proj-a", "network:tenant_id": "proj-b", "shared": True}
    assert rules.allowed("create_port", MEMBER, port)
    assert not rules.allowed("create_port:binding:host_id", MEMBER, port)
    assert rules.allowed("create_port:binding:host_id", SERVICE, port)
    # Naming an address on somebody else's network is for its owner.
    assert not rules.allowed("create_port:fixed_ips:ip_address", MEMBER, port)
    assert rules.allowed("create_port:fixed_ips:ip_address", MEMBER,
                         port | {"network:tenant_id": "proj-a"})
    assert rules.allowed("create_port:device_owner", MEMBER, port | {"device_owner": "x"})
    assert not rules.allowed("create_port:device_owner", MEMBER,
                             port | {"device_owner": "network:dhcp"})
    assert not rules.allowed("create_network:shared", MEMBER, NET_A)
    assert not rules.allowed("create_policy", MEMBER, NET_A)


def test_legacy_defaults_let_any_token_of_the_project_write() -> None:
    legacy = Enforcer(PolicySettings(enforce_new_defaults=False), NETWORK_RULES)
    assert legacy.allowed("update_network", NOBODY, NET_A)
    assert not legacy.allowed("update_network", OTHER, NET_A)
    assert not legacy.allowed("create_network:shared", NOBODY, NET_A)


def test_glance_image_rules() -> None:
    rules = Enforcer(PolicySettings(), IMAGE_RULES)
    own = {"project_id": "proj-a", "owner": "proj-a", "visibility": "private"}
    public_of_b = {"project_id": "proj-b", "owner": "proj-b", "visibility": "public"}
    assert rules.allowed("add_image", MEMBER, own)
    assert not rules.allowed("add_image", MEMBER, own | {"owner": "proj-b"})
    for caller in (READER, NOBODY, SYSTEM_ADMIN):
        assert not rules.allowed("add_image", caller, own)
    assert rules.allowed("get_image", READER, own)
    assert rules.allowed("get_image", READER, public_of_b)
    assert not rules.allowed("get_image", NOBODY, public_of_b)
    assert not rules.allowed("modify_image", MEMBER, public_of_b)
    assert rules.allowed("modify_image", OTHER, public_of_b)
    assert not rules.allowed("publicize_image", MEMBER, own)
    assert rules.allowed("publicize_image", ADMIN, own)
    assert rules.allowed("communitize_image", MEMBER, own)
