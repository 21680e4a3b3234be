"""What one host tells Placement, and the reconcile that keeps its allocations honest.

Reporting: the host's root provider (uuid = compute node uuid, name = host
name) with VCPU, MEMORY_MB and DISK_GB inventory, its traits and aggregates.
A host on shared storage reports DISK_GB on a sharing provider instead::

    root "host1" (VCPU, MEMORY_MB)      sharing "ceph1" (DISK_GB, MISC_SHARES_VIA_AGGREGATE)
            └──────── aggregate uuid5("ceph1") ────────┘

Writes happen only when something differs, and traits/aggregates that
somebody else put on the providers are kept (aggregates by compare-and-swap, so
that an os-aggregates host added meanwhile stays): the agent owns its configured
ones and COMPUTE_STATUS_DISABLED, nothing more.

Network devices (`report_devices`): the providers `network_devices.device_tree`
derives, under the root, created when missing and kept to the configuration.
A device no longer configured loses its provider (and an agent provider left
without devices goes too), unless that provider holds allocations: it then
stays, its inventory all reserved so nothing new lands on it, and goes at the
first report after they are released. Likewise an inventory class dropped
from a device while allocated stays, fully reserved, until it is free.

Reconcile (Nova's resource tracker `_update_available_resource`): heal the
allocation of an instance this host runs that holds nothing here, and delete
the allocations of consumers stowage knows to be over (a deleted instance, a
finished migration). Consumers it knows nothing about are left alone.
"""

from __future__ import annotations

import logging
import uuid as uuidlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import os_traits
import sqlalchemy as sa

from stowage.compute import instances, migrations, states
from stowage.compute import tables as t
from stowage.compute.agent import network_devices as nd
from stowage.compute.hosts import HostConfig, shared_disk
from stowage.compute.resources import placement_request, summed
from stowage.db import Database
from stowage.placement.client import PlacementClient, PlacementError

__all__ = ["HostProviders", "providers_of", "report", "report_devices", "delete_tree",
           "set_status_trait", "usage", "reconcile", "Reconciled", "DISABLED_TRAIT"]

LOG = logging.getLogger(__name__)

DISABLED_TRAIT = os_traits.COMPUTE_STATUS_DISABLED
SHARES_TRAIT = os_traits.MISC_SHARES_VIA_AGGREGATE
_NAMESPACE = uuidlib.UUID("5d3b7a3c-53f4-4b9e-9a55-2f5d0d7c6e11")
_INVENTORY_FIELDS = ("total", "reserved", "min_unit", "max_unit", "step_size",
                     "allocation_ratio")


@dataclass(frozen=True)
class HostProviders:
    """The providers a host reports on: its root, and a sharing one for its disk."""

    root: str
    sharing: str | None = None
    shared_aggregate: str | None = None

    @property
    def all(self) -> tuple[str, ...]:
        return (self.root,) if self.sharing is None else (self.root, self.sharing)


def providers_of(host: HostConfig, node_uuid: str) -> HostProviders:
    """Sharing provider and aggregate uuids derive from the storage name: every host agrees."""
    if host.shared_storage is None:
        return HostProviders(node_uuid)
    name = host.shared_storage
    return HostProviders(node_uuid, str(uuidlib.uuid5(_NAMESPACE, f"provider:{name}")),
                         str(uuidlib.uuid5(_NAMESPACE, f"aggregate:{name}")))


def _inventory(total: int, reserved: int, ratio: float) -> dict[str, Any]:
    return {"total": total, "reserved": reserved, "min_unit": 1, "max_unit": total,
            "step_size": 1, "allocation_ratio": ratio}


def inventories(host: HostConfig) -> tuple[dict[str, Any], dict[str, Any]]:
    """(root inventories, sharing provider inventories) of the host's configuration."""
    reserved = host.reserved
    root = {"VCPU": _inventory(host.vcpus, reserved.get("VCPU", 0), host.cpu_allocation_ratio),
            "MEMORY_MB": _inventory(host.memory_mb, reserved.get("MEMORY_MB", 0),
                                    host.ram_allocation_ratio)}
    disk: dict[str, Any] = {}
    if host.disk_gb > 0:
        disk = {"DISK_GB": _inventory(*shared_disk(host))}
    if host.shared_storage is None:
        return {**root, **disk}, {}
    return root, disk


