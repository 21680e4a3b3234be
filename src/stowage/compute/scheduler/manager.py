"""The scheduler endpoint: picks a host for each instance and claims it in Placement.

    request spec (from the conductor, JSON)
        │  SchedulingRequest.from_spec: flavor + image -> request groups, PCI,
        │  AZ, ignore_hosts, requested destination, server group
        ▼
    GET /allocation_candidates      resources[S], required[S] (+ !COMPUTE_STATUS_DISABLED),
        │                           group_policy, in_tree (requested destination),
        │                           member_of (pre-filters: the requested AZ's aggregates,
        │                           the project's filter_tenant_id ones), limit
        ▼
    host states                     compute_nodes + nova-compute services (up? enabled? AZ,
        │                           PCI) joined with the candidates of each node's tree
        ▼
    filters  ──── Rejection(host, filter, reason) kept per instance ───▶ operator, log
        │     compute, AZ, ignore_hosts, destination, (anti-)affinity, PCI,
        │     aggregate extra specs (if enabled), fit
        ▼
    weighers                        free RAM / VCPU / disk (spread or pack), soft groups;
        │                           ties by host name
        ▼
    claim                           PUT /allocations/{instance} as a new consumer's (if it
        │                           holds something after all: GET it, PUT at its
        │                           generation); a move's is one POST /allocations where its
        │                           migration takes the source over; a 409 (another
        │                           scheduler won) moves on to the next host; the claim is
        │                           consumed in the host states before the next instance
        ▼
    [selected (claimed), alternate, ...]   per instance; up to max_attempts in all

Claims are optimistic, like a Nomad plan: the host states are a snapshot and
Placement's generations reject a stale claim. When an instance of a
multi-instance request finds no host, the claims already made for the
earlier instances are undone before `NoValidHost` is raised, so nothing leaks.
"""

from __future__ import annotations

import copy
import datetime
import itertools
import logging
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

from stowage import collector
from stowage.compute import aggregates, server_groups
from stowage.compute import cells as cell_records
from stowage.compute.cells import CellMapping, Cells
from stowage.compute.scheduler import NoValidHost, answer, node_reader
from stowage.compute.scheduler.filters import Filter, Rejection, filters_for, run_filters
from stowage.compute.scheduler.host_state import (
    HostState,
    NodeRecord,
    Offer,
    amounts_of,
    build_host_states,
    candidate_roots,
    offer_of,
)
from stowage.compute.scheduler.local_candidates import LocalCandidates
from stowage.compute.scheduler.request import (
    GroupState,
    MoveSource,
    SchedulingRequest,
    candidate_query,
)
from stowage.compute.scheduler.weighers import WeighedHost, Weigher, weigh, weighers_for
from stowage.config import ComputeSettings
from stowage.db import Database
from stowage.db.engine import sides
from stowage.errors import NotFound
from stowage.metrics import process as metrics
from stowage.placement.client import MICROVERSION, Holding, PlacementConflict
from stowage.timeutil import utcnow

__all__ = ["Scheduler", "SchedulerPlacement", "NoValidHost", "Rejection", "MoveConflict",
           "merge_move_allocations", "Preview"]

LOG = logging.getLogger(__name__)
NOT_ENOUGH_HOSTS = "There are not enough hosts available."
# Rejections are kept for this many of the most recently scheduled instances.
_KEEP_REJECTIONS = 1000
# The microversion the scheduler reads candidates at (the client's).
_MINOR = int(MICROVERSION.split(".")[1])
Allocations = dict[str, dict[str, int]]


class SchedulerPlacement(Protocol):
    """The Placement calls the scheduler makes (`PlacementClient` provides them)."""

    def allocation_candidates_body(self, params: Sequence[tuple[str, str]]) -> bytes: ...

    def holding(self, consumer: str) -> Holding: ...

    def claim(self, consumer: str, allocations: Mapping[str, Mapping[str, int]],
              project_id: str, user_id: str, consumer_generation: int | None,
              consumer_type: str = "INSTANCE") -> None: ...

    def delete_allocations(self, consumer: str) -> bool: ...

    def write_many(self, holdings: Mapping[str, Holding]) -> None: ...


