"""Who may see and change what: Neutron's rule names and secure-RBAC defaults (2023.2 and
later) for the resources stowage serves, and the one question domain code asks of them.

With the defaults (`[policy] enforce_new_defaults = true`):

- admins (`rule:admin_only`) see and change everything;
- a project's **readers** see its networks, subnets, ports, security groups,
  routers, floating IPs and QoS policies; its **members** also create, change and delete them; a
  token with neither role, or without a project (system scope), may do
  none of it. Anybody with a role sees shared networks (and their subnets)
  and shared QoS policies;
- a network's owner (a member of its project) decides about its subnets
  and about addresses and MACs of ports on it (`rule:network_owner`);
- QoS policies and their rules are changed by admins only;
- quotas (`get_quota`, `update_quota`, `delete_quota`) are admins' only,
  but a project reads its own limits, defaults and usage without a rule,
  as in Neutron;
- admin-only attributes are rules of their own, `ACTION:ATTRIBUTE`
  (`create_network:shared`, `update_port:binding:host_id`,
  `get_port:binding:profile`, ...): a caller without them gets 403 for
  sending one and does not see it in answers. An operator may add such a
  rule for any attribute (`update_network:mtu`);
- the `service` role (`rule:service_api`) may do what Nova does to ports
  and their bindings.

What a caller may not see is 404; a write the rules refuse on a record the
caller may see is 403 `PolicyNotAuthorized` ("rule:update_network is
disallowed by policy"), as Neutron's API layer answers. An operator's
`[policy]` file overrides any of these rules by name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from stowage.config import PolicySettings
from stowage.context import RequestContext
from stowage.errors import DomainError, Forbidden
from stowage.network import errors as e
from stowage.policy import Enforcer

__all__ = ["NETWORK_RULES", "TAGGED_COLLECTIONS", "Guard", "deny", "enforcer"]

ADMIN = "rule:admin_only"
SERVICE = "rule:service_api"
_MEMBER = "role:member and project_id:%(project_id)s"
_READER = "role:reader and project_id:%(project_id)s"
ADMIN_OR_SERVICE = f"({ADMIN}) or ({SERVICE})"
ADMIN_OR_MEMBER = f"({ADMIN}) or ({_MEMBER})"
ADMIN_OR_READER = f"({ADMIN}) or ({_READER})"
ADMIN_OR_NET_OWNER_MEMBER = f"({ADMIN}) or (role:member and rule:network_owner)"
ADMIN_OR_NET_OWNER_READER = f"({ADMIN}) or (role:reader and rule:network_owner)"
ADMIN_OR_SG_OWNER_MEMBER = f"({ADMIN}) or (role:member and rule:sg_owner)"
ADMIN_OR_SG_OWNER_READER = f"({ADMIN}) or (role:reader and rule:sg_owner)"
# Legacy (deprecated) defaults, used only with enforce_new_defaults = false.
_ANY = "rule:regular_user"
_OWNER = "rule:admin_or_owner"
_LEGACY_ADMIN = "rule:admin_only"

Rules = dict[str, tuple[str, str | None]]

_BASE: Rules = {
    "context_is_admin": ("role:admin", None),
    "service_api": ("role:service", None),
    "owner": ("tenant_id:%(tenant_id)s", None),
    "admin_or_owner": ("rule:context_is_admin or rule:owner", None),
    "context_is_advsvc": ("role:advsvc", None),
    "admin_or_network_owner": ("rule:context_is_admin or tenant_id:%(network:tenant_id)s",
                               None),
    "admin_owner_or_network_owner": ("rule:owner or rule:admin_or_network_owner", None),
    "network_owner": ("tenant_id:%(network:tenant_id)s", None),
    "admin_only": ("rule:context_is_admin", None),
    "regular_user": ("", None),
    "shared": ("field:networks:shared=True", None),
    "external": ("field:networks:router:external=True", None),
    "default": ("rule:admin_or_owner", None),
    "admin_or_ext_parent_owner": ("rule:context_is_admin or "
                                  "tenant_id:%(ext_parent:tenant_id)s", None),
    "ext_parent_owner": ("tenant_id:%(ext_parent:tenant_id)s", None),
    "sg_owner": ("tenant_id:%(security_group:tenant_id)s", None),
    "network_device": ("field:port:device_owner=~^network:", None),
    "shared_subnetpools": ("field:subnetpools:shared=True", None),
}


def _admin_attrs(action: str, names: Iterable[str]) -> Rules:
    return {f"{action}:{name}": (ADMIN, _LEGACY_ADMIN) for name in names}


_PROVIDER = ("provider:network_type", "provider:physical_network", "provider:segmentation_id")
_NETWORKS: Rules = {
    "create_network": (ADMIN_OR_MEMBER, _ANY),
    **_admin_attrs("create_network", ("shared", "router:external", *_PROVIDER)),
    "get_network": (f"{ADMIN_OR_READER} or rule:shared or rule:external or "
                    "rule:context_is_advsvc",
                    f"{_OWNER} or rule:shared or rule:external or rule:context_is_advsvc"),
    **_admin_attrs("get_network", _PROVIDER),
    "update_network": (ADMIN_OR_MEMBER, _OWNER),
    **_admin_attrs("update_network", ("shared", "router:external", *_PROVIDER)),
    "delete_network": (ADMIN_OR_MEMBER, _OWNER),
}
_SUBNETS: Rules = {
    "create_subnet": (ADMIN_OR_NET_OWNER_MEMBER, "rule:admin_or_network_owner"),
    "get_subnet": (f"{ADMIN_OR_READER} or rule:shared", f"{_OWNER} or rule:shared"),
    "update_subnet": (ADMIN_OR_NET_OWNER_MEMBER, "rule:admin_or_network_owner"),
    "delete_subnet": (ADMIN_OR_NET_OWNER_MEMBER, "rule:admin_or_network_owner"),
}
_DEVICE_OWNER = f"not rule:network_device or {ADMIN_OR_NET_OWNER_MEMBER} or {SERVICE}"
_NET_OWNER_OR_SERVICE = f"{ADMIN_OR_NET_OWNER_MEMBER} or {SERVICE}"
_NET_OWNER_SHARED_OR_SERVICE = f"{ADMIN_OR_NET_OWNER_MEMBER} or rule:shared or {SERVICE}"
_PORT_BINDING = ("binding:host_id", "binding:profile")
_PORTS: Rules = {
    "create_port": (f"{ADMIN_OR_MEMBER} or {SERVICE}", _ANY),
    "create_port:device_owner": (_DEVICE_OWNER, None),
    "create_port:mac_address": (_NET_OWNER_OR_SERVICE, None),
    "create_port:fixed_ips": (_NET_OWNER_SHARED_OR_SERVICE, None),
    "create_port:fixed_ips:ip_address": (_NET_OWNER_OR_SERVICE, None),
    "create_port:fixed_ips:subnet_id": (_NET_OWNER_SHARED_OR_SERVICE, None),
    "create_port:binding:vnic_type": (f"{ADMIN_OR_MEMBER} or {SERVICE}", _ANY),
    **{f"create_port:{name}": (ADMIN_OR_SERVICE, _LEGACY_ADMIN) for name in _PORT_BINDING},
    "get_port": (f"{ADMIN_OR_READER} or ({ADMIN_OR_NET_OWNER_READER}) or {SERVICE} or "
                 "rule:context_is_advsvc",
                 "rule:context_is_advsvc or rule:admin_owner_or_network_owner"),
    **{f"get_port:{name}": (ADMIN_OR_SERVICE, _LEGACY_ADMIN)
       for name in ("binding:vif_type", "binding:vif_details", "binding:host_id",
                    "binding:profile", "resource_request")},
    "update_port": (f"{ADMIN_OR_MEMBER} or {SERVICE} or rule:context_is_advsvc",
                    f"{_OWNER} or rule:context_is_advsvc"),
    "update_port:device_owner": (_DEVICE_OWNER, None),
    "update_port:fixed_ips": (_NET_OWNER_OR_SERVICE, None),
    "update_port:fixed_ips:ip_address": (_NET_OWNER_OR_SERVICE, None),
    "update_port:fixed_ips:subnet_id": (_NET_OWNER_SHARED_OR_SERVICE, None),
    "update_port:binding:vnic_type": (f"{ADMIN_OR_MEMBER} or {SERVICE}", _OWNER),
    **{f"update_port:{name}": (ADMIN_OR_SERVICE, _LEGACY_ADMIN) for name in _PORT_BINDING},
    "delete_port": (f"{ADMIN_OR_NET_OWNER_MEMBER} or ({_MEMBER}) or {SERVICE} or "
                    "rule:context_is_advsvc",
                    "rule:context_is_advsvc or rule:admin_owner_or_network_owner"),
    # Multiple port bindings (binding-extended): what Nova does during a live migration.
    **{name: (ADMIN_OR_SERVICE, _LEGACY_ADMIN)
       for name in ("get_port_binding", "create_port_binding", "update_port_binding",
                    "activate", "delete_port_binding")},
}
_SECURITY_GROUPS: Rules = {
    "create_security_group": (ADMIN_OR_MEMBER, _OWNER),
    "get_security_group": (ADMIN_OR_READER, _ANY),
    "update_security_group": (ADMIN_OR_MEMBER, _OWNER),
    "delete_security_group": (ADMIN_OR_MEMBER, _OWNER),
    "create_security_group_rule": (ADMIN_OR_MEMBER, _OWNER),
    "get_security_group_rule": (f"{ADMIN_OR_READER} or ({ADMIN_OR_SG_OWNER_READER})",
                                f"{_OWNER} or rule:sg_owner"),
    "delete_security_group_rule": (f"{ADMIN_OR_MEMBER} or ({ADMIN_OR_SG_OWNER_MEMBER})",
                                   f"{_OWNER} or rule:sg_owner"),
}
# neutron/conf/policies/subnetpool.py (address scopes and prefix actions are not served).
_SUBNETPOOLS: Rules = {
    "create_subnetpool": (ADMIN_OR_MEMBER, _ANY),
    **_admin_attrs("create_subnetpool", ("shared", "is_default")),
    "get_subnetpool": (f"{ADMIN_OR_READER} or rule:shared_subnetpools",
                       f"{_OWNER} or rule:shared_subnetpools"),
    "update_subnetpool": (ADMIN_OR_MEMBER, _OWNER),
    **_admin_attrs("update_subnetpool", ("is_default",)),
    "delete_subnetpool": (ADMIN_OR_MEMBER, _OWNER),
}
_QOS: Rules = {
    # Neutron shares QoS policies through its RBAC table; stowage's `shared` flag says it.
    "get_policy": (f"{ADMIN_OR_READER} or field:policies:shared=True", _ANY),
    "create_policy": (ADMIN, _LEGACY_ADMIN),
    "update_policy": (ADMIN, _LEGACY_ADMIN),
    "delete_policy": (ADMIN, _LEGACY_ADMIN),
    "get_rule_type": (ADMIN, _ANY),
    "get_policy_minimum_bandwidth_rule": (f"({ADMIN}) or (role:reader and "
                                          "rule:ext_parent_owner)", _ANY),
    "create_policy_minimum_bandwidth_rule": (ADMIN, _LEGACY_ADMIN),
    "update_policy_minimum_bandwidth_rule": (ADMIN, _LEGACY_ADMIN),
    "delete_policy_minimum_bandwidth_rule": (ADMIN, _LEGACY_ADMIN),
}

# Routers and floating IPs (neutron/conf/policies/router.py, floatingip.py): a project's
# members; choosing the gateway's or a floating IP's address, or SNAT, is admins' only.
_GATEWAY = "external_gateway_info"
_ROUTERS: Rules = {
    **{name: (ADMIN_OR_MEMBER, _OWNER)
       for name in ("create_router", f"create_router:{_GATEWAY}",
                    f"create_router:{_GATEWAY}:network_id", "update_router",
                    f"update_router:{_GATEWAY}", f"update_router:{_GATEWAY}:network_id",
                    "delete_router", "add_router_interface", "remove_router_interface",
                    "add_extraroutes", "remove_extraroutes")},
    **_admin_attrs("create_router", (f"{_GATEWAY}:enable_snat",
                                     f"{_GATEWAY}:external_fixed_ips")),
    **_admin_attrs("update_router", (f"{_GATEWAY}:enable_snat",
                                     f"{_GATEWAY}:external_fixed_ips")),
    "get_router": (ADMIN_OR_READER, _OWNER),
}
_FLOATING_IPS: Rules = {
    "create_floatingip": (ADMIN_OR_MEMBER, _ANY),
    **_admin_attrs("create_floatingip", ("floating_ip_address",)),
    "get_floatingip": (ADMIN_OR_READER, _OWNER),
    "update_floatingip": (ADMIN_OR_MEMBER, _OWNER),
    "delete_floatingip": (ADMIN_OR_MEMBER, _OWNER),
}

# Quotas (neutron/conf/policies/quotas.py): admins only. A project reads its own limits
# without any rule, as Neutron's quotas controller skips `get_quota` for them
# (network/quotas.py `authorize`).
_QUOTAS: Rules = {name: (ADMIN, _LEGACY_ADMIN)
                  for name in ("get_quota", "update_quota", "delete_quota")}

# Agents (neutron/conf/policies/agent.py): admins only; the others list none.
_AGENTS: Rules = {name: (ADMIN, _LEGACY_ADMIN)
                  for name in ("get_agent", "update_agent", "delete_agent")}

# Tags (standard-attr-tag): `get_<collection>_tags` as reading the record,
# `create_/update_/delete_<collection>_tags` as changing it (neutron/conf/policies/*.py).
TAGGED_COLLECTIONS = ("networks", "subnets", "ports", "security_groups", "routers",
                      "floatingips", "subnetpools")
_SERVED = {**_NETWORKS, **_SUBNETS, **_PORTS, **_SECURITY_GROUPS, **_SUBNETPOOLS,
           **_ROUTERS, **_FLOATING_IPS}


def _tag_rules() -> Rules:
    rules: Rules = {}
    for collection in TAGGED_COLLECTIONS:
        member = collection[:-1]
        read = _SERVED.get(f"get_{member}", (ADMIN_OR_READER, _OWNER))
        change = _SERVED.get(f"update_{member}", (ADMIN_OR_MEMBER, _OWNER))
        rules[f"get_{collection}_tags"] = read
        for verb in ("create", "update", "delete"):
            rules[f"{verb}_{collection}_tags"] = change
    return rules


NETWORK_RULES: Rules = {**_BASE, **_NETWORKS, **_SUBNETS, **_PORTS, **_SECURITY_GROUPS,
                        **_QOS, **_ROUTERS, **_FLOATING_IPS, **_QUOTAS, **_SUBNETPOOLS,
                        **_AGENTS, **_tag_rules()}


def enforcer(settings: PolicySettings) -> Enforcer:
    """The Network service's rules with the operator's overrides; built once per app."""
    return Enforcer(settings, NETWORK_RULES)


def deny(rules: Iterable[str]) -> Forbidden:
    """Neutron's refusal, naming every rule the request was held to."""
    names = [f"rule:{name}" for name in rules]
    text = names[0] if len(names) == 1 else "(" + " and ".join(names) + ")"
    return Forbidden(f"{text} is disallowed by policy", e.POLICY_NOT_AUTHORIZED)