def report(placement: PlacementClient, host: HostConfig, providers: HostProviders,
           disabled: bool) -> bool:
    """Make Placement show the host as configured (and disabled or not).

    True when Placement now shows exactly that; False when something waits
    for a later report (a device class or provider kept while allocated, a
    device provider that could not be written), so that the agent does not
    take this report as the last word (see `ComputeAgent._report`).
    """
    root_inv, shared_inv = inventories(host)
    placement.ensure_provider(providers.root, host.name)
    _sync_inventories(placement, providers.root, root_inv)
    traits = set(host.traits)
    aggregates = set(host.aggregates)
    if providers.sharing is not None and providers.shared_aggregate is not None:
        assert host.shared_storage is not None
        placement.ensure_provider(providers.sharing, host.shared_storage)
        _sync_inventories(placement, providers.sharing, shared_inv)
        _sync_set(placement, providers.sharing, "traits", {SHARES_TRAIT})
        _sync_set(placement, providers.sharing, "aggregates", {providers.shared_aggregate})
        aggregates.add(providers.shared_aggregate)
    _sync_set(placement, providers.root, "traits", traits | ({DISABLED_TRAIT} if disabled
                                                              else set()),
              drop={DISABLED_TRAIT} if not disabled else set())
    _sync_set(placement, providers.root, "aggregates", aggregates)
    return report_devices(placement, host, providers.root)


def report_devices(placement: PlacementClient, host: HostConfig, node_uuid: str) -> bool:
    """Make the host's network device providers match its configuration (module docstring).

    A provider that cannot be written is logged and left for the next report;
    the others are still reported. True when nothing was left.
    """
    wanted = nd.device_tree(host, node_uuid)
    settled = True
    for rp in wanted:
        try:
            settled = _report_device(placement, host, rp) and settled
        except PlacementError as exc:
            settled = False
            LOG.warning("host %s: cannot report network device provider %s: %s", host.name,
                        rp.name, exc)
    try:
        return _remove_unconfigured(placement, host, node_uuid,
                                    {rp.uuid for rp in wanted}) and settled
    except PlacementError as exc:
        LOG.warning("host %s: cannot list its providers: %s", host.name, exc)
        return False


def _report_device(placement: PlacementClient, host: HostConfig,
                   rp: nd.DeviceProvider) -> bool:
    found = placement.ensure_provider(rp.uuid, rp.name, rp.parent)
    if found.get("parent_provider_uuid") != rp.parent:
        LOG.error("host %s: provider %s (%s) is under %s, not under %s; delete it so that the "
                  "agent can create it again", host.name, rp.name, rp.uuid,
                  found.get("parent_provider_uuid"), rp.parent)
        return False
    current = set(placement.provider_part(rp.uuid, "traits"))
    traits = {t for t in current if not t.startswith(nd.OWNED_TRAIT_PREFIXES)} | rp.traits
    if traits != current:
        placement.set_traits(rp.uuid, sorted(traits))
    return _sync_device_inventories(placement, host, rp.uuid, rp.inventories)


def _sync_device_inventories(placement: PlacementClient, host: HostConfig, uuid: str,
                             wanted: Mapping[str, Mapping[str, Any]]) -> bool:
    """`wanted`, plus each class it drops that is still allocated, kept with reserved = total;
    False when one was kept (a later report drops it once free)."""
    current = placement.provider_part(uuid, "inventories")
    dropped = set(current) - set(wanted)
    inventories = dict(wanted)
    if dropped:
        used = placement.usages(uuid)
        for rc in sorted(rc for rc in dropped if used.get(rc, 0) > 0):
            kept = {k: current[rc][k] for k in _INVENTORY_FIELDS}
            inventories[rc] = {**kept, "reserved": kept["total"]}
            LOG.warning("host %s: %s on provider %s is no longer configured but %d is "
                        "allocated; kept, all reserved, until it is released", host.name, rc,
                        uuid, used[rc])
    _sync_inventories(placement, uuid, inventories, current)
    return inventories.keys() == wanted.keys()


