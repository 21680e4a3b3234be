"""What a flavor asks of Placement: resource amounts, traits and request groups.

Nova's rules (the Newton "resource providers allocations" spec and the
flavor extra specs of later releases):

- VCPU = vcpus, MEMORY_MB = memory_mb, DISK_GB = root_gb + ephemeral_gb +
  ceil(swap MB / 1024); a volume-backed server's root disk lives on the
  volume, so it consumes no root_gb from the host.
- `resources:RC=N` overrides the amount of RC in the unsuffixed group (0
  removes it); `resources<S>:RC=N` builds a separate, suffixed group.
- `trait[S]:NAME=required|forbidden` adds to that group's `required`.
- `group_policy` is passed through; Placement needs it with two+ groups.
- `pci_passthrough:alias=a:n[,b:m]` is PCI devices, claimed by the agent's
  PCI tracker, not by Placement.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["RequestGroup", "PlacementRequest", "flavor_amounts", "placement_request", "summed",
           "pci_requests"]

_GROUPED = re.compile(r"^(resources|trait)([a-zA-Z0-9_-]{1,64})?:(.+)$")


@dataclass
class RequestGroup:
    resources: dict[str, int] = field(default_factory=dict)
    required: set[str] = field(default_factory=set)
    forbidden: set[str] = field(default_factory=set)


@dataclass
class PlacementRequest:
    """Groups by suffix ("" is the unsuffixed group), the group policy, and the sets of
    suffixed groups that must be served from one subtree (`same_subtree`, 1.36)."""

    groups: dict[str, RequestGroup]
    group_policy: str | None = None
    same_subtree: list[list[str]] = field(default_factory=list)

    def amounts(self) -> dict[str, int]:
        """All groups summed: what the consumer holds in total."""
        total: dict[str, int] = {}
        for group in self.groups.values():
            for rc, amount in group.resources.items():
                total[rc] = total.get(rc, 0) + amount
        return total

    def query(self) -> list[tuple[str, str]]:
        """GET /allocation_candidates parameters for these groups."""
        params: list[tuple[str, str]] = []
        for suffix, group in sorted(self.groups.items()):
            if group.resources:
                params.append((f"resources{suffix}", ",".join(
                    f"{rc}:{n}" for rc, n in sorted(group.resources.items()))))
            traits = sorted(group.required) + sorted(f"!{t}" for t in group.forbidden)
            if traits:
                params.append((f"required{suffix}", ",".join(traits)))
        if self.group_policy and len([s for s in self.groups if s]) > 1:
            params.append(("group_policy", self.group_policy))
        elif len([s for s in self.groups if s]) > 1:
            params.append(("group_policy", "none"))
        params.extend(("same_subtree", ",".join(suffixes)) for suffixes in self.same_subtree)
        return params


def summed(parts: Mapping[str, Mapping[str, int]]) -> dict[str, int]:
    """Class -> amount over all `parts` (providers, or consumers): what a usage is."""
    total: dict[str, int] = {}
    for amounts in parts.values():
        for rc, n in amounts.items():
            total[rc] = total.get(rc, 0) + n
    return total


def flavor_amounts(flavor: Mapping[str, Any], volume_backed: bool = False) -> dict[str, int]:
    """The unsuffixed group's amounts before `resources:` overrides."""
    disk = (0 if volume_backed else int(flavor["root_gb"])) + int(flavor["ephemeral_gb"])
    disk += math.ceil(int(flavor.get("swap") or 0) / 1024)
    amounts = {"VCPU": int(flavor["vcpus"]), "MEMORY_MB": int(flavor["memory_mb"]),
               "DISK_GB": disk}
    return {rc: n for rc, n in amounts.items() if n > 0}


def placement_request(flavor: Mapping[str, Any], volume_backed: bool = False,
                      image_properties: Mapping[str, Any] | None = None) -> PlacementRequest:
    """The flavor (and image `trait:` properties) as Placement request groups."""
    groups = {"": RequestGroup(resources=flavor_amounts(flavor, volume_backed))}
    specs = dict(flavor.get("extra_specs") or {})
    for key, value in (image_properties or {}).items():
        if key.startswith("trait:"):
            specs.setdefault(key, str(value))
    for key, value in specs.items():
        match = _GROUPED.match(key)
        if match is None:
            continue
        kind, suffix, name = match.group(1), match.group(2) or "", match.group(3)
        group = groups.setdefault(suffix, RequestGroup())
        if kind == "resources":
            amount = int(value)
            if amount > 0:
                group.resources[name] = amount
            else:
                group.resources.pop(name, None)
        elif value == "required":
            group.required.add(name)
        elif value == "forbidden":
            group.forbidden.add(name)
    policy = specs.get("group_policy")
    return PlacementRequest(groups, policy)


def pci_requests(flavor: Mapping[str, Any]) -> dict[str, int]:
    """alias -> count from `pci_passthrough:alias` (validated when the spec was set)."""
    raw = (flavor.get("extra_specs") or {}).get("pci_passthrough:alias")
    wanted: dict[str, int] = {}
    for item in (raw or "").split(","):
        if ":" in item:
            alias, _, count = item.partition(":")
            wanted[alias.strip()] = wanted.get(alias.strip(), 0) + int(count)
    return wanted
