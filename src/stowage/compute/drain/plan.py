"""The drain plan: for each server on a host, where the real scheduler would move it, and how.

    servers on HOST (oldest first)
        │  state -> move type: ACTIVE, PAUSED: live; STOPPED: cold;
        │  a task in progress: busy; shelved, other states: skipped (with why)
        ▼
    request spec as the move builds it    the server's stored spec, its flavor,
        │                                 move=True, ignore_hosts=[HOST], its
        │                                 ports' recorded request groups, its cell
        ▼
    Scheduler.preview(spec, adjust=overlay.apply)   Placement's live candidates,
        │   the planned claims of the servers before consumed (overlay.py), then
        │   the scheduler's own filters and weighers; nothing is claimed
        ▼
    planned (host, node, allocations)  or  unplaceable: the filter that turned
                                           the last host down, every rejection kept

Nothing is written: the reads are the scheduler's own (Placement's
`GET /allocation_candidates`, the nodes' records, the group's members) plus
the servers, their request specs and port rows. The ports' requests are the
ones last recorded on the port rows: a move reads them fresh from the
Network service (and records them), which a plan must not do.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from stowage.compute import instance_ports, instances, port_requests, services, states
from stowage.compute.cells import Cells
from stowage.compute.drain.overlay import Overlay
from stowage.compute.instances import Instance
from stowage.compute.scheduler import NoValidHost
from stowage.compute.scheduler.filters import Rejection, filters_for
from stowage.compute.scheduler.manager import Preview, Scheduler
from stowage.db import Database
from stowage.errors import NotFound

__all__ = ["DrainPlan", "PlannedServer", "plan_drain", "LIVE", "COLD", "SKIP", "BUSY",
           "UNPLACEABLE"]

LOG = logging.getLogger(__name__)

# What the plan says of each server (`PlannedServer.action`).
LIVE = "live"
COLD = "cold"
SKIP = "skip"
BUSY = "busy"
UNPLACEABLE = "unplaceable"
_LIVE_STATES = (states.ACTIVE, states.PAUSED)  # os-migrateLive's, as Nova's API
_COLD_STATES = (states.STOPPED,)  # migrate also takes ACTIVE, which goes live here


@dataclass
class PlannedServer:
    """One server of the host and what the drain would do with it."""

    uuid: str
    name: str
    vm_state: str
    task_state: str | None
    flavor: str
    action: str
    host: str | None = None
    node: str | None = None
    allocations: dict[str, dict[str, int]] = field(default_factory=dict)
    # Why it cannot move (skip, busy, unplaceable), or why it moves cold.
    reason: str | None = None
    # Every host turned down and by which filter (asked with verbose).
    rejections: list[dict[str, str]] = field(default_factory=list)

    def view(self) -> dict[str, Any]:
        view: dict[str, Any] = {
            "id": self.uuid, "name": self.name, "vm_state": self.vm_state,
            "task_state": self.task_state, "flavor": self.flavor, "action": self.action,
            "destination": self.host, "destination_node": self.node,
            "allocations": self.allocations, "reason": self.reason}
        if self.rejections:
            view["rejections"] = self.rejections
        return view


@dataclass
class DrainPlan:
    host: str
    servers: list[PlannedServer]

    def totals(self) -> dict[str, int]:
        counts = Counter(s.action for s in self.servers)
        return {"servers": len(self.servers),
                **{a: counts.get(a, 0) for a in (LIVE, COLD, SKIP, BUSY, UNPLACEABLE)}}

    def view(self) -> dict[str, Any]:
        return {"host": self.host, "servers": [s.view() for s in self.servers],
                "totals": self.totals()}


def plan_drain(scheduler: Scheduler, cells: Cells, host: str, verbose: bool = False
               ) -> DrainPlan:
    """The plan for every server on `host` (NotFound when no compute service has that
    name). Reads only."""
    cell = cells.of_host(host) or cells.default()
    cell_db = cells.database(cell)
    with cell_db.read() as conn:
        if services.compute_service(conn, host) is None:
            raise NotFound(f"Compute host {host} could not be found.")
        found = instances.list_instances(conn, host=host)
        ports = instance_ports.of_instances(conn, [i.uuid for i in found]) if found else {}
    overlay = Overlay()
    planned = []
    for inst in found:
        entry = _entry(inst)
        if entry.action in (LIVE, COLD):
            _place(scheduler, cells.api, overlay, entry, inst, ports.get(inst.uuid, []),
                   cell.uuid, verbose)
        planned.append(entry)
    return DrainPlan(host, planned)


def _entry(inst: Instance) -> PlannedServer:
    """The server, with the move its state allows (or why none)."""
    entry = PlannedServer(inst.uuid, inst.display_name, inst.vm_state, inst.task_state,
                          str(inst.flavor.get("name") or inst.flavor.get("flavorid") or ""),
                          SKIP)
    if inst.task_state is not None:
        entry.action = BUSY
        entry.reason = f"task {inst.task_state} in progress: waited for, then planned again"
    elif inst.vm_state in _LIVE_STATES:
        entry.action = LIVE
    elif inst.vm_state in _COLD_STATES:
        entry.action = COLD
        entry.reason = "stopped: no running guest to live-migrate; migrated cold, then confirmed"
    elif inst.vm_state in (states.SHELVED, states.SHELVED_OFFLOADED):
        entry.reason = ("shelved: it holds no host once offloaded, and unshelve "
                        "schedules it afresh")
    else:
        entry.reason = f"vm_state {inst.vm_state} allows neither live nor cold migration"
    return entry


def move_spec(api_db: Database, inst: Instance, source: str,
              ports: list[instance_ports.InstancePort], cell_uuid: str | None
              ) -> dict[str, Any]:
    """The request spec a live or cold migration of `inst` sends the scheduler
    (conductor/live_migrate_steps.py, conductor/migrate.py `ClaimDestination`)."""
    with api_db.read() as api:
        spec = instances.request_spec(api, inst.uuid)
    requests = [port_requests.PortRequest.from_json(p.request) for p in ports if p.request]
    spec.update(flavor=inst.flavor, move=True, ignore_hosts=[source],
                requested_destination=None,
                port_requests=[r.to_json() for r in requests if r.groups])
    if cell_uuid is not None:
        spec["cell"] = cell_uuid
    return spec


def _place(scheduler: Scheduler, api_db: Database, overlay: Overlay, entry: PlannedServer,
           inst: Instance, ports: list[instance_ports.InstancePort], cell_uuid: str,
           verbose: bool) -> None:
    assert inst.host is not None
    try:
        spec = move_spec(api_db, inst, inst.host, ports, cell_uuid)
        preview = scheduler.preview(spec, inst.uuid, overlay.apply)
    except (NoValidHost, NotFound) as exc:
        entry.action, entry.reason = UNPLACEABLE, str(exc)
        return
    if verbose:
        entry.rejections = [{"host": r.host, "filter": r.filter, "reason": r.reason}
                            for r in preview.rejections]
    if preview.host is None or preview.allocation_request is None:
        stack = [f.name for f in filters_for(scheduler.settings.enabled_filters)]
        entry.action, entry.reason = UNPLACEABLE, _why_not(preview, stack)
        return
    claim = overlay.add(inst.uuid, inst.host, preview.host, preview.allocation_request,
                        preview.req)
    entry.host, entry.node = preview.host.host, preview.host.node
    entry.allocations = {rp: dict(res) for rp, res in claim.allocations.items()}


def _why_not(preview: Preview, stack: list[str]) -> str:
    """Nova's "the filter that eliminated the last host": filters run one after the
    other over the hosts left, so the one that left none is the last of the stack that
    turned some host down; or Placement offered no host at all."""
    if not preview.hosts:
        return ("No valid host: Placement offered no candidate host (none has room for "
                "the flavor with the traits and aggregates asked)")
    if not preview.rejections:
        return "No valid host: no weighed host had a fitting allocation request"
    order = {name: index for index, name in enumerate(stack)}
    last: Rejection = max(reversed(preview.rejections),
                          key=lambda r: order.get(r.filter, len(order)))
    counts = Counter(r.filter for r in preview.rejections)
    summary = ", ".join(f"{name} {counts[name]}"
                        for name in sorted(counts, key=lambda n: order.get(n, len(order))))
    return (f"No valid host: {last.filter} eliminated the last host ({last.host}: "
            f"{last.reason}); hosts rejected per filter: {summary}")
