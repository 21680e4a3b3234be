"""openstack-exporter's Placement and Nova gauges, computed from stowage's records at scrape.

Dashboards and alerts written for openstack-exporter keep working when
stowage replaces Placement and Nova: the names, types and labels are that
exporter's (its `exporters/placement.go` and `nova.go`), the values what
stowage's own APIs would answer it:

    openstack_placement_up                                   1 when the database answers
    openstack_placement_resource_{total,reserved,allocation_ratio,generation,usage}
                          {hostname, resourcetype}           per provider and class
    openstack_nova_up, _total_vms, _flavors, _availability_zones
    openstack_nova_flavor {id, name, vcpus, ram, disk, is_public}           1 each
    openstack_nova_agent_state {id, hostname, service, adminState, zone, disabledReason}
                                                             1 up, 0 down
    openstack_nova_{running_vms, current_workload, vcpus_available, vcpus_used,
      memory_available_bytes, memory_used_bytes, local_storage_available_bytes,
      local_storage_used_bytes, free_disk_bytes} {hostname, availability_zone, aggregates}

`hostname` of the Placement gauges is the provider's name, as the exporter
reports it. What the exporter publishes and stowage does not (per-server
`server_status`, per-consumer `resource_provider_allocations`, per-project
`limits_*` and `quota_*`) is listed in docs/operations.md with the reason.
Everything is read in a handful of grouped queries (no per-host query): the
scrape of 1,000 hosts stays within its budget (bench/metrics.py).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from sqlalchemy.exc import DBAPIError

from stowage.compute import aggregates as aggs
from stowage.compute import counts, flavors
from stowage.compute import services as svc
from stowage.context import RequestContext
from stowage.db import Database
from stowage.metrics.text import Family, label_text
from stowage.placement.totals import ProviderTotal, provider_totals
from stowage.timeutil import utcnow

__all__ = ["nova_families", "placement_families"]

LOG = logging.getLogger(__name__)
MEGABYTE = 1024 * 1024
GIGABYTE = 1024 * MEGABYTE

_RP_LABELS = ("hostname", "resourcetype")
_RP_FIELDS = (("total", "Total of the inventory (Placement's `total`)."),
              ("allocation_ratio", "The inventory's allocation ratio."),
              ("generation", "The provider's generation."),
              ("reserved", "The inventory's reserved amount."),
              ("usage", "What consumers hold of the class on the provider."))


def placement_families(db: Database) -> Iterator[Family]:
    """The Placement gauges from the Placement database (`openstack_placement_up` 0 when it
    does not answer, and nothing else then)."""
    up = Family("openstack_placement_up", "Whether Placement's database answered.")
    try:
        with db.read() as conn:
            totals = provider_totals(conn)
    except DBAPIError as exc:
        LOG.warning("metrics: the Placement database did not answer: %s", exc)
        up.add("", 0)
        yield up
        return
    up.add("", 1)
    yield up
    yield from _provider_families(totals)


def _provider_families(totals: list[ProviderTotal]) -> Iterator[Family]:
    """The five per-(provider, class) families; each line written at once (the hot loop of
    a large cloud's scrape: 1,000 hosts are ~15,000 of these lines)."""
    fams = [Family(f"openstack_placement_resource_{name}", text) for name, text in _RP_FIELDS]
    total, ratio, generation, reserved, usage = (f.lines for f in fams)
    n_total, n_ratio, n_gen, n_reserved, n_usage = (f.name for f in fams)
    for row in totals:
        name = row.provider_name
        if '"' in name or "\\" in name or "\n" in name:
            labels = label_text(_RP_LABELS, (name, row.resource_class))
        else:
            labels = f'{{hostname="{name}",resourcetype="{row.resource_class}"}}'
        total.append(f"{n_total}{labels} {row.total}\n")
        ratio.append(f"{n_ratio}{labels} {row.allocation_ratio!r}\n")
        generation.append(f"{n_gen}{labels} {row.generation}\n")
        reserved.append(f"{n_reserved}{labels} {row.reserved}\n")
        usage.append(f"{n_usage}{labels} {row.used}\n")
    yield from fams


_HV_LABELS = ("hostname", "availability_zone", "aggregates")
_HV = (("running_vms", "Servers on the hypervisor."),
       ("current_workload", "Servers on the hypervisor with a task in progress."),
       ("vcpus_available", "The hypervisor's VCPUs."),
       ("vcpus_used", "VCPUs its servers use."),
       ("memory_available_bytes", "The hypervisor's memory."),
       ("memory_used_bytes", "Memory its servers use."),
       ("local_storage_available_bytes", "The hypervisor's local disk."),
       ("local_storage_used_bytes", "Local disk its servers use."),
       ("free_disk_bytes", "Local disk left."))
_AGENT_LABELS = ("id", "hostname", "service", "adminState", "zone", "disabledReason")
_FLAVOR_LABELS = ("id", "name", "vcpus", "ram", "disk", "is_public")


def nova_families(state: Any) -> Iterator[Family]:
    """The Nova gauges from the API database and every cell's (`state`: the Compute
    service's state: `db`, `cells`, `settings`, `gather`). A cell database that does not
    answer leaves its hosts out, as `GET /os-hypervisors` leaves a down cell's out."""
    up = Family("openstack_nova_up", "Whether Compute's API database answered.")
    try:
        with state.db.read() as conn:
            zones = aggs.host_zones(conn)
            found = aggs.list_aggregates(conn)
            flavor_list = flavors.list_flavors(conn, RequestContext(roles=("admin",)),
                                               flavors.ListQuery(is_public=None))
    except DBAPIError as exc:
        LOG.warning("metrics: Compute's API database did not answer: %s", exc)
        up.add("", 0)
        yield up
        return
    up.add("", 1)
    yield up
    parts, _ = state.gather(_cell_read)
    yield from _flavor_families(flavor_list)
    services = [s for part in parts for s in part[0]]
    default_zone = state.settings.compute.default_availability_zone
    yield _zones(services, zones, default_zone)
    total = Family("openstack_nova_total_vms", "Servers, every project's, every cell's.")
    total.add("", sum(part[3] for part in parts))
    yield total
    yield _agent_state(services, zones, default_zone, state.settings.compute)
    yield from _hypervisors(parts, zones, _aggregate_names(found))


def _cell_read(conn: Any) -> tuple[list[counts.ServiceState], list[counts.NodeUsage],
                                   dict[str, int], int]:
    return (counts.service_states(conn), counts.node_usages(conn), svc.workloads(conn),
            counts.live_instances(conn))


def _flavor_families(found: list[flavors.Flavor]) -> Iterator[Family]:
    count = Family("openstack_nova_flavors", "Flavors, public and private.")
    count.add("", len(found))
    yield count
    each = Family("openstack_nova_flavor", "1 per flavor, its sizes in labels.")
    for f in found:
        each.add(label_text(_FLAVOR_LABELS, (f.flavorid, f.name, str(f.vcpus),
                                             str(f.memory_mb), str(f.root_gb),
                                             "true" if f.is_public else "false")), 1)
    yield each


def _zone(service: counts.ServiceState, zones: dict[str, str], default: str) -> str:
    if service.binary != svc.COMPUTE:
        return svc.INTERNAL_ZONE
    return zones.get(service.host, default)


def _zones(services: list[counts.ServiceState], zones: dict[str, str], default: str) -> Family:
    fam = Family("openstack_nova_availability_zones", "Availability zones of compute hosts.")
    fam.add("", len({_zone(s, zones, default) for s in services if s.binary == svc.COMPUTE}))
    return fam


def _agent_state(services: list[counts.ServiceState], zones: dict[str, str], default: str,
                 settings: Any) -> Family:
    fam = Family("openstack_nova_agent_state", "1 when the service is up, 0 when down.")
    now = utcnow()
    for s in services:
        values = (s.uuid, s.host, s.binary, "disabled" if s.disabled else "enabled",
                  _zone(s, zones, default), s.disabled_reason or "")
        up = svc.heard_from(s.forced_down, s.last_seen_up, settings, now)
        fam.add(label_text(_AGENT_LABELS, values), 1 if up else 0)
    return fam


def _aggregate_names(found: list[aggs.Aggregate]) -> dict[str, str]:
    """host -> its aggregates' names, sorted, comma-joined; an aggregate that only makes a
    zone (its one metadata key is availability_zone) is left out, as the exporter does."""
    names: dict[str, list[str]] = {}
    for agg in found:
        if set(agg.metadata) == {aggs.AZ_KEY}:
            continue
        for host in agg.hosts:
            names.setdefault(host, []).append(agg.name)
    return {host: ",".join(sorted(items)) for host, items in names.items()}


def _hypervisors(parts: list[Any], zones: dict[str, str],
                 names: dict[str, str]) -> Iterator[Family]:
    fams = [Family(f"openstack_nova_{name}", text) for name, text in _HV]
    outs = [(f.name, f.lines) for f in fams]
    for services, nodes, loads, _ in parts:
        served = {s.host for s in services if s.binary == svc.COMPUTE}
        for n in nodes:
            if n.host not in served:
                continue  # its service was deleted: not a hypervisor any more (as the API)
            labels = label_text(_HV_LABELS, (n.hypervisor_hostname, zones.get(n.host, ""),
                                             names.get(n.host, "")))
            values = (n.running_vms, loads.get(n.host, 0), n.vcpus, n.vcpus_used,
                      n.memory_mb * MEGABYTE, n.memory_mb_used * MEGABYTE,
                      n.local_gb * GIGABYTE, n.local_gb_used * GIGABYTE,
                      (n.local_gb - n.local_gb_used) * GIGABYTE)
            for (name, lines), value in zip(outs, values, strict=True):
                lines.append(f"{name}{labels} {value}\n")
    yield from fams
