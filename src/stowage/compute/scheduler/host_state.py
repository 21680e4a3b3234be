"""Host states: what the scheduler knows about each candidate host for one request.

Two sources meet here:

- the compute records (`compute_nodes` joined with their `nova-compute`
  service): host and node names, availability zone, whether the service is
  up and enabled, PCI devices by alias, the metadata of the host's
  aggregates — read by `load_nodes`, the only I/O;
- Placement's answer to `GET /allocation_candidates`: the allocation requests
  whose providers lie in the node's tree (uuid = node uuid) and the provider
  summaries (capacity and usage per resource class).

`build_host_states` joins them without I/O. Usage lives in one `ProviderUsage`
shared by all hosts of a request, because a sharing provider (e.g. DISK_GB
on shared storage) serves several hosts: when the scheduler claims for one
instance of a multi-instance request it `consume`s here, and the next
instance sees the fuller hosts.
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.engine import Connection

from stowage.compute import aggregates, services
from stowage.config import ComputeSettings

__all__ = ["NodeRecord", "Offer", "offer_of", "ProviderUsage", "HostState", "load_nodes",
           "build_host_states", "amounts_of", "candidate_roots", "free_amounts",
           "request_roots"]

LOG = logging.getLogger(__name__)
Allocations = dict[str, dict[str, int]]
_NONE: Mapping[str, int] = {}


@dataclass(frozen=True)
class NodeRecord:
    """One compute node and its compute service, as the database has them."""

    uuid: str
    host: str
    node: str
    availability_zone: str
    service_up: bool = True
    service_disabled: bool = False
    disabled_reason: str | None = None
    forced_down: bool = False
    pci_stats: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    # key -> values of that key in the host's aggregates' metadata (Nova's
    # aggregate_metadata_get_by_host), for AggregateInstanceExtraSpecsFilter.
    aggregate_metadata: Mapping[str, frozenset[str]] = field(default_factory=dict)
    # The uuid of the host's cell (None: a deployment read without cells).
    cell: str | None = None
    # Derived once per record, kept with it across decisions (a record is rebuilt
    # only when its row changes): the hosts' name order, the node's own tree, and
    # why its service takes nothing (ComputeFilter's verdict; None: up and enabled).
    order: tuple[str, str] = field(init=False, repr=False, compare=False)
    alone: frozenset[str] = field(init=False, repr=False, compare=False)
    service_refusal: str | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        setattr_ = object.__setattr__
        setattr_(self, "order", (self.host, self.node))
        setattr_(self, "alone", frozenset((self.uuid,)))
        setattr_(self, "service_refusal", _refusal(self))


def _refusal(rec: NodeRecord) -> str | None:
    """Why the node's compute service takes no instance, or None (ComputeFilter)."""
    if rec.forced_down:
        return "compute service is forced down"
    if not rec.service_up:
        return "compute service is down"
    if rec.service_disabled:
        why = f" ({rec.disabled_reason})" if rec.disabled_reason else ""
        return f"compute service is disabled{why}"
    return None


def _zone(metadata: Mapping[str, frozenset[str]], svc: services.Service) -> str | None:
    """The host's zone: its aggregates' (the least, as `aggregates.host_zones`), else its own."""
    zones = metadata.get(aggregates.AZ_KEY)
    return min(zones) if zones else svc.availability_zone


def load_nodes(conn: Connection, settings: ComputeSettings, now: datetime.datetime,
               metadata: Mapping[str, Mapping[str, frozenset[str]]]) -> dict[str, NodeRecord]:
    """node uuid -> record, for every live compute node and its nova-compute service;
    `metadata` is `aggregates.metadata_by_host` (the API database's), which also gives
    a host its zone."""
    compute = services.list_services(conn, binary=services.COMPUTE)
    by_id = {svc.id: svc for svc in compute}
    by_host = {svc.host: svc for svc in compute}
    nodes: dict[str, NodeRecord] = {}
    for node in services.list_compute_nodes(conn):
        svc = (by_id.get(node.service_id) if node.service_id is not None else None
               ) or by_host.get(node.host)
        record = NodeRecord(node.uuid, node.host, node.hypervisor_hostname,
                            settings.default_availability_zone, service_up=False,
                            pci_stats=dict(node.pci_stats or {}),
                            aggregate_metadata=metadata.get(node.host, {}))
        if svc is not None:
            record = dataclasses.replace(
                record, availability_zone=_zone(metadata.get(node.host, {}), svc)
                or record.availability_zone,
                service_up=services.is_up(svc, settings, now), service_disabled=svc.disabled,
                disabled_reason=svc.disabled_reason, forced_down=svc.forced_down)
        nodes[node.uuid] = record
    return nodes


