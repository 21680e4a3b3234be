"""What a server's ports ask of Placement, and which provider serves each of them.

A port's `resource_request` (either format, read by
`network.resource_request.read`) becomes request groups of the server's
allocation candidates query, one suffixed group per port group, the suffix
being the group's requester id (the group id; the port id for the legacy
format), as Nova's `ResourceRequest` adds groups "from outside" (Placement
1.33 allows such suffixes). The port's `same_subtree` list is passed on.

An SR-IOV port (`binding:vnic_type` direct or macvtap) on a physnet also
needs a virtual function: `SRIOV_NET_VF: 1` joins its first group, so that
the PF whose provider serves its bandwidth also gives the VF (see
docs/network-devices.md); a VF port without a resource request gets a group
of its own (requester: the port) asking for the VF under the physnet and
vnic type traits.

After the claim, the groups are mapped to providers: from the chosen
candidate's `mappings` (1.34) when there is one (`from_mappings`), else from
the allocation the server holds, matching each group's traits and amounts
(`from_allocation`: a revert, a rollback or a recovered step, which only have
the allocation). `profile_allocation` renders the mapping as Nova writes it
into `binding:profile.allocation`: {group id: provider} for the groups
format, the provider uuid for the legacy one.

Pure functions, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from stowage.compute import resources
from stowage.network.resource_request import physnet_trait, read, vnic_type_trait

__all__ = ["PortGroup", "PortRequest", "from_port", "placement_groups", "same_subtrees",
           "from_mappings", "from_allocation", "profile_allocation", "amounts",
           "NoMapping", "VF_VNIC_TYPES", "VF_CLASS"]

# The vnic types whose port is a virtual function of an SR-IOV PF.
VF_VNIC_TYPES = ("direct", "macvtap")
VF_CLASS = "SRIOV_NET_VF"
Allocations = Mapping[str, Mapping[str, int]]


class NoMapping(Exception):
    """No provider of the allocation can serve a group (the allocation and the ports differ)."""


@dataclass(frozen=True)
class PortGroup:
    id: str  # the requester id, used as the Placement suffix
    resources: Mapping[str, int]
    required: tuple[str, ...]


@dataclass(frozen=True)
class PortRequest:
    """One port's share of the server's request; `fmt` is None without a resource request."""

    port_id: str
    vnic_type: str
    physnet: str | None
    fmt: str | None
    groups: tuple[PortGroup, ...] = ()
    same_subtree: tuple[str, ...] = ()

    @property
    def needs_vf(self) -> bool:
        return any(VF_CLASS in g.resources for g in self.groups)

    @property
    def vf_group(self) -> str | None:
        """The group whose provider (a PF) gives the port's VF."""
        return next((g.id for g in self.groups if VF_CLASS in g.resources), None)

    def to_json(self) -> dict[str, Any]:
        return {"port_id": self.port_id, "vnic_type": self.vnic_type, "physnet": self.physnet,
                "format": self.fmt, "same_subtree": list(self.same_subtree),
                "groups": [{"id": g.id, "resources": dict(g.resources),
                            "required": list(g.required)} for g in self.groups]}

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> PortRequest:
        groups = tuple(PortGroup(str(g["id"]), {str(k): int(v) for k, v in
                                                 g["resources"].items()},
                                 tuple(g.get("required") or ()))
                       for g in raw.get("groups") or ())
        return cls(str(raw["port_id"]), str(raw.get("vnic_type") or "normal"),
                   raw.get("physnet"), raw.get("format"), groups,
                   tuple(raw.get("same_subtree") or ()))


def from_port(port: Mapping[str, Any], physnet: str | None) -> PortRequest:
    """The request of a port as the Networking API shows it to an admin."""
    port_id = str(port["id"])
    raw = port.get("resource_request")
    read_back = read(port_id, raw)
    fmt = None if not read_back.groups else (
        "groups" if "request_groups" in (raw or {}) else "legacy")
    groups = [PortGroup(g.requester_id, dict(g.resources), tuple(g.required))
              for g in read_back.groups]
    vnic = str(port.get("binding:vnic_type") or "normal")
    if vnic in VF_VNIC_TYPES and physnet:
        if groups:
            first = groups[0]
            groups[0] = PortGroup(first.id, {**first.resources, VF_CLASS: 1}, first.required)
        else:
            groups = [PortGroup(port_id, {VF_CLASS: 1},
                                (physnet_trait(physnet), vnic_type_trait(vnic)))]
    return PortRequest(port_id, vnic, physnet, fmt, tuple(groups), read_back.same_subtree)


def placement_groups(requests: Iterable[PortRequest]) -> dict[str, resources.RequestGroup]:
    """The suffixed groups the ports add to the query (suffix = requester id)."""
    return {g.id: resources.RequestGroup(resources=dict(g.resources), required=set(g.required))
            for r in requests for g in r.groups}


def same_subtrees(requests: Iterable[PortRequest]) -> list[list[str]]:
    return [sorted(r.same_subtree) for r in requests if r.same_subtree]


def amounts(requests: Iterable[PortRequest]) -> dict[str, int]:
    """What the ports hold in all, by resource class."""
    total: dict[str, int] = {}
    for group in (g for r in requests for g in r.groups):
        for rc, n in group.resources.items():
            total[rc] = total.get(rc, 0) + n
    return total


def from_mappings(requests: Iterable[PortRequest],
                  mappings: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """group id -> provider, from an allocation request's `mappings` (suffix -> [provider])."""
    found = {}
    for group in (g for r in requests for g in r.groups):
        providers = mappings.get(group.id) or ()
        if not providers:
            raise NoMapping(f"the chosen candidate maps no provider to group {group.id}")
        found[group.id] = str(providers[0])
    return found


def from_allocation(requests: Sequence[PortRequest], allocation: Allocations,
                    traits: Mapping[str, Iterable[str]]) -> dict[str, str]:
    """group id -> provider, found in what the server holds (Nova's
    `fill_provider_mapping_based_on_allocation`): each group on a provider that has
    its traits and still holds its amounts once the groups before it took theirs."""
    groups = [g for r in requests for g in r.groups]
    left = {rp: dict(res) for rp, res in allocation.items()}
    have = {rp: set(traits.get(rp, ())) for rp in allocation}
    found: dict[str, str] = {}
    if not _assign(groups, 0, left, have, found):
        raise NoMapping(f"no provider of {sorted(allocation)} serves the port groups "
                        f"{[g.id for g in groups]}")
    return found


def _assign(groups: Sequence[PortGroup], index: int, left: dict[str, dict[str, int]],
            have: Mapping[str, set[str]], found: dict[str, str]) -> bool:
    """Backtracking: place groups[index:] on providers with room left (deterministic order)."""
    if index == len(groups):
        return True
    group = groups[index]
    for rp in sorted(left):
        if not set(group.required) <= have[rp]:
            continue
        if any(left[rp].get(rc, 0) < n for rc, n in group.resources.items()):
            continue
        for rc, n in group.resources.items():
            left[rp][rc] -= n
        found[group.id] = rp
        if _assign(groups, index + 1, left, have, found):
            return True
        for rc, n in group.resources.items():
            left[rp][rc] += n
        del found[group.id]
    return False


def profile_allocation(request: PortRequest, mapping: Mapping[str, str]) -> Any:
    """`binding:profile.allocation` for the port (None: it has no resource request)."""
    if request.fmt is None:
        return None
    if request.fmt == "legacy":
        return mapping[request.groups[0].id]
    return {g.id: mapping[g.id] for g in request.groups}
