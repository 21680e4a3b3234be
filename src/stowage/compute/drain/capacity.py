"""How many more of each flavor fit, where, and what free room no flavor can use.

    per flavor:  a build's request (the flavor, no image, no group)
        │  Scheduler.host_states: Placement's candidates (every one: the
        │  result limit lifted) joined with the nodes' records
        ▼
    the scheduler's filters (services up and enabled, PCI, aggregate extra specs...)
        ▼
    per host that passed, in name order: claim its fitting allocation request
    in the host states (`HostState.consume`, as a multi-instance build does)
    until none fits -- a sharing provider's room counts once, for the first hosts
        ▼
    totals per zone, per aggregate, per cell

Fragmentation: the free room (capacity - used, per resource class) of each
usable host (service up and enabled) where not one instance of any flavor
fits. That room is stranded until something on the host shrinks or leaves.
Free room is read from Placement (each compute node's inventories and
usages); nothing is claimed or written.
"""

from __future__ import annotations

import dataclasses
import uuid as uuidlib
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from stowage.compute import aggregates
from stowage.compute.cells import Cells
from stowage.compute.scheduler.filters import filters_for, run_filters
from stowage.compute.scheduler.host_state import HostState, NodeRecord, load_nodes
from stowage.compute.scheduler.manager import Scheduler
from stowage.compute.scheduler.request import SchedulingRequest
from stowage.timeutil import utcnow

__all__ = ["CapacityReport", "FlavorCapacity", "capacity", "ProviderReader"]

# No host is asked to take more than this many of one flavor (a flavor of 0 resources).
_MAX_PER_HOST = 100_000
# Placement's result limit for these queries: every candidate of the cloud.
_ALL_CANDIDATES = 1_000_000


class ProviderReader(Protocol):
    """What capacity reads of Placement besides candidates (`PlacementClient` has it)."""

    def provider_part(self, uuid: str, part: str) -> Any: ...

    def usages(self, uuid: str) -> dict[str, int]: ...


@dataclass
class FlavorCapacity:
    flavor: str
    flavorid: str
    total: int = 0
    per_host: dict[str, int] = field(default_factory=dict)
    per_zone: dict[str, int] = field(default_factory=dict)
    per_aggregate: dict[str, int] = field(default_factory=dict)
    per_cell: dict[str, int] = field(default_factory=dict)

    def view(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class CapacityReport:
    flavors: list[FlavorCapacity]
    # resource class -> free room on usable hosts / of it, on hosts no flavor fits
    free: dict[str, int]
    stranded: dict[str, int]
    fragmented_hosts: dict[str, dict[str, int]]

    def view(self) -> dict[str, Any]:
        return {"flavors": [f.view() for f in self.flavors],
                "fragmentation": {"free": self.free, "stranded": self.stranded,
                                  "hosts": self.fragmented_hosts}}


def capacity(scheduler: Scheduler, cells: Cells, flavors: Sequence[Mapping[str, Any]],
             placement: ProviderReader) -> CapacityReport:
    """The report for `flavors` (snapshots, as `flavors.snapshot` makes them)."""
    unlimited = Scheduler(dataclasses.replace(scheduler.settings,
                                              max_placement_results=_ALL_CANDIDATES),
                          cells.api, scheduler.placement, cell_db=scheduler.db, cells=cells)
    with cells.api.read() as api:
        in_aggregates = [(a.name, set(a.hosts)) for a in aggregates.list_aggregates(api)]
    cell_names = {c.uuid: c.name for c in cells.compute_cells()}
    report = [_one_flavor(unlimited, flavor, in_aggregates, cell_names) for flavor in flavors]
    fitting = {h for f in report for h, n in f.per_host.items() if n > 0}
    free, stranded, hosts = _fragmentation(unlimited, cells, placement, fitting)
    return CapacityReport(report, free, stranded, hosts)


def _one_flavor(scheduler: Scheduler, flavor: Mapping[str, Any],
                in_aggregates: list[tuple[str, set[str]]], cell_names: Mapping[str, str]
                ) -> FlavorCapacity:
    found = FlavorCapacity(str(flavor.get("name") or ""), str(flavor.get("flavorid") or ""))
    spec = {"flavor": dict(flavor), "project_id": "capacity", "user_id": "capacity",
            "image": {}}
    req = SchedulingRequest.from_spec(spec, [str(uuidlib.uuid4())])
    hosts = scheduler.host_states(req)
    passed = run_filters(hosts, req, [], filters_for(scheduler.settings.enabled_filters))
    for host in passed:
        count = _fill(host, req)
        if not count:
            continue
        found.total += count
        found.per_host[host.host] = found.per_host.get(host.host, 0) + count
        _add(found.per_zone, host.record.availability_zone, count)
        for name, members in in_aggregates:
            if host.host in members:
                _add(found.per_aggregate, name, count)
        if host.cell is not None:
            _add(found.per_cell, cell_names.get(host.cell, host.cell), count)
    return found


def _fill(host: HostState, req: SchedulingRequest) -> int:
    """How many instances of `req` the host takes, each claimed in the host states."""
    count = 0
    while count < _MAX_PER_HOST:
        if any(host.pci_free.get(a, 0) < n for a, n in req.pci_requests.items()):
            break
        ar = host.fitting_request()
        if ar is None:
            break
        host.consume(ar, req.pci_requests)
        count += 1
    return count


def _add(counts: dict[str, int], key: str, count: int) -> None:
    counts[key] = counts.get(key, 0) + count


def _fragmentation(scheduler: Scheduler, cells: Cells, placement: ProviderReader,
                   fitting: set[str]) -> tuple[dict[str, int], dict[str, int],
                                               dict[str, dict[str, int]]]:
    """Free room per class on usable hosts, and the part of it on hosts no flavor fits."""
    free: dict[str, int] = defaultdict(int)
    stranded: dict[str, int] = defaultdict(int)
    hosts: dict[str, dict[str, int]] = {}
    for node in _usable_nodes(scheduler, cells):
        room = _room(placement, node.uuid)
        for rc, amount in room.items():
            free[rc] += amount
        if node.host not in fitting and any(room.values()):
            hosts[node.host] = {rc: n for rc, n in room.items() if n}
            for rc, amount in room.items():
                stranded[rc] += amount
    return dict(free), dict(stranded), hosts


def _usable_nodes(scheduler: Scheduler, cells: Cells) -> list[NodeRecord]:
    """Every cell's compute nodes whose service is up and enabled, by host name."""
    with cells.api.read() as api:
        metadata = aggregates.metadata_by_host(api)
    found: list[NodeRecord] = []
    for _, db in cells.distinct(cells.compute_cells()):
        with db.read() as conn:
            nodes = load_nodes(conn, scheduler.settings, utcnow(), metadata)
        found.extend(n for n in nodes.values()
                     if n.service_up and not n.service_disabled and not n.forced_down)
    return sorted(found, key=lambda n: (n.host, n.node))


def _room(placement: ProviderReader, uuid: str) -> dict[str, int]:
    """(total - reserved) x allocation_ratio - used, per class, of one provider."""
    inventories: Mapping[str, Mapping[str, Any]] = placement.provider_part(uuid, "inventories")
    used = placement.usages(uuid)
    return {rc: max(0, int((int(inv["total"]) - int(inv.get("reserved", 0)))
                           * float(inv.get("allocation_ratio", 1.0))) - int(used.get(rc, 0)))
            for rc, inv in sorted(inventories.items())}