@dataclass(frozen=True)
class Offer:
    """Placement's candidates as the scheduler reads them, whichever way they came.

    `allocation_requests` are in the API's shape (microversion 1.34+:
    allocations by provider uuid, mappings) and are shared, never modified;
    `free` is capacity - used per provider summarised and resource class;
    `root_of` each summarised provider's root. The API's answer gives one
    (`offer_of`); the candidates engine of this process another
    (local_candidates.py), without JSON in between.
    """

    allocation_requests: Sequence[Mapping[str, Any]]
    free: Mapping[str, Mapping[str, int]]
    root_of: Mapping[str, str]
    # Per allocation request, in order: the root of its one provider (`root_of`, else
    # the provider itself), None when it names several; None: not worked out (a
    # hand-built offer). Both producers know it while they walk the candidates, and
    # it spares the host states a lookup per candidate.
    roots: Sequence[str | None] | None = None


def offer_of(answer: Mapping[str, Any]) -> Offer:
    """The offer of a decoded GET /allocation_candidates answer."""
    summaries: Mapping[str, Mapping[str, Any]] = answer.get("provider_summaries") or {}
    requests: Sequence[Mapping[str, Any]] = answer.get("allocation_requests") or []
    root_of = {rp: str(s.get("root_provider_uuid") or rp) for rp, s in summaries.items()}
    return Offer(requests,
                 {rp: {rc: int(v["capacity"]) - int(v["used"])
                       for rc, v in (summary.get("resources") or {}).items()}
                  for rp, summary in summaries.items()},
                 root_of, request_roots(requests, root_of))


def request_roots(requests: Sequence[Mapping[str, Any]], root_of: Mapping[str, str]
                  ) -> list[str | None]:
    """`Offer.roots` of `requests` (API shape, 1.12+: allocations keyed by provider)."""
    found: list[str | None] = []
    append = found.append
    for ar in requests:
        allocations = ar["allocations"]
        if len(allocations) == 1:
            for rp in allocations:
                append(root_of.get(rp, rp))
        else:
            append(None)
    return found


class ProviderUsage:
    """Free amount per provider per resource class, from the provider summaries.

    Only the free amount (capacity - used) is kept, one int per provider and
    class: the scheduler asks nothing else, and a claim lowers it. The
    per-provider mappings may be shared with the offer (and, in-process, with
    later decisions): `consume` replaces the one it changes rather than
    writing into it.
    """

    def __init__(self, free: Mapping[str, Mapping[str, int]]) -> None:
        self._free: dict[str, Mapping[str, int]] = dict(free)

    def free(self, rp: str, rc: str) -> int | None:
        return self._free.get(rp, _NONE).get(rc)

    def free_in(self, rps: Iterable[str], rc: str) -> list[int]:
        """Free amounts of `rc` on those of `rps` that have it (the weighers' hot path)."""
        free = self._free
        return [f for rp in rps if (f := free.get(rp, _NONE).get(rc)) is not None]

    def of(self, rp: str) -> Mapping[str, int]:
        """Free amount per resource class of `rp` (empty when not summarised)."""
        return self._free.get(rp, _NONE)

    def shortfall(self, allocations: Allocations) -> str | None:
        """Why `allocations` no longer fit, or None when they do."""
        for rp, resources in sorted(allocations.items()):
            for rc, amount in sorted(resources.items()):
                free = self.free(rp, rc)
                if free is not None and free < amount:
                    return f"{rc} on provider {rp}: {amount} requested, {free} free"
        return None

    def fits(self, allocation_request: Mapping[str, Any]) -> bool:
        """`shortfall(amounts_of(allocation_request)) is None`, without building the
        amounts or sorting: the filter asks it of every candidate of every decision."""
        free = self._free
        for rp, alloc in allocation_request["allocations"].items():
            found = free.get(rp)
            if found is None:
                continue
            for rc, amount in alloc["resources"].items():
                have = found.get(rc)
                if have is not None and have < amount:
                    return False
        return True

    def consume(self, allocations: Allocations) -> None:
        for rp, resources in allocations.items():
            found = self._free.get(rp)
            if found is None:
                continue
            lowered = dict(found)
            for rc, amount in resources.items():
                if rc in lowered:
                    lowered[rc] -= amount
            self._free[rp] = lowered


def free_amounts(hosts: Sequence[HostState], rc: str) -> list[float]:
    """`host.free(rc)` of each host, the common case (a node alone in its tree, with
    `rc`) read inline: the weighers ask it of every candidate, per class. The values
    stay ints (exact below 2**53, so the weighers' scaled floats are the same)."""
    found: list[float] = []
    append = found.append
    for host in hosts:
        if len(host.tree) == 1:  # `usage.of` inline: 3,000 method calls a decision
            have = host.usage._free.get(host.record.uuid, _NONE).get(rc)
            if have is not None:
                append(have)
                continue
        append(host.free(rc))
    return found


def amounts_of(allocation_request: Mapping[str, Any]) -> Allocations:
    """provider -> resource class -> amount of one allocation request."""
    return {rp: dict(a["resources"]) for rp, a in allocation_request["allocations"].items()}


