"""A port's `resource_request`: what Placement must hand the port, and how to read it back.

Neutron computes the request on every read of a port from the QoS policy in
force (the port's own, else its network's): the policy's minimum-bandwidth
rules give the resources, the network's physnet and the port's vnic type the
required traits. There are two renderings:

`groups` (extension `port-resource-request-groups`, Neutron since Yoga)::

    {"request_groups": [{"id": G,
                         "required": ["CUSTOM_PHYSNET_<NET>", "CUSTOM_VNIC_TYPE_<TYPE>"],
                         "resources": {"NET_BW_EGR_KILOBIT_PER_SEC": e,
                                       "NET_BW_IGR_KILOBIT_PER_SEC": i}}],
     "same_subtree": [G]}

    G = uuid5(namespace=<port id>, name=":".join(<ids of the rules, sorted>))

so the id stays the same for a port as long as its rules do; compute uses it
as the requester of the group and keys `binding:profile.allocation` by it.
On a network without a physnet (vxlan, geneve, local) the physnet trait is
`CUSTOM_NETWORK_TUNNEL_PROVIDER`, as Neutron asks for a tunnelled bridge.

`legacy` (extension `port-resource-request`, Stein to Xena)::

    {"required": [...], "resources": {...}}

one group without an id, and `null` on a network without a physnet: those
releases had no tunnel trait.

Either way the request is `null` when no minimum-bandwidth rule applies.
`read()` turns either rendering into request groups, as Nova does: a legacy
group is requested by the port itself.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import os_traits

__all__ = ["BandwidthRule", "RequestGroup", "PortRequest", "FORMATS", "EGRESS_CLASS",
           "INGRESS_CLASS", "TUNNEL_TRAIT", "physnet_trait", "vnic_type_trait", "group_id",
           "build", "read"]

FORMATS = ("groups", "legacy")
EGRESS_CLASS = "NET_BW_EGR_KILOBIT_PER_SEC"
INGRESS_CLASS = "NET_BW_IGR_KILOBIT_PER_SEC"
TUNNEL_TRAIT = "CUSTOM_NETWORK_TUNNEL_PROVIDER"
_CLASS_OF = {"egress": EGRESS_CLASS, "ingress": INGRESS_CLASS}


@dataclass(frozen=True)
class BandwidthRule:
    """A QoS minimum-bandwidth rule, as far as the request needs it."""

    id: str
    direction: str  # "egress" | "ingress"
    min_kbps: int


@dataclass(frozen=True)
class RequestGroup:
    """One group of resources and traits that one provider subtree must satisfy.

    `requester_id` is the group id (groups format) or the port id (legacy).
    """

    requester_id: str
    resources: Mapping[str, int]
    required: tuple[str, ...]


@dataclass(frozen=True)
class PortRequest:
    """A port's request read back: its groups and those that share a subtree."""

    groups: tuple[RequestGroup, ...] = ()
    same_subtree: tuple[str, ...] = field(default=())


def physnet_trait(physnet: str) -> str:
    """The trait of providers connected to `physnet` (e.g. CUSTOM_PHYSNET_PHYSNET0).

    Neutron's agents put it on their device providers and its ports ask for
    it: both sides normalise the name as os-traits does.
    """
    return str(os_traits.normalize_name(f"PHYSNET_{physnet}"))


def vnic_type_trait(vnic_type: str) -> str:
    """The trait of providers that can bind `vnic_type` (e.g. CUSTOM_VNIC_TYPE_DIRECT)."""
    return str(os_traits.normalize_name(f"VNIC_TYPE_{vnic_type}"))


def group_id(port_id: str, rules: Iterable[BandwidthRule]) -> str:
    """Neutron's stable group id: uuid5 of the rule ids under the port's id."""
    name = ":".join(sorted(rule.id for rule in rules))
    return str(uuid.uuid5(uuid.UUID(port_id), name))


def _resources(rules: Sequence[BandwidthRule]) -> dict[str, int]:
    return {_CLASS_OF[rule.direction]: rule.min_kbps for rule in rules}


def build(port_id: str, vnic_type: str, physnet: str | None,
          rules: Sequence[BandwidthRule], fmt: str = "groups") -> dict[str, Any] | None:
    """The port's `resource_request` in format `fmt`, or None when it asks for nothing."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown resource_request format {fmt!r}; one of {FORMATS}")
    if not rules:
        return None
    vnic = vnic_type_trait(vnic_type)
    if fmt == "legacy":
        if not physnet:
            return None
        return {"required": [physnet_trait(physnet), vnic], "resources": _resources(rules)}
    net = physnet_trait(physnet) if physnet else TUNNEL_TRAIT
    gid = group_id(port_id, rules)
    return {"request_groups": [{"id": gid, "required": [net, vnic],
                                "resources": _resources(rules)}],
            "same_subtree": [gid]}


def _group(requester_id: str, raw: Mapping[str, Any]) -> RequestGroup:
    resources = {str(k): int(v) for k, v in (raw.get("resources") or {}).items()}
    return RequestGroup(requester_id, resources, tuple(raw.get("required") or ()))


def read(port_id: str, resource_request: Mapping[str, Any] | None) -> PortRequest:
    """The request groups of a port's `resource_request`, whichever format it has."""
    if not resource_request:
        return PortRequest()
    if "request_groups" not in resource_request:
        if not resource_request.get("resources"):
            return PortRequest()
        return PortRequest((_group(port_id, resource_request),))
    groups = tuple(_group(str(raw["id"]), raw) for raw in resource_request["request_groups"]
                   if raw.get("resources"))
    same = tuple(str(g) for g in resource_request.get("same_subtree") or ())
    return PortRequest(groups, same)
