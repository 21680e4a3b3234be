"""Heal allocations: every instance on a host holds what its flavor asks, on that host.

The operator's repair for what the accounting rules forbid but an outage, a
manual `openstack resource provider allocation delete` or an older release
can leave behind: an instance that runs on a host while Placement says it
holds nothing there (its host then looks emptier than it is and gets
over-committed), or one whose allocation no longer matches its flavor.
It is `nova-manage placement heal_allocations` for stowage:

- an instance with no allocation gets its flavor's amounts on its host's
  providers (created with consumer generation `null`, so a claim that races
  in meanwhile wins and the heal reports a failure instead of doubling it);
- an instance whose allocation differs from its flavor is reported, and
  replaced only with `--force` (at the generation read, so a concurrent
  move's write is never overwritten);
- instances in a task (building, moving, deleting...) are skipped, as Nova
  skips them: their allocations belong to the operation under way.

Each resource class goes to the provider of the host that offers it: the
compute node itself, a child of it (nested), or a sharing provider in one of
its aggregates (`MISC_SHARES_VIA_AGGREGATE`, shared DISK_GB).

The ports' part of the allocation (bandwidth, VFs) is compared apart from
the flavor's and healed by `heal_ports` with the Network service (a port
whose binding names no allocation, or whose providers lack its amounts),
unless `skip_port_allocations` (Nova's `--skip-port-allocations`).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from stowage.compute import heal_ports, resources, states
from stowage.compute.audit import Dbs, live_instances, node_uuids
from stowage.compute.instances import Instance
from stowage.network.client import NetworkClient
from stowage.placement.client import PlacementClient, PlacementError

__all__ = ["HealOptions", "HealReport", "Verdict", "heal_allocations", "exit_code"]

SHARES = "MISC_SHARES_VIA_AGGREGATE"
# Exit codes of `nova-manage placement heal_allocations` (the subset stowage has).
EXIT_HEALED, EXIT_MORE, EXIT_NO_NODE, EXIT_WRITE_FAILED, EXIT_NOTHING, EXIT_BAD_INPUT = (
    0, 1, 2, 3, 4, 127)


class Verdict(enum.Enum):
    OK = "allocations match the flavor"
    CREATED = "allocations created"
    REPLACED = "allocations replaced"
    WOULD_CREATE = "would create allocations"
    WOULD_REPLACE = "would replace allocations"
    MISMATCH = "allocations differ from the flavor; use --force to replace them"
    BUSY = "skipped: in a task"
    NO_NODE = "no compute node record for its host"
    FAILED = "Placement refused the write"
    PORTS_HEALED = "port allocations healed"
    WOULD_HEAL_PORTS = "would heal port allocations"


@dataclass(frozen=True)
class HealOptions:
    dry_run: bool = False
    instance: str | None = None
    force: bool = False
    max_count: int | None = None
    skip_port_allocations: bool = False


@dataclass
class HealReport:
    """What happened to each instance looked at, in order: (uuid, verdict, detail)."""

    outcomes: list[tuple[str, Verdict, str]] = field(default_factory=list)
    more: bool = False  # --max-count stopped the run with instances left to look at

    def count(self, *verdicts: Verdict) -> int:
        return sum(1 for _, v, _ in self.outcomes if v in verdicts)


Progress = Callable[[int, int], None]
CHANGED = (Verdict.CREATED, Verdict.REPLACED, Verdict.WOULD_CREATE, Verdict.WOULD_REPLACE,
           Verdict.PORTS_HEALED, Verdict.WOULD_HEAL_PORTS)


def heal_allocations(db: Dbs, placement: PlacementClient, options: HealOptions,
                     progress: Progress | None = None,
                     network: NetworkClient | None = None) -> HealReport:
    """Look at every instance with a host (or the one asked for) and heal what needs it.

    `--max-count` counts instances healed (or, on a dry run, that would be),
    as Nova's does, so a large cloud is healed in batches.
    """
    candidates = _instances(db, options.instance)
    nodes = node_uuids(db)
    hosts = _HostTargets(placement)
    report = HealReport()
    changed = CHANGED
    for done, inst in enumerate(candidates, start=1):
        if options.max_count is not None and report.count(*changed) >= options.max_count:
            report.more = True
            break
        verdict, detail = _heal_one(inst, nodes.get(inst.host or ""), hosts, placement, options,
                                    network)
        report.outcomes.append((inst.uuid, verdict, detail))
        if progress is not None:
            progress(done, len(candidates))
    return report


def exit_code(report: HealReport) -> int:
    """Nova's: a failure first, then a missing node, then "more to do", then healed or not."""
    if report.count(Verdict.FAILED):
        return EXIT_WRITE_FAILED
    if report.count(Verdict.NO_NODE):
        return EXIT_NO_NODE
    if report.more:
        return EXIT_MORE
    healed = report.count(*CHANGED)
    return EXIT_HEALED if healed else EXIT_NOTHING


def _instances(db: Dbs, only: str | None) -> list[Instance]:
    """Live instances that run on a host, in every cell given (offloaded and
    unscheduled ones hold nothing)."""
    return [i for i in live_instances(db, [only] if only else None) if i.host]


