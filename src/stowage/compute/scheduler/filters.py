"""Filters: may this host take this instance? Each one says no with a reason.

A filter is one method, `reject(host, req) -> str | None`: None lets the host
through, a string says why not. `run_filters` applies them in order and
records every refusal as a `Rejection(host, filter, reason)`, which the
scheduler keeps for the operator (Nomad's `FilterNode(node, reason)`,
Kubernetes' `Status{plugin, reasons}`).

    ComputeFilter                   service up and enabled
    AvailabilityZoneFilter          host in the requested AZ
    IgnoreHostsFilter               host not in ignore_hosts (e.g. a move's source)
    RequestedDestinationFilter      the host (and node) the admin asked for
    ServerGroupAntiAffinityFilter   fewer than max_server_per_host group members here
    ServerGroupAffinityFilter       on a host the group already uses, if any
    PciPassthroughFilter            enough free PCI devices per alias
    AggregateInstanceExtraSpecsFilter  the host's aggregates' metadata meets the
                                    flavor's aggregate_instance_extra_specs: (and
                                    unscoped) extra specs (off by default, as in Nova)
    ResourceFitFilter               an allocation request still fits after this
                                    request's earlier claims (multi-instance)

Resources themselves were already checked by Placement; these filters see
what Placement does not know (services, zones, groups, PCI devices, aggregate
metadata). `[compute] enabled_filters` names Nova's filters that run
(`filters_for`); IgnoreHostsFilter, RequestedDestinationFilter and
ResourceFitFilter always run: they carry the request itself (Nova does their
work outside its filters).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from stowage.compute.scheduler import extra_specs_ops
from stowage.compute.scheduler.host_state import HostState
from stowage.compute.scheduler.request import SchedulingRequest
from stowage.config import ComputeSettings

__all__ = ["Filter", "Rejection", "run_filters", "DEFAULT_FILTERS", "ComputeFilter",
           "AvailabilityZoneFilter", "IgnoreHostsFilter", "RequestedDestinationFilter",
           "ServerGroupAntiAffinityFilter", "ServerGroupAffinityFilter",
           "PciPassthroughFilter", "ResourceFitFilter", "AggregateInstanceExtraSpecsFilter",
           "filters_for", "OPTIONAL_FILTERS"]

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class Rejection:
    """Who turned a host down, and why."""

    host: str
    filter: str
    reason: str

    def __str__(self) -> str:
        return f"{self.host}: {self.filter}: {self.reason}"


class Filter(Protocol):
    name: str

    def reject(self, host: HostState, req: SchedulingRequest) -> str | None: ...


class ComputeFilter:
    name = "ComputeFilter"

    def reject(self, host: HostState, req: SchedulingRequest) -> str | None:
        """Forced down, down, or disabled: the record's verdict, taken when it was built
        (the up/down verdict is part of a record's identity: NodeRecords rebuilds it
        when that changes at a decision's `now`)."""
        return host.record.service_refusal


class AvailabilityZoneFilter:
    name = "AvailabilityZoneFilter"

    def applies(self, req: SchedulingRequest) -> bool:
        return bool(req.availability_zone)

    def reject(self, host: HostState, req: SchedulingRequest) -> str | None:
        wanted, have = req.availability_zone, host.record.availability_zone
        if wanted and wanted != have:
            return f"host is in availability zone {have!r}, not {wanted!r}"
        return None


class IgnoreHostsFilter:
    name = "IgnoreHostsFilter"

    def applies(self, req: SchedulingRequest) -> bool:
        return bool(req.ignore_hosts)

    def reject(self, host: HostState, req: SchedulingRequest) -> str | None:
        return "host is in ignore_hosts" if host.host in req.ignore_hosts else None


class RequestedDestinationFilter:
    name = "RequestedDestinationFilter"

    def applies(self, req: SchedulingRequest) -> bool:
        return req.destination is not None

    def reject(self, host: HostState, req: SchedulingRequest) -> str | None:
        dest = req.destination
        if dest is None:
            return None
        if host.host != dest.host:
            return f"host is not the requested destination {dest.host}"
        if dest.node and host.node != dest.node:
            return f"node {host.node} is not the requested node {dest.node}"
        return None


class ServerGroupAntiAffinityFilter:
    name = "ServerGroupAntiAffinityFilter"

    def applies(self, req: SchedulingRequest) -> bool:
        return req.group is not None and req.group.policy == "anti-affinity"

    def reject(self, host: HostState, req: SchedulingRequest) -> str | None:
        group = req.group
        if group is None or group.policy != "anti-affinity":
            return None
        here = group.per_host[host.host]
        if here >= group.max_server_per_host:
            return (f"{here} member(s) of server group {group.uuid} already on this host "
                    f"(max_server_per_host {group.max_server_per_host})")
        return None


class ServerGroupAffinityFilter:
    name = "ServerGroupAffinityFilter"

    def applies(self, req: SchedulingRequest) -> bool:
        return req.group is not None and req.group.policy == "affinity"

    def reject(self, host: HostState, req: SchedulingRequest) -> str | None:
        group = req.group
        if group is None or group.policy != "affinity":
            return None
        hosts = group.hosts()
        if hosts and host.host not in hosts:
            return f"server group {group.uuid} members are on {', '.join(hosts)}"
        return None


class PciPassthroughFilter:
    name = "PciPassthroughFilter"

    def applies(self, req: SchedulingRequest) -> bool:
        return bool(req.pci_requests)

    def reject(self, host: HostState, req: SchedulingRequest) -> str | None:
        for alias, count in sorted(req.pci_requests.items()):
            free = host.pci_free.get(alias, 0)
            if free < count:
                return f"{count} PCI device(s) of alias {alias!r} requested, {free} free"
        return None


class AggregateInstanceExtraSpecsFilter:
    """Nova's filter: each flavor extra spec scoped `aggregate_instance_extra_specs:`, or not
    scoped at all, must be met by the value of that key in one of the host's aggregates."""

    name = "AggregateInstanceExtraSpecsFilter"
    scope = "aggregate_instance_extra_specs"

    def applies(self, req: SchedulingRequest) -> bool:
        """Some extra spec is this filter's: scoped to it, or not scoped at all."""
        for key in req.flavor.get("extra_specs") or {}:
            scope, _, rest = str(key).partition(":")
            if not rest or scope == self.scope:
                return True
        return False

    def reject(self, host: HostState, req: SchedulingRequest) -> str | None:
        metadata = host.record.aggregate_metadata
        for key, wanted in sorted((req.flavor.get("extra_specs") or {}).items()):
            scope, _, rest = str(key).partition(":")
            if rest and scope != self.scope:
                continue
            name = rest or scope
            values = metadata.get(name)
            if not values:
                return f"extra spec {key} is not in the host's aggregates' metadata"
            if not any(extra_specs_ops.match(v, str(wanted)) for v in sorted(values)):
                return (f"aggregate metadata {name}={sorted(values)} does not match "
                        f"extra spec {key}={wanted!r}")
        return None


class ResourceFitFilter:
    name = "ResourceFitFilter"

    def reject(self, host: HostState, req: SchedulingRequest) -> str | None:
        return host.shortfall()


# Every filter, in the order they run; `[compute] enabled_filters` names which of
# OPTIONAL_FILTERS run, the others always do.
_ALL_FILTERS: Sequence[Filter] = (
    ComputeFilter(), AvailabilityZoneFilter(), IgnoreHostsFilter(),
    RequestedDestinationFilter(), ServerGroupAntiAffinityFilter(),
    ServerGroupAffinityFilter(), PciPassthroughFilter(), AggregateInstanceExtraSpecsFilter(),
    ResourceFitFilter(),
)
_ALWAYS = frozenset({"IgnoreHostsFilter", "RequestedDestinationFilter", "ResourceFitFilter"})
OPTIONAL_FILTERS = tuple(f.name for f in _ALL_FILTERS if f.name not in _ALWAYS)


def filters_for(enabled: Sequence[str]) -> tuple[Filter, ...]:
    """The stack for `[compute] enabled_filters`: the named ones and those that always run,
    in the canonical order."""
    unknown = sorted(set(enabled) - set(OPTIONAL_FILTERS))
    if unknown:
        raise ValueError(f"[compute] enabled_filters: unknown filter(s) {unknown}; "
                         f"known: {sorted(OPTIONAL_FILTERS)}")
    return tuple(f for f in _ALL_FILTERS if f.name in _ALWAYS or f.name in set(enabled))


DEFAULT_FILTERS: Sequence[Filter] = filters_for(ComputeSettings().enabled_filters)


def run_filters(hosts: Iterable[HostState], req: SchedulingRequest,
                rejections: list[Rejection],
                filters: Sequence[Filter] = DEFAULT_FILTERS) -> list[HostState]:
    """The hosts every filter lets through; each refusal is appended to `rejections`.

    A filter with an `applies(req)` that says no would let every host through
    (no zone asked, no group, no PCI...): it is not run at all, which halves the
    calls of an ordinary request over 1,000 candidates.
    """
    active = [(f.name, f.reject) for f in filters
              if (applies := getattr(f, "applies", None)) is None or applies(req)]
    passed: list[HostState] = []
    for host in hosts:
        for name, reject in active:
            reason = reject(host, req)
            if reason is not None:
                rejection = Rejection(host.host, name, reason)
                LOG.debug("scheduler rejected %s", rejection)
                rejections.append(rejection)
                break
        else:
            passed.append(host)
    return passed