class Guard:
    """The caller and the rules, handed to the domain functions that change records.

    A target is the record as the API shows it (`project_id`, `tenant_id`,
    `shared`, ...) plus the owner of its parent (`network:tenant_id`,
    `security_group:tenant_id`, `ext_parent:tenant_id`)."""

    def __init__(self, rules: Enforcer, ctx: RequestContext) -> None:
        self.rules = rules
        self.ctx = ctx

    def allows(self, action: str, target: Mapping[str, object]) -> bool:
        return self.rules.allowed(action, self.ctx, target)

    def check(self, action: str, target: Mapping[str, object],
              attributes: Iterable[str] = (),
              missing: Callable[[], DomainError] | None = None,
              seen: Mapping[str, object] | None = None) -> None:
        """Refuse `action` (with the rules of the `attributes` sent) on `target`: 403, or
        `missing()` (404) when the caller may not even see the record as it is (`seen`;
        Neutron's `get_<resource>` rule), so that a refusal gives nothing away."""
        held = [action, *(f"{action}:{name}" for name in attributes
                          if self.rules.defines(f"{action}:{name}"))]
        if all(self.allows(name, target) for name in held):
            return
        if missing is not None and not self.allows(shown_by(action), seen or target):
            raise missing()
        raise deny(held)

    def shown(self, action: str, view: dict[str, Any],
              target: Mapping[str, object] | None = None) -> dict[str, Any]:
        """The view less the attributes whose `get_<resource>:<attribute>` rule refuses
        (the rules read `target`, the view itself by default)."""
        return {k: v for k, v in view.items()
                if not self.rules.defines(f"{action}:{k}")
                or self.allows(f"{action}:{k}", view if target is None else target)}


def shown_by(action: str) -> str:
    """The rule that lets a caller see what `action` changes (update_port -> get_port)."""
    verb, _, resource = action.partition("_")
    return "get_" + resource if verb in ("create", "update", "delete") else action