def _heal_one(inst: Instance, root: str | None, hosts: _HostTargets,
              placement: PlacementClient, options: HealOptions,
              network: NetworkClient | None) -> tuple[Verdict, str]:
    """The flavor's part of the allocation (heal.py's rules), then the ports' part
    (heal_ports.py) unless --skip-port-allocations; one write for both."""
    if inst.task_state is not None or inst.vm_state == states.BUILDING:
        return Verdict.BUSY, f"task_state {inst.task_state}, vm_state {inst.vm_state}"
    if root is None:
        return Verdict.NO_NODE, f"host {inst.host}"
    want = resources.placement_request(inst.flavor, inst.volume_backed).amounts()
    holding = placement.holding(inst.uuid)
    flavor_part, port_part = heal_ports.split(holding.allocations)
    ports = (heal_ports.PortsPlan() if options.skip_port_allocations or network is None
             else heal_ports.plan(network, placement, inst, root, holding.allocations))
    if ports.problem:
        return Verdict.FAILED, ports.problem
    flavor_ok = bool(flavor_part) and resources.summed(flavor_part) == want and hosts.within(
        root, flavor_part)
    if flavor_ok and not ports:
        return Verdict.OK, ""
    if flavor_part and not flavor_ok and not options.force:
        return Verdict.MISMATCH, f"holds {holding.allocations}, flavor needs {want}"
    if flavor_ok:
        allocations = {rp: dict(res) for rp, res in flavor_part.items()}
        verdicts = (Verdict.WOULD_HEAL_PORTS, Verdict.PORTS_HEALED)
    else:
        allocations, lacking = hosts.place(root, want)
        if lacking:
            return Verdict.FAILED, f"host {inst.host} offers no {', '.join(lacking)}"
        verdicts = ((Verdict.WOULD_REPLACE, Verdict.REPLACED) if flavor_part
                    else (Verdict.WOULD_CREATE, Verdict.CREATED))
    for part in (port_part, ports.add):
        for rp, res in part.items():
            for rc, n in res.items():
                allocations.setdefault(rp, {})[rc] = allocations.get(rp, {}).get(rc, 0) + n
    detail = str(allocations) + (f"; {ports.describe()}" if ports else "")
    if options.dry_run:
        return verdicts[0], detail
    try:
        placement.claim(inst.uuid, allocations, inst.project_id, inst.user_id,
                        holding.generation)
    except PlacementError as exc:
        return Verdict.FAILED, exc.detail
    if ports.bindings and network is not None:
        failed = _bind_or_give_back(network, placement, inst, ports, holding.allocations)
        if failed:
            return Verdict.FAILED, failed
    return verdicts[1], detail


def _bind_or_give_back(network: NetworkClient, placement: PlacementClient, inst: Instance,
                       ports: heal_ports.PortsPlan,
                       before: Mapping[str, Mapping[str, int]]) -> str | None:
    """Write the healed bindings; a failure puts the allocation back as it was."""
    try:
        heal_ports.bind(network, ports.bindings)
    except Exception as exc:  # noqa: BLE001 - reported, and the allocation given back
        now = placement.holding(inst.uuid)
        if before:
            placement.claim(inst.uuid, before, inst.project_id, inst.user_id, now.generation)
        else:
            placement.delete_allocations(inst.uuid)
        return f"binding the ports failed ({exc}); the allocation was put back"
    return None


class _HostTargets:
    """Which provider of a host serves each resource class, read once per host."""

    def __init__(self, placement: PlacementClient) -> None:
        self.placement = placement
        self._providers: list[dict[str, Any]] | None = None
        self._by_root: dict[str, dict[str, str]] = {}

    def _all(self) -> list[dict[str, Any]]:
        if self._providers is None:
            self._providers = self.placement.providers()
        return self._providers

    def targets(self, root: str) -> dict[str, str]:
        """resource class -> provider: the node first, then its children, then sharing."""
        if root not in self._by_root:
            tree = [rp for rp in self._all() if rp["root_provider_uuid"] == root]
            tree.sort(key=lambda rp: rp["uuid"] != root)
            found: dict[str, str] = {}
            for rp in tree + self._sharing(root):
                for rc in self.placement.provider_part(rp["uuid"], "inventories"):
                    found.setdefault(rc, rp["uuid"])
            self._by_root[root] = found
        return self._by_root[root]

    def _sharing(self, root: str) -> list[dict[str, Any]]:
        mine = set(self.placement.provider_part(root, "aggregates"))
        if not mine:
            return []
        return [rp for rp in self._all() if rp["root_provider_uuid"] != root
                and SHARES in self.placement.provider_part(rp["uuid"], "traits")
                and mine & set(self.placement.provider_part(rp["uuid"], "aggregates"))]

    def place(self, root: str, want: Mapping[str, int]
              ) -> tuple[dict[str, dict[str, int]], list[str]]:
        """The allocation of `want` on this host's providers, and the classes it lacks."""
        targets = self.targets(root)
        allocations: dict[str, dict[str, int]] = {}
        for rc, amount in want.items():
            if rc in targets:
                allocations.setdefault(targets[rc], {})[rc] = amount
        return allocations, sorted(set(want) - set(targets))

    def within(self, root: str, allocations: Mapping[str, Any]) -> bool:
        """Every provider held is one of this host's (its tree or its sharing providers)."""
        return set(allocations) <= set(self.targets(root).values()) | {root}