@dataclass(slots=True)
class HostState:
    """A candidate host for this request: its records plus its Placement candidates."""

    record: NodeRecord
    usage: ProviderUsage
    # Providers of the node's tree (the root is the node itself).
    tree: frozenset[str]
    allocation_requests: list[Mapping[str, Any]] = field(default_factory=list)
    pci_free: dict[str, int] = field(default_factory=dict)

    @property
    def host(self) -> str:
        return self.record.host

    @property
    def node(self) -> str:
        return self.record.node

    @property
    def uuid(self) -> str:
        return self.record.uuid

    @property
    def cell(self) -> str | None:
        return self.record.cell

    def free(self, rc: str) -> int:
        """Free amount of `rc` in the tree, else on the sharing providers it would use."""
        if len(self.tree) == 1:  # the common case: the node alone, which has `rc`
            have = self.usage.of(self.record.uuid).get(rc)
            if have is not None:
                return have
        in_tree = self.usage.free_in(self.tree, rc)
        if in_tree:
            return in_tree[0] if len(in_tree) == 1 else sum(in_tree)
        shared = {rp for ar in self.allocation_requests for rp in ar["allocations"]
                  if rp not in self.tree}
        return sum(f for rp in shared if (f := self.usage.free(rp, rc)) is not None)

    def fitting_request(self) -> Mapping[str, Any] | None:
        """The first allocation request that still fits, after this request's earlier claims."""
        for ar in self.allocation_requests:
            if self.usage.fits(ar):
                return ar
        return None

    def shortfall(self) -> str | None:
        """None when some allocation request still fits; else why the first one does not."""
        requests = self.allocation_requests
        if not requests:
            return "Placement offered no allocation request"
        fits = self.usage.fits  # `fitting_request` inline: the filter asks every host
        for ar in requests:
            if fits(ar):
                return None
        return self.usage.shortfall(amounts_of(requests[0]))

    def consume(self, allocation_request: Mapping[str, Any], pci: Mapping[str, int]) -> None:
        self.usage.consume(amounts_of(allocation_request))
        for alias, count in pci.items():
            self.pci_free[alias] = self.pci_free.get(alias, 0) - count


def candidate_roots(offer: Offer | Mapping[str, Any]) -> set[str]:
    """The root providers the candidates name: the compute nodes a decision may read."""
    if not isinstance(offer, Offer):
        offer = offer_of(offer)
    root_of = offer.root_of
    roots = set(root_of.values())
    per_request = offer.roots
    if per_request is None:
        general: Iterable[Mapping[str, Any]] = offer.allocation_requests
    else:  # the one-provider requests' roots are known; only the others are walked
        roots.update(r for r in set(per_request) if r is not None)
        general = ([ar for ar, r in zip(offer.allocation_requests, per_request, strict=True)
                    if r is None] if None in per_request else ())
    for ar in general:
        roots.update(rp for rp in ar["allocations"] if rp not in root_of)
    return roots


def _trees(root_of: Mapping[str, str]) -> dict[str, frozenset[str]]:
    """Trees of more than one provider only (a node alone is the common case, and its
    record keeps its one-provider tree); a root summarised belongs to its own tree."""
    trees: dict[str, set[str]] = {}
    for rp, root in root_of.items():
        if rp != root:
            trees.setdefault(root, set()).add(rp)
    for root, members in trees.items():
        if root in root_of:
            members.add(root)
    return {root: frozenset(members) for root, members in trees.items()}


def _node_root(ar: Mapping[str, Any], root_of: Mapping[str, str],
               nodes: Mapping[str, NodeRecord]) -> str | None:
    """The one compute node a request of several providers lies on (sharing
    providers aside), or None."""
    roots: set[str] = {root for rp in ar["allocations"]
                       if (root := root_of.get(rp, rp)) in nodes}
    if len(roots) != 1:
        LOG.debug("allocation request %s names no single compute node; skipped", ar)
        return None
    return roots.pop()


def build_host_states(nodes: Mapping[str, NodeRecord],
                      offer: Offer | Mapping[str, Any]) -> list[HostState]:
    """One state per node that has at least one allocation request, in node-name order.

    `offer` is an `Offer` or a decoded answer. Linear in the candidates: each
    request's root comes with the offer (`Offer.roots`), and `nodes` is probed as
    the mapping it is. What does not change between decisions is the records'
    (their name order, their one-provider tree, their service's verdict), so a
    state is a few references.
    """
    if not isinstance(offer, Offer):
        offer = offer_of(offer)
    usage = ProviderUsage(offer.free)
    root_of = offer.root_of
    trees = _trees(root_of)
    requests = offer.allocation_requests
    per_request = offer.roots
    if per_request is None:
        per_request = request_roots(requests, root_of)
    states: dict[str, HostState] = {}
    get_state, get_node = states.get, nodes.get
    for ar, root in zip(requests, per_request, strict=True):
        if root is None and (root := _node_root(ar, root_of, nodes)) is None:
            continue
        state = get_state(root)
        if state is not None:
            state.allocation_requests.append(ar)
            continue
        record = get_node(root)
        if record is None:
            LOG.debug("allocation request %s names no compute node; skipped", ar)
            continue
        pci = record.pci_stats
        states[root] = HostState(
            record, usage, trees.get(root) or record.alone, [ar],
            {alias: int(v.get("free", 0)) for alias, v in pci.items()} if pci else {})
    return sorted(states.values(), key=_ORDER)


_ORDER = operator.attrgetter("record.order")