def _remove_unconfigured(placement: PlacementClient, host: HostConfig, node_uuid: str,
                         wanted: set[str]) -> bool:
    """Delete the agent's providers that the configuration no longer names, devices first;
    False when one had to stay (allocated, or not deleted)."""
    tree = placement.providers(in_tree=node_uuid)
    stale = [rp for rp in tree if rp["uuid"] not in wanted and rp["uuid"] != node_uuid
             and nd.is_agent_owned(rp["name"], host.name)]
    parents = {rp["uuid"]: rp["parent_provider_uuid"] for rp in tree}
    removed = 0
    for rp in sorted(stale, key=lambda rp: rp["parent_provider_uuid"] == node_uuid):
        uuid = rp["uuid"]
        if uuid in parents.values():
            continue  # an agent provider whose device provider was kept
        try:
            if placement.provider_allocations(uuid):
                LOG.warning("host %s: provider %s is no longer configured but holds "
                            "allocations; kept, its inventory reserved, until they are "
                            "released", host.name, rp["name"])
                _sync_device_inventories(placement, host, uuid, {})
                continue
            placement.delete_provider(uuid)
        except PlacementError as exc:
            LOG.warning("host %s: cannot remove provider %s: %s", host.name, rp["name"], exc)
            continue
        LOG.info("host %s: removed provider %s, no longer configured", host.name, rp["name"])
        del parents[uuid]
        removed += 1
    return removed == len(stale)


def delete_tree(placement: PlacementClient, root_uuid: str) -> None:
    """Delete a compute node's provider and every provider under it, children first.

    Placement refuses to delete a provider with children, and a host with
    network devices has some. Raises PlacementError (e.g. allocations remain).
    """
    tree = placement.providers(in_tree=root_uuid)
    parents = {rp["uuid"]: rp["parent_provider_uuid"] for rp in tree}

    def depth(uuid: str) -> int:
        n = 0
        while parents.get(uuid):
            uuid, n = parents[uuid], n + 1
        return n

    for uuid in sorted(parents, key=depth, reverse=True):
        placement.delete_provider(uuid)


def set_status_trait(placement: PlacementClient, provider_uuid: str, disabled: bool) -> None:
    """COMPUTE_STATUS_DISABLED on (or off) a compute node's provider, other traits kept."""
    if placement.provider(provider_uuid) is None:
        return
    if disabled:
        _sync_set(placement, provider_uuid, "traits", {DISABLED_TRAIT})
    else:
        _sync_set(placement, provider_uuid, "traits", set(), drop={DISABLED_TRAIT})


def _sync_inventories(placement: PlacementClient, uuid: str,
                      wanted: Mapping[str, Mapping[str, Any]],
                      current: Mapping[str, Any] | None = None) -> None:
    if current is None:
        current = placement.provider_part(uuid, "inventories")
    seen = {rc: {k: inv[k] for k in _INVENTORY_FIELDS} for rc, inv in current.items()}
    if seen != {rc: dict(inv) for rc, inv in wanted.items()}:
        placement.set_inventories(uuid, wanted)


def _sync_set(placement: PlacementClient, uuid: str, what: str, add: Iterable[str],
              drop: Iterable[str] = ()) -> None:
    """Add and drop members of a provider's traits or aggregates, leaving the others."""
    if what == "aggregates":
        # Compare-and-swap per generation: the aggregates os-aggregates mirrors onto
        # the node provider in between are kept (Nova's tracker does not manage them).
        placement.change_aggregates(uuid, add=sorted(set(add)), drop=sorted(set(drop)))
        return
    current = set(placement.provider_part(uuid, what))
    wanted = (current | set(add)) - set(drop)
    if wanted != current:
        placement.set_traits(uuid, sorted(wanted))


def usage(placement: PlacementClient, providers: HostProviders,
          reconciled: Reconciled | None = None) -> dict[str, int]:
    """What Placement says is used here: class -> amount (DISK_GB from the sharing provider).

    Summed from the allocations `reconciled` read when it changed none (a
    provider's usages are the sum of its allocations), else asked again.
    """
    if reconciled is not None and not (reconciled.healed or reconciled.removed):
        used = summed(reconciled.held[providers.root])
        if providers.sharing is not None:
            used["DISK_GB"] = summed(reconciled.held[providers.sharing]).get("DISK_GB", 0)
        return used
    used = dict(placement.usages(providers.root))
    if providers.sharing is not None:
        used["DISK_GB"] = placement.usages(providers.sharing).get("DISK_GB", 0)
    return used


@dataclass
class Reconciled:
    # provider -> consumer -> class -> amount, as read before healing and removing
    held: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    healed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)


