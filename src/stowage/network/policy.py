"""Who may see and change what: Neutron's default policy, reduced to the rules stowage serves.

- An admin token sees and changes everything.
- Anyone else sees the records of their project, plus shared networks (and
  their subnets) and shared QoS policies; seeing a port is owning it or
  owning its network. What a caller may not see is 404, as in Neutron.
- Changing a record takes owning it (a shared network seen from another
  project is 403). QoS policies and rules are created, changed and deleted
  by admins only.
- Admin-only attributes: the provider attributes of networks, `shared` of a
  network, the port binding attributes `binding:host_id`,
  `binding:profile`, `binding:vif_type`, `binding:vif_details`, the port's
  `resource_request`, and the whole bindings sub-resource. A non-admin
  sending one gets 403; one reading a record does not see them.

stowage's noauth2 tokens carry no member/reader split for this service: a
non-admin token acts as a member of its project.
"""

from __future__ import annotations

from stowage.context import RequestContext
from stowage.errors import Forbidden
from stowage.network import errors as e

__all__ = ["visible", "owns", "deny", "deny_attribute", "require_admin", "ADMIN_NETWORK_ATTRS",
           "ADMIN_PORT_ATTRS"]

ADMIN_NETWORK_ATTRS = ("provider:network_type", "provider:physical_network",
                       "provider:segmentation_id")
ADMIN_PORT_ATTRS = ("binding:host_id", "binding:profile", "binding:vif_type",
                    "binding:vif_details", "resource_request")


def visible(ctx: RequestContext, project_id: str, shared: bool = False) -> bool:
    return ctx.is_admin or shared or project_id == ctx.project_id


def owns(ctx: RequestContext, project_id: str) -> bool:
    return ctx.is_admin or project_id == ctx.project_id


def deny(action: str) -> Forbidden:
    return Forbidden(f"rule:{action} is disallowed by policy", e.POLICY_NOT_AUTHORIZED)


def deny_attribute(action: str, attribute: str) -> Forbidden:
    return Forbidden(f"(rule:{action} and rule:{action}:{attribute}) is disallowed by policy",
                     e.POLICY_NOT_AUTHORIZED)


def require_admin(ctx: RequestContext, action: str) -> None:
    if not ctx.is_admin:
        raise deny(action)
