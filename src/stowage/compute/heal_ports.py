"""Heal the port part of an instance's allocation and the bindings that name it.

`heal-allocations` (heal.py) gives an instance its flavor; this module gives
it its ports' resources, as `nova-manage placement heal_allocations` does
(`_get_port_allocations_to_heal`) unless `--skip-port-allocations`:

- the instance's ports are the Network service's ports whose `device_id` is
  the instance and whose `binding:host_id` is its host, with a resource
  request (read with `port_requests.from_port`: the groups, and
  `SRIOV_NET_VF: 1` for a VF);
- a port whose `binding:profile.allocation` names a provider for every group
  must find its groups' amounts there in the instance's allocation; what is
  missing is added on those providers (the binding is kept);
- a port without `binding:profile.allocation` gets, for its groups, the first
  allocation candidate in the host's tree (`in_tree` = the compute node, as
  an interface attach claims); none: the heal fails ("no provider of host X
  can serve port P"). Its binding is then written with the mapping.

The caller writes the instance's allocation once (its flavor part and the
port part together, at the generation it read) and only then the bindings;
a binding write that fails gives the added port amounts back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from stowage.compute.instances import Instance
from stowage.compute.port_requests import (
    VF_CLASS,
    PortRequest,
    from_port,
    placement_groups,
    profile_allocation,
)
from stowage.compute.resources import PlacementRequest
from stowage.network.client import NetworkClient
from stowage.placement.client import PlacementClient, PlacementError

__all__ = ["PORT_CLASSES", "PortsPlan", "plan", "bind", "split"]

PORT_CLASSES = ("NET_BW_EGR_KILOBIT_PER_SEC", "NET_BW_IGR_KILOBIT_PER_SEC", VF_CLASS)
Amounts = dict[str, dict[str, int]]


@dataclass
class PortsPlan:
    """What the instance's ports need added, and the bindings to write afterwards."""

    add: Amounts = field(default_factory=dict)
    # port id -> its new binding:profile.allocation (ports that had none)
    bindings: dict[str, Any] = field(default_factory=dict)
    problem: str | None = None

    def __bool__(self) -> bool:
        return bool(self.add or self.bindings)

    def describe(self) -> str:
        return f"ports {sorted(self.bindings)} bound to {self.bindings}, adding {self.add}"\
            if self.bindings else f"adding {self.add}"


def split(allocations: Mapping[str, Mapping[str, int]]) -> tuple[Amounts, Amounts]:
    """(the flavor's part, the ports' part) of an allocation, by resource class."""
    flavor: Amounts = {}
    ports: Amounts = {}
    for rp, res in allocations.items():
        for rc, n in res.items():
            (ports if rc in PORT_CLASSES else flavor).setdefault(rp, {})[rc] = n
    return flavor, ports


def _add(into: Amounts, rp: str, amounts: Mapping[str, int]) -> None:
    target = into.setdefault(rp, {})
    for rc, n in amounts.items():
        target[rc] = target.get(rc, 0) + n


def plan(network: NetworkClient, placement: PlacementClient, inst: Instance, root: str,
         held: Mapping[str, Mapping[str, int]]) -> PortsPlan:
    """What the ports of `inst` on its host need, given what it holds (`held`)."""
    found = PortsPlan()
    expected: Amounts = {}
    unbound: list[PortRequest] = []
    for port in network.list_ports(device_id=inst.uuid):
        if port.get("binding:host_id") != inst.host or not port.get("resource_request"):
            continue
        net = network.show_network(str(port["network_id"])) or {}
        request = from_port(port, net.get("provider:physical_network"))
        mapping = _bound(request, (port.get("binding:profile") or {}).get("allocation"))
        if mapping is None:
            unbound.append(request)
            continue
        for group in request.groups:
            _add(expected, mapping[group.id], group.resources)
    for rp, res in expected.items():
        for rc, n in res.items():
            short = n - int(held.get(rp, {}).get(rc, 0))
            if short > 0:
                _add(found.add, rp, {rc: short})
    for request in unbound:
        candidate = _candidate(placement, request, root, found.add)
        if candidate is None:
            found.problem = (f"no provider of host {inst.host} can serve port "
                             f"{request.port_id}")
            return found
        mapping = {g.id: str(candidate["mappings"][g.id][0]) for g in request.groups}
        for group in request.groups:
            _add(found.add, mapping[group.id], group.resources)
        found.bindings[request.port_id] = profile_allocation(request, mapping)
    return found


def _bound(request: PortRequest, allocation: Any) -> dict[str, str] | None:
    """group -> provider as the profile names it (None: it names none, or not all)."""
    if request.fmt == "legacy" and isinstance(allocation, str) and request.groups:
        return {g.id: allocation for g in request.groups}
    if isinstance(allocation, dict) and all(g.id in allocation for g in request.groups):
        return {g.id: str(allocation[g.id]) for g in request.groups}
    return None


def _candidate(placement: PlacementClient, request: PortRequest, root: str,
               planned: Amounts) -> dict[str, Any] | None:
    """The first candidate in the host's tree with room for the port beside what is
    already planned (Placement does not know the plan yet: checked against usages)."""
    query = PlacementRequest(placement_groups([request]),
                             same_subtree=[sorted(request.same_subtree)]
                             if request.same_subtree else [])
    params = query.query() + [(f"in_tree{g.id}", root) for g in request.groups]
    try:
        found = placement.allocation_candidates(params)
    except PlacementError as exc:
        if exc.status == 400:
            return None
        raise
    summaries = found.get("provider_summaries") or {}
    for candidate in found.get("allocation_requests") or []:
        if all(_room(summaries.get(rp, {}), res["resources"], planned.get(rp, {}))
               for rp, res in candidate["allocations"].items()):
            return dict(candidate)
    return None


def _room(summary: Mapping[str, Any], wanted: Mapping[str, int],
          planned: Mapping[str, int]) -> bool:
    resources = summary.get("resources") or {}
    for rc, n in wanted.items():
        info = resources.get(rc) or {}
        if int(info.get("capacity", 0)) - int(info.get("used", 0)) < n + planned.get(rc, 0):
            return False
    return True


def bind(network: NetworkClient, bindings: Mapping[str, Any]) -> None:
    """Write each healed port's `binding:profile.allocation` (the user's keys kept)."""
    for port_id, allocation in bindings.items():
        port = network.show_port(port_id) or {}
        profile = dict(port.get("binding:profile") or {})
        profile["allocation"] = allocation
        network.update_port(port_id, {"binding:profile": profile})