def reconcile(placement: PlacementClient, db: Database, host: HostConfig,
              providers: HostProviders) -> Reconciled:
    """One read of each provider's allocations serves the heal, the removal and `usage`:
    an idle host costs Placement one request per provider and period, not one per
    instance (10,000 hosts: bench/scale.py, docs/scale.md)."""
    result = Reconciled({rp: placement.provider_allocations(rp) for rp in providers.all})
    holders = {consumer for consumers in result.held.values() for consumer in consumers}
    result.healed = _heal(placement, db, host, providers, holders)
    result.removed = _remove_finished(placement, db, holders)
    return result


def _eligible(db: Database, host: str, uuids: Iterable[str] | None = None) -> dict[str, Any]:
    """Live instances of `host` that should hold allocations here now: uuid -> instance.

    Not while building (the conductor claims), deleting, moving (a
    migration consumer owns part of the allocations), or offloading (shelve
    drops the allocation before the records let go of the host).
    """
    with db.read() as conn:
        live = instances.list_instances(conn, host=host,
                                        uuids=None if uuids is None else list(uuids))
        moving = {m.instance_uuid for m in migrations.in_progress(conn)}
    return {i.uuid: i for i in live
            if i.vm_state not in (states.BUILDING, states.DELETED)
            and i.vm_state != states.SHELVED_OFFLOADED
            and i.task_state not in (states.TASK.DELETING, states.TASK.SHELVING_OFFLOADING)
            and i.uuid not in moving}


def _heal(placement: PlacementClient, db: Database, host: HostConfig,
          providers: HostProviders, holders: set[str]) -> list[str]:
    missing = {}
    for uuid in _eligible(db, host.name):
        if uuid in holders:
            continue
        holding = placement.holding(uuid)  # what it holds elsewhere is kept by the heal
        if not any(rp in holding.allocations for rp in providers.all):
            missing[uuid] = holding
    if not missing:
        return []
    # Look again: a move or a delete that began meanwhile owns these allocations now.
    still = _eligible(db, host.name, missing)
    root_inv, shared_inv = inventories(host)
    offered = set(root_inv) | set(shared_inv)
    healed = []
    for uuid, inst in still.items():
        holding = missing[uuid]
        wanted = placement_request(inst.flavor, inst.volume_backed).groups[""].resources
        amounts = {rc: n for rc, n in wanted.items() if rc in offered and n > 0}
        if not amounts:
            continue
        allocations = {rp: dict(res) for rp, res in holding.allocations.items()}
        for rc, n in amounts.items():
            target = providers.sharing if rc == "DISK_GB" and providers.sharing else providers.root
            allocations.setdefault(target, {})[rc] = n
        try:
            placement.claim(uuid, allocations, inst.project_id, inst.user_id, holding.generation)
        except PlacementError as exc:
            LOG.warning("host %s: cannot heal allocation of instance %s: %s", host.name, uuid,
                        exc)
            continue
        LOG.info("host %s: healed allocation of instance %s: %s", host.name, uuid, allocations)
        healed.append(uuid)
    return healed


def _remove_finished(placement: PlacementClient, db: Database,
                     consumers: set[str]) -> list[str]:
    if not consumers:
        return []
    with db.read() as conn:
        dead = {i.uuid for i in instances.list_instances(conn, read_deleted=True,
                                                         uuids=sorted(consumers))
                if i.deleted}
        finished = migrations.list_migrations(
            conn, where=[t.migrations.c.uuid.in_(sorted(consumers)),
                         t.migrations.c.status.in_(migrations.FINAL_STATUSES),
                         # an evacuation `done` holds a dead source until its agent cleans
                         # up, unless its server was deleted (then it owns nothing)
                         sa.not_(sa.and_(t.migrations.c.migration_type == "evacuation",
                                         t.migrations.c.status == "done",
                                         t.migrations.c.deleted == 0))])
        # A migration ended by the API (a live migration aborted while `preparing`) whose
        # operation still runs: its rollback gives the allocation back to the instance.
        busy = {i.uuid for i in instances.list_instances(
            conn, uuids=sorted({m.instance_uuid for m in finished})) if i.task_state}
        done = {m.uuid for m in finished if m.instance_uuid not in busy}
    removed = []
    for consumer in sorted(dead | done):
        placement.delete_allocations(consumer)
        LOG.info("removed allocations of %s %s", "instance" if consumer in dead else
                 "migration", consumer)
        removed.append(consumer)
    return removed