class Scheduler:
    """The `scheduler` RPC target. The constructor does no I/O."""

    def __init__(self, settings: ComputeSettings, db: Database,
                 placement: SchedulerPlacement,
                 filters: Sequence[Filter] | None = None,
                 weighers: Sequence[Weigher] | None = None, *,
                 cell_db: Database | None = None, cells: Cells | None = None,
                 read_in_process: bool = True) -> None:
        self.settings = settings
        # Aggregates, server groups and request specs live in the API database (unit
        # tests that never read give no database).
        self.api_db, self.db = sides(db, cell_db) if db is not None else (db, db)
        # The deployment's cells, whose hosts are all candidates (None: `self.db`'s).
        self.cells = cells
        self.placement = placement
        # Placement's candidates engine, when it runs in this process (and
        # `read_in_process`): read directly rather than through its JSON answer.
        self._local = (LocalCandidates.of(placement, _MINOR) if read_in_process else None)
        # None: the stack of `settings.enabled_filters`, read per request (checked now,
        # so that an unknown name stops the service from starting).
        self.filters = tuple(filters) if filters is not None else None
        filters_for(settings.enabled_filters)
        # None: the stack of `settings.weigher`, read per request (settings may be replaced).
        self.weighers = tuple(weighers) if weighers is not None else None
        self._lock = threading.Lock()
        # The records of the nodes scheduled to, rebuilt only when their rows change.
        self._known = node_reader.NodeRecords()
        self._rejections: OrderedDict[str, list[Rejection]] = OrderedDict()

    # --- RPC ------------------------------------------------------------------
    def select_destinations(self, spec: dict[str, Any],
                            instance_uuids: list[str]) -> list[list[dict[str, Any]]]:
        """Per instance, in order: the claimed selection, then unclaimed alternates."""
        req = SchedulingRequest.from_spec(spec, instance_uuids)
        with collector.paused():
            try:
                hosts = self._host_states(req)
            except NoValidHost as early:  # counted here: a drain's preview is no refusal
                metrics.no_valid_host_early(early.eliminated_by)
                raise
            return self.place(req, hosts)

    def place(self, req: SchedulingRequest, hosts: list[HostState]
              ) -> list[list[dict[str, Any]]]:
        """Filter, weigh and claim for each instance of `req` in turn (Placement I/O only)."""
        claimed: list[tuple[str, Holding]] = []
        result: list[list[dict[str, Any]]] = []
        try:
            for uuid in req.instance_uuids:
                rejections: list[Rejection] = []
                try:
                    chosen, prior = self._schedule_one(uuid, req, hosts, rejections)
                finally:
                    self._remember(uuid, rejections)
                claimed.append((uuid, prior))
                result.append(chosen)
        except Exception:
            self._undo(claimed, req)
            raise
        return result

    # --- for the operator and tests -------------------------------------------
    def rejections(self, instance_uuid: str) -> list[Rejection]:
        """Why hosts were turned down the last time this instance was scheduled."""
        with self._lock:
            return list(self._rejections.get(instance_uuid, ()))

    def _remember(self, uuid: str, rejections: list[Rejection]) -> None:
        with self._lock:
            self._rejections.pop(uuid, None)
            self._rejections[uuid] = rejections
            while len(self._rejections) > _KEEP_REJECTIONS:
                self._rejections.popitem(last=False)

    # --- dry runs: drain planning and capacity (compute/drain/) ---------------------
    def host_states(self, req: SchedulingRequest) -> list[HostState]:
        """The candidates' host states for `req`, as a decision reads them (Placement's
        candidates and the nodes' records; loads `req.group`); nothing is claimed."""
        return self._host_states(req)

    def preview(self, spec: dict[str, Any], instance_uuid: str,
                adjust: Callable[[SchedulingRequest, list[HostState]], None] | None = None
                ) -> Preview:
        """Where `select_destinations` would put the instance, claiming nothing.

        The same request, host states, filters and weighers as a decision;
        `adjust` changes the host states (and the request's group) first: a
        drain plan consumes there what it planned for the servers before this
        one. The host chosen is the first of the weighed order that still has
        a fitting allocation request, as `_schedule_one` tries them (without a
        409 to lose, since nothing is claimed).
        """
        req = SchedulingRequest.from_spec(spec, [instance_uuid])
        with collector.paused():
            hosts = self._host_states(req)
            if adjust is not None:
                adjust(req, hosts)
            rejections: list[Rejection] = []
            for weighed in self._ranked(hosts, req, rejections):
                ar = weighed.host.fitting_request()
                if ar is not None:
                    return Preview(req, hosts, rejections, weighed.host, ar)
        return Preview(req, hosts, rejections)

    # --- pipeline ---------------------------------------------------------------
    def _host_states(self, req: SchedulingRequest) -> list[HostState]:
        """The candidates' host states. Only the nodes Placement offered are read (fresh,
        so that any process's change to them shows), never every node of the cloud."""
        s = self.settings
        member_of: list[list[str]] = []
        if req.group_uuid is not None or _prefiltered(s, req):  # else nothing to read
            with self.api_db.read() as api:
                req.group = _group_state(api, req, self._member_dbs())
                member_of = _prefilters(api, s, req)
        in_tree = None
        if (dest := req.destination) is not None:
            in_tree = _destination_node(
                req, self._nodes(req, lambda conn: node_reader.rows_of_host(conn, dest.host)))
        query = candidate_query(req, s.max_placement_results, in_tree, member_of)
        offer = self.offer(query)
        if not offer.allocation_requests:
            LOG.info("Placement has no allocation candidates for %s", query)
            return []
        roots = candidate_roots(offer)
        nodes = self._nodes(req, lambda conn: node_reader.rows_by_uuid(conn, roots))
        return build_host_states(nodes, offer)

    def offer(self, query: Sequence[tuple[str, str]]) -> Offer:
        """Placement's candidates for `query`: from its engine when it runs in this
        process, else its API's answer, decoded."""
        if self._local is not None:
            found = self._local.offer(query)
            if found is not None:
                return found
        return offer_of(answer.decode(self.placement.allocation_candidates_body(query)))

    def _member_dbs(self) -> list[Database]:
        """Where a group's members may run: every cell's database."""
        if self.cells is None:
            return [self.db]
        return [db for _, db in self.cells.distinct()]

    def _nodes(self, req: SchedulingRequest,
               read: Callable[[Connection], list[node_reader.Row]]) -> dict[str, NodeRecord]:
        """The nodes `read` finds in every cell (in `req.cell` only, when it names one), each
        tagged with its cell; a cell whose database does not answer offers none."""
        now = utcnow()
        if self.cells is None:
            with self.db.read() as conn:
                return self._records([(read(conn), None)], now)
        wanted = [c for c in self.cells.compute_cells() if req.cell in (None, c.uuid)]
        found: list[tuple[list[node_reader.Row], Mapping[str, str | None] | str | None]] = []
        for members, db in self.cells.distinct(wanted):
            try:
                with db.read() as conn:
                    pairs = read(conn)
            except DBAPIError as exc:
                LOG.warning("cells %s did not answer; their hosts are not candidates: %s",
                            [c.name for c in members], exc)
                continue
            found.append((pairs, self._cell_of(members)))
        return self._records(found, now)

    def _records(self, found: Sequence[tuple[list[node_reader.Row],
                                             Mapping[str, str | None] | str | None]],
                 now: datetime.datetime) -> dict[str, NodeRecord]:
        """Records of the nodes read, with their hosts' aggregate metadata (API database)."""
        hosts = {row[1] for pairs, _ in found for row in pairs}
        metadata: dict[str, dict[str, frozenset[str]]] = {}
        if hosts:
            with self.api_db.read() as api:
                metadata = node_reader.metadata_of_hosts(api, hosts)
        nodes: dict[str, NodeRecord] = {}
        for pairs, cell_of in found:
            nodes.update(self._known.records(pairs, self.settings, now, metadata, cell_of))
        return nodes

    def _cell_of(self, members: list[CellMapping]) -> Mapping[str, str | None] | str:
        """The cell of a database's nodes: its only cell, else (cells sharing one
        database) the cell each host is mapped to, one read of each cell's hosts."""
        assert self.cells is not None
        if len(members) == 1:
            return members[0].uuid
        with self.cells.api.read() as conn:
            return {host: cell.uuid for cell in members
                    for host in cell_records.hosts_of(conn, cell)}

    def _ranked(self, hosts: list[HostState], req: SchedulingRequest,
                rejections: list[Rejection]) -> Sequence[WeighedHost]:
        """The hosts that pass the filters, best first; one pipeline for a decision and
        for a preview, so a drain plan picks what a move would."""
        passed = run_filters(hosts, req, rejections,
                             self.filters or filters_for(self.settings.enabled_filters))
        stack = self.weighers or weighers_for(self.settings.weigher,
                                              self.settings.cross_cell_move_weight_multiplier)
        return weigh(passed, req, stack)

    def _schedule_one(self, uuid: str, req: SchedulingRequest, hosts: list[HostState],
                      rejections: list[Rejection]) -> tuple[list[dict[str, Any]], Holding]:
        ordered = self._ranked(hosts, req, rejections)
        for index, weighed in enumerate(ordered):
            host = weighed.host
            ar = host.fitting_request()
            if ar is None:
                continue
            try:
                prior = self._claim(uuid, req, ar)
            except PlacementConflict as exc:
                metrics.claim("conflict")
                rejection = Rejection(host.host, "Claim", exc.detail)
                LOG.info("claim for %s lost a race: %s", uuid, rejection)
                rejections.append(rejection)
                continue
            metrics.claim("claimed")
            host.consume(ar, req.pci_requests)
            if req.group is not None:
                req.group.place(host.host)
            # A build's retries stay in the chosen host's cell: it is carried there once.
            alternates = self._alternates(w for w in itertools.islice(ordered, index + 1, None)
                                          if w.host.record.cell == host.record.cell)
            return [_selection(host, ar)] + [_selection(h, a) for h, a in alternates], prior
        LOG.info("No valid host for instance %s among %d candidate host(s): %s", uuid,
                 len(hosts), "; ".join(str(r) for r in rejections) or "none offered")
        metrics.no_valid_host(rejections)
        raise NoValidHost(NOT_ENOUGH_HOSTS)

    def _alternates(self, rest: Iterable[WeighedHost]
                    ) -> list[tuple[HostState, Mapping[str, Any]]]:
        found: list[tuple[HostState, Mapping[str, Any]]] = []
        for weighed in rest:
            if len(found) >= self.settings.max_attempts - 1:
                break
            ar = weighed.host.fitting_request()
            if ar is not None:
                found.append((weighed.host, ar))
        return found

    # --- claims -----------------------------------------------------------------
    def _claim(self, uuid: str, req: SchedulingRequest, ar: Mapping[str, Any]) -> Holding:
        """PUT the instance's allocation; returns what it held before.

        A build's instance holds nothing: the PUT as a new consumer's (null
        generation) is right the first time, without reading the consumer
        first. A stale generation then means the consumer holds something
        after all (it is read, and the claim made again at its generation),
        or that another claim won the provider (the 409 stands: the next
        host is tried). A move hands its source over in the same write.
        """
        if req.move_source is not None:
            return self._claim_move(uuid, req, req.move_source, amounts_of(ar))
        wanted = amounts_of(ar)
        try:
            self.placement.claim(uuid, wanted, req.project_id, req.user_id, None, "INSTANCE")
            return Holding()
        except PlacementConflict as exc:
            if not exc.stale:
                raise
            prior = self.placement.holding(uuid)
            if prior.generation is None:
                raise
        if prior.allocations:
            # Evacuate: the source allocation stays with the instance until the
            # source host's agent comes back and cleans up, as Nova does.
            wanted = merge_move_allocations(prior.allocations, wanted)
        self.placement.claim(uuid, wanted, req.project_id, req.user_id, prior.generation,
                             "INSTANCE")
        return prior

    def _claim_move(self, uuid: str, req: SchedulingRequest, source: MoveSource,
                    wanted: Allocations) -> Holding:
        """One `POST /allocations`: the migration takes the source, the instance the destination.

        The instance's generation is the one the conductor read with its
        source: if the instance's allocations changed since, the move stops
        (`MoveConflict`) rather than trying the other hosts.
        """
        try:
            self.placement.write_many({
                source.migration_uuid: Holding(source.allocations, None, req.project_id,
                                               req.user_id, "MIGRATION"),
                uuid: Holding(wanted, source.generation, req.project_id, req.user_id,
                              "INSTANCE")})
        except PlacementConflict as exc:
            if exc.stale and self.placement.holding(uuid).generation != source.generation:
                raise MoveConflict(f"The allocations of instance {uuid} changed during its "
                                   f"move: {exc.detail}") from exc
            raise
        return Holding(source.allocations, source.generation, req.project_id, req.user_id,
                       "INSTANCE")

    def _undo(self, claimed: list[tuple[str, Holding]], req: SchedulingRequest) -> None:
        """Give back this request's claims, newest first; a failed undo is logged, not raised."""
        for uuid, prior in reversed(claimed):
            try:
                if not prior.allocations:
                    self.placement.delete_allocations(uuid)
                    continue
                now = self.placement.holding(uuid)
                holdings = {uuid: Holding(prior.allocations, now.generation,
                                          prior.project_id or req.project_id,
                                          prior.user_id or req.user_id,
                                          prior.consumer_type or "INSTANCE")}
                if req.move_source is not None:  # the migration gives the source back
                    migration = req.move_source.migration_uuid
                    holdings[migration] = Holding(
                        {}, self.placement.holding(migration).generation, req.project_id,
                        req.user_id, "MIGRATION")
                self.placement.write_many(holdings)
            except Exception:
                LOG.exception("could not undo the scheduler's claim for %s", uuid)


