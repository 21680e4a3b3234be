"""The claims a drain plan has made so far, laid over the live host states of the next decision.

Why: Placement knows only what is claimed. A plan that asked the scheduler
about each server against Placement alone would put two servers onto the
last slot of one host. The overlay remembers, per planned move, what it
would claim (the allocation request's amounts, the PCI devices, the host for
the server's group) and consumes it in the host states and the group state
the scheduler built for the next server, before its filters and weighers
run: the same `ProviderUsage.consume` and `GroupState.place` a
multi-instance decision uses between two of its instances.

The source host keeps its usage until each move ends (a migration holds it);
it is not a candidate (`ignore_hosts`), so the plan does not free it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from stowage.compute.scheduler.host_state import HostState, amounts_of
from stowage.compute.scheduler.request import SchedulingRequest

__all__ = ["Overlay", "PlannedClaim"]


@dataclass(frozen=True)
class PlannedClaim:
    """What one planned move would hold on its destination."""

    instance_uuid: str
    host: str
    source: str
    allocations: Mapping[str, Mapping[str, int]]
    pci: Mapping[str, int] = field(default_factory=dict)
    group_uuid: str | None = None


class Overlay:
    """The planned claims, in plan order; `apply` is the scheduler's `adjust` hook."""

    def __init__(self) -> None:
        self.claims: list[PlannedClaim] = []

    def add(self, instance_uuid: str, source: str, host: HostState,
            allocation_request: Mapping[str, Any], req: SchedulingRequest) -> PlannedClaim:
        claim = PlannedClaim(instance_uuid, host.host, source, amounts_of(allocation_request),
                             dict(req.pci_requests), req.group_uuid)
        self.claims.append(claim)
        return claim

    def apply(self, req: SchedulingRequest, hosts: list[HostState]) -> None:
        """Consume every planned claim in `hosts` (whose usage they share) and move each
        planned member of `req`'s group from its source to its planned host."""
        if hosts:
            usage = hosts[0].usage  # one ProviderUsage for all hosts of a decision
            for claim in self.claims:
                usage.consume({rp: dict(res) for rp, res in claim.allocations.items()})
            by_host = {h.host: h for h in hosts}
            for claim in self.claims:
                state = by_host.get(claim.host)
                if state is None:
                    continue
                for alias, count in claim.pci.items():
                    state.pci_free[alias] = state.pci_free.get(alias, 0) - count
        group = req.group
        if group is None:
            return
        for claim in self.claims:
            if claim.group_uuid == group.uuid:
                if group.per_host[claim.source] > 0:
                    group.per_host[claim.source] -= 1
                group.place(claim.host)