@dataclass
class Preview:
    """A decision without its claim: the host chosen (None: no valid host) and its
    allocation request, the hosts considered and every rejection."""

    req: SchedulingRequest
    hosts: list[HostState]
    rejections: list[Rejection]
    host: HostState | None = None
    allocation_request: Mapping[str, Any] | None = None


class MoveConflict(Exception):
    """The moving instance's allocations changed between the conductor's read and the claim."""


def merge_move_allocations(source: Mapping[str, Mapping[str, int]],
                           dest: Mapping[str, Mapping[str, int]]) -> Allocations:
    """Source and destination held by one consumer for the length of a move.

    Providers only the destination uses are added; a provider both use is a
    sharing provider (kept once) unless the destination adds no provider at
    all, which is the same host: then the amounts add up.
    """
    merged = {rp: dict(res) for rp, res in source.items()}
    new = set(dest) - set(source)
    for rp, resources in dest.items():
        if rp in new:
            merged[rp] = dict(resources)
        elif not new:
            for rc, amount in resources.items():
                merged[rp][rc] = merged[rp].get(rc, 0) + amount
    return merged


def _selection(host: HostState, ar: Mapping[str, Any]) -> dict[str, Any]:
    return {"host": host.host, "node": host.node, "compute_node_uuid": host.uuid,
            **({"cell_uuid": host.cell} if host.cell is not None else {}),
            "allocation_request": {"allocations": copy.deepcopy(ar["allocations"]),
                                   "mappings": copy.deepcopy(ar.get("mappings") or {})},
            "allocation_request_version": MICROVERSION}


def _group_state(conn: Connection, req: SchedulingRequest, cell_dbs: Sequence[Database]
                 ) -> GroupState | None:
    """The request's server group and its members per host, not counting these instances."""
    if req.group_uuid is None:
        return None
    try:
        group = server_groups.get(conn, req.group_uuid, cell_db=cell_dbs)
    except NotFound:
        raise NoValidHost(f"Instance group {req.group_uuid} could not be found.",
                          "ServerGroupNotFound") from None
    scheduling = set(req.instance_uuids)
    per_host = Counter(host for inst, host in
                       server_groups.member_hosts(conn, group.uuid, cell_dbs).items()
                       if inst not in scheduling)
    return GroupState(group.uuid, group.policy, server_groups.max_server_per_host(group),
                      per_host)


def _prefiltered(settings: ComputeSettings, req: SchedulingRequest) -> bool:
    """Whether `_prefilters` has anything to read for `req`."""
    return bool(req.availability_zone and settings.query_placement_for_availability_zone
                or settings.limit_tenants_to_placement_aggregate)


def _prefilters(conn: Connection, settings: ComputeSettings, req: SchedulingRequest
                ) -> list[list[str]]:
    """Nova's aggregate pre-filters: the aggregates the node must be in one of, per filter.

    query_placement_for_availability_zone: the aggregates making the requested zone
    (none when the zone is only a hosts-file zone: the AZ filter then decides);
    limit_tenants_to_placement_aggregate: the aggregates whose `filter_tenant_id*`
    metadata names the project; with none, any node, unless
    placement_aggregate_required_for_tenants (then no host at all).
    """
    found: list[list[str]] = []
    zone = req.availability_zone
    if zone and settings.query_placement_for_availability_zone:
        in_zone = aggregates.zone_aggregates(conn, zone)
        if in_zone:
            found.append(in_zone)
    if settings.limit_tenants_to_placement_aggregate:
        mine = aggregates.tenant_aggregates(conn, req.project_id)
        if mine:
            found.append(mine)
        elif settings.placement_aggregate_required_for_tenants:
            LOG.info("project %s has no aggregate and one is required", req.project_id)
            raise NoValidHost(NOT_ENOUGH_HOSTS, "TenantAggregateRequired")
    return found


def _destination_node(req: SchedulingRequest, nodes: Mapping[str, NodeRecord]) -> str | None:
    """The node uuid Placement must search in (`in_tree`) for a requested destination."""
    dest = req.destination
    if dest is None:
        return None
    matching = sorted(n.uuid for n in nodes.values()
                      if n.host == dest.host and (dest.node is None or n.node == dest.node))
    if not matching:
        raise NoValidHost(f"Compute host {dest.host} could not be found.",
                          "DestinationNotFound")
    return matching[0] if len(matching) == 1 else None
