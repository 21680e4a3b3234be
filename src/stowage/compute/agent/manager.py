"""The compute agent of one host: registers it, reports it, and runs single steps on it.

The conductor owns every operation and every instance/migration state; the
agent executes one idempotent step when called (`build_and_run_instance`,
`prep_resize`, ...) and, if the step fails, leaves no trace of it. What the
agent owns is the hypervisor (through its driver), the host's PCI claims, its
own service and compute node rows, and the moment a claim becomes real: after
the late check of the server group policy it records the instance on this host
(a build) or this host as the migration's destination (a move). Periodically
it heartbeats, runs the resource tracker (`update_available_resource`) and
puts right records whose guest changed power behind the API's back
(`sync_power_states`, power_sync.py).

Steps of a resize, and on which host they run::

    dest:   prep_resize ─────────────────┐ (PCI claim keyed by the migration)
    source: resize_instance ─────────────┤ (guest powered off, disks set aside)
    dest:   finish_resize ───────────────┘ (guest up with the new flavor)
    then    confirm_resize (source)   or   revert_resize (dest) + finish_revert_resize (source)
    undo:   abort_prep_resize, abort_resize_instance, abort_finish_resize

The simulated driver persists its guests (`guest_store.py`), so an agent that
starts again finds the guests its host had, and `guest_power_state` tells the
conductor's crash recovery what really exists. Guests of instances deleted
while this host was down (the conductor's local delete) are destroyed when
the agent starts and at every periodic run (`reap_deleted`, Nova's
`running_deleted_instance_action = reap`).
"""

from __future__ import annotations

import logging
import time
import uuid as uuidlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from stowage.compute import instances, migrations, server_groups, services, states, upgrade
from stowage.compute.agent import port_devices
from stowage.compute.agent import resource_tracker as rt
from stowage.compute.agent.driver import Driver
from stowage.compute.agent.evacuation import EvacuationSteps
from stowage.compute.agent.external_events import ExternalEvents
from stowage.compute.agent.fault_injection import FaultInjection
from stowage.compute.agent.faults import PREP_RESIZE
from stowage.compute.agent.guest_queries import GuestQueries
from stowage.compute.agent.guest_store import GuestStore
from stowage.compute.agent.live_migration import LiveMigrationSteps
from stowage.compute.agent.network_devices import sriov_vfs
from stowage.compute.agent.pci import ClaimKey, PciClaimFailed, PciTracker
from stowage.compute.agent.power_sync import PowerSync
from stowage.compute.agent.shelving import ShelvingSteps
from stowage.compute.agent.simulated import SimulatedDriver
from stowage.compute.hosts import HostConfig
from stowage.compute.resources import pci_requests
from stowage.compute.rpc import ConductorAPI
from stowage.config import ComputeSettings
from stowage.db import Database
from stowage.db.engine import sides
from stowage.errors import NotFound
from stowage.placement.client import PlacementClient

__all__ = ["ComputeAgent", "InstanceFaultRollback", "PciClaimFailed"]

LOG = logging.getLogger(__name__)


class InstanceFaultRollback(Exception):
    """A step refused before touching the guest: the server goes back to its state."""


class ComputeAgent(LiveMigrationSteps, EvacuationSteps, ShelvingSteps, GuestQueries,
                   ExternalEvents, FaultInjection, PowerSync):
    """One host's agent; `start()` does the I/O, the constructor none."""

    def __init__(self, host: HostConfig, settings: ComputeSettings, db: Database,
                 placement: PlacementClient, driver: Driver | None = None, *,
                 cell_db: Database | None = None,
                 conductor: ConductorAPI | None = None) -> None:
        self.host = host
        self.settings = settings
        # The API database (flavors, request specs, server groups: the late group check)
        # and the host's cell's.
        self.api_db, self.db = sides(db, cell_db)
        self.placement = placement
        # Where the power-state sync sends the stops it asks for (power_sync.py).
        self.conductor = conductor
        self.driver: Driver = (driver if driver is not None else
                               SimulatedDriver(host.name, store=GuestStore(self.db, host.name)))
        self.pci = PciTracker(host.name, host.pci, vfs=sriov_vfs(host))
        # The compute node's uuid (= its resource provider's); known once start() returns.
        self.node_uuid = ""
        self.providers = rt.HostProviders("")
        self._running = False
        # What the last full report made Placement show, and when (see `_report`).
        self._reported: tuple[tuple[HostConfig, bool], float] | None = None

    # --- lifecycle ------------------------------------------------------------
    def start(self) -> None:
        """Register service, compute node and providers, recover guests, report once."""
        host = self.host
        with self.db.write() as conn:
            service = services.ensure_service(
                conn, host.name, services.COMPUTE, host.availability_zone,
                host.service_version if host.service_version is not None
                else upgrade.SERVICE_VERSION)
            services.heartbeat(conn, host.name, services.COMPUTE)
            node = services.compute_node_of_host(conn, host.name)
            self.node_uuid = node.uuid if node is not None else str(uuidlib.uuid4())
            services.ensure_compute_node(conn, self.node_uuid, host.name, service.id,
                                         self._node_values())
        self.providers = rt.providers_of(host, self.node_uuid)
        self._recover()
        self._running = True
        self.update_available_resource()
        self.arm_configured_faults()

    def stop(self) -> None:
        """Stop answering and reporting; the records stay (the service will be seen down)."""
        self._running = False

    def _node_values(self) -> dict[str, Any]:
        host = self.host
        return {"hypervisor_hostname": host.name, "host_ip": host.host_ip,
                "vcpus": host.vcpus, "memory_mb": host.memory_mb, "local_gb": host.disk_gb,
                "cpu_allocation_ratio": host.cpu_allocation_ratio,
                "ram_allocation_ratio": host.ram_allocation_ratio,
                "disk_allocation_ratio": host.disk_allocation_ratio}

    def _recover(self) -> None:
        """Know the host's guests again and rebuild its PCI claims, as after an agent restart.

        The hypervisor outlived the agent: the simulated driver reads back the
        guests (and a move's set-aside ones) it persisted, rather than guessing
        them from the instance records, so the conductor's recovery can ask
        whether a guest is really there. PCI claims are rebuilt from the
        records: the instances this host runs hold their flavor's devices;
        during a move the source keeps the old flavor's and the destination
        holds the new flavor's under the migration's key.
        """
        if isinstance(self.driver, SimulatedDriver):
            self.driver.load()
        with self.db.read() as conn:
            here = instances.list_instances(conn, host=self.host.name)
            moves = migrations.in_progress(conn, host=self.host.name)
            moved = {i.uuid: i for i in instances.list_instances(
                conn, uuids=[m.instance_uuid for m in moves])}
        for inst in here:
            self._reclaim((inst.uuid, ""), inst.flavor)
        port_devices.reclaim_from_allocations(self.pci, self.host, self.placement,
                                              [i.uuid for i in here], moves)
        for mig in moves:
            moving = moved.get(mig.instance_uuid)
            if moving is None or moving.host == self.host.name:
                continue
            if mig.source_compute == self.host.name:
                self._reclaim((moving.uuid, ""), moving.old_flavor or moving.flavor)
            elif mig.dest_compute == self.host.name:
                self._reclaim((moving.uuid, mig.uuid), moving.new_flavor or moving.flavor)
        # Servers evacuated away while this host was down must not run here (evacuation.py),
        # nor servers deleted meanwhile.
        self.clean_evacuated()
        self.reap_deleted()

    def reap_deleted(self) -> list[str]:
        """Destroy what the hypervisor still holds of deleted instances; returns their uuids.

        A server deleted while its host's service was down (the conductor's local
        delete) keeps its guest, and a move's set-aside ones, until this runs
        (Nova's `_cleanup_running_deleted_instances` with action `reap`). Only
        instances whose records are deleted count: a set-aside guest of a live
        instance belongs to its move, and a guest nobody knows is left alone.
        Destroying drops the instance's PCI claims here too. Idempotent; a guest
        that cannot be destroyed is tried again at the next run.
        """
        held = set(self.driver.list_instances())
        if isinstance(self.driver, SimulatedDriver):
            held.update(uuid for uuid, _ in list(self.driver.leftovers))
        if not held:
            return []
        with self.db.read() as conn:
            deleted = sorted(i.uuid for i in instances.list_instances(
                conn, read_deleted=True, uuids=sorted(held)) if i.deleted)
        reaped = []
        for uuid in deleted:
            try:
                self.terminate_instance(uuid)
            except Exception:
                LOG.exception("host %s: could not destroy the guest of deleted instance %s",
                              self.host.name, uuid)
                continue
            LOG.info("host %s: destroyed the guest of deleted instance %s", self.host.name,
                     uuid)
            reaped.append(uuid)
        return reaped

    def _reclaim(self, key: ClaimKey, flavor: dict[str, Any]) -> None:
        try:
            self.pci.claim(key, pci_requests(flavor))
        except PciClaimFailed as exc:
            LOG.error("host %s: cannot recover PCI claim %s: %s", self.host.name, key, exc)

    # --- periodic -------------------------------------------------------------
    @property
    def running(self) -> bool:
        """Started and not stopped: it answers, reports and heartbeats."""
        return self._running

    def heartbeat(self) -> None:
        """This host's alone (the control plane beats all of its hosts together); a
        heartbeat fault skips it."""
        if not self.beats():
            return
        with self.db.write() as conn:
            if not services.heartbeat(conn, self.host.name, services.COMPUTE):
                LOG.warning("host %s: service record deleted; restart the agent to register "
                            "it again", self.host.name)

    def update_available_resource(self) -> None:
        """Report inventory and traits, reconcile allocations, record the node's usage."""
        if not self._running:
            return
        with self.db.read() as conn:
            try:
                service = services.service_by_host(conn, self.host.name, services.COMPUTE)
            except NotFound:
                LOG.warning("host %s: no service record; not reporting", self.host.name)
                return
        self.reap_deleted()
        self._report(service.disabled)
        reconciled = rt.reconcile(self.placement, self.db, self.host, self.providers)
        used = rt.usage(self.placement, self.providers, reconciled)
        reserved = self.host.reserved
        with self.db.write() as conn:
            running = len(instances.list_instances(conn, host=self.host.name))
            services.update_compute_node(
                conn, self.node_uuid, vcpus_used=used.get("VCPU", 0),
                # Nova counts the host's reserved memory and disk as used.
                memory_mb_used=used.get("MEMORY_MB", 0) + reserved.get("MEMORY_MB", 0),
                local_gb_used=used.get("DISK_GB", 0) + reserved.get("DISK_GB", 0),
                running_vms=running, pci_stats=self.pci.stats())

    def _report(self, disabled: bool) -> None:
        """Report the providers when what this host reports changed, or the last full
        report is older than `resource_provider_association_refresh` (0: never again).

        As Nova's report client caches the provider tree: a full report reads
        each provider, its inventories, traits and aggregates (about seven
        requests a host), which at the default period made idle hosts most of
        Placement's load (docs/scale.md). A change made behind the agent's back
        is put right at the next refresh, or at once after `reset_provider_cache`
        (SIGHUP to an agent process, as to nova-compute).
        """
        what = (self.host, disabled)
        refresh = self.settings.resource_provider_association_refresh
        last = self._reported
        if last is not None and last[0] == what and (
                refresh <= 0 or time.monotonic() - last[1] < refresh):
            return
        self._reported = None
        if rt.report(self.placement, self.host, self.providers, disabled):
            self._reported = (what, time.monotonic())

    def reset_provider_cache(self) -> None:
        """Report everything again at the next period (Nova: SIGHUP clears the cache)."""
        self._reported = None

    def sync_service_status(self) -> str:
        """Put COMPUTE_STATUS_DISABLED on the provider iff the service is disabled (API call)."""
        with self.db.read() as conn:
            service = services.service_by_host(conn, self.host.name, services.COMPUTE)
        rt.set_status_trait(self.placement, self.node_uuid, service.disabled)
        return "disabled" if service.disabled else "enabled"

    # --- steps: build, delete, power ------------------------------------------------
    def build_and_run_instance(self, instance_uuid: str, flavor: dict[str, Any],
                               vf_ports: dict[str, str] | None = None
                               ) -> dict[str, dict[str, Any]]:
        """Claim the flavor's PCI devices, the ports' VFs and this host, then spawn.

        Claiming the host records it on the instance after the late check of
        the instance's server group (`_claim_host`). A refused check or a
        failed spawn gives the PCI claims back; the conductor clears the host
        and tries an alternate. Returns each SR-IOV port's VF (`port_devices`),
        for its binding.
        """
        with self._pci_claim((instance_uuid, ""), flavor, vf_ports) as vfs:
            self._claim_host(instance_uuid)
            self.driver.spawn(instance_uuid, flavor)
        return vfs

    def port_devices(self, instance_uuid: str, migration_uuid: str,
                     vf_ports: dict[str, str]) -> dict[str, dict[str, Any]]:
        """The VF each port holds here under (instance, migration), claimed again from the
        PF its provider names if it is missing (idempotent: a binding written again after
        a rollback or a restart names the VF the port really has)."""
        return port_devices.claim(self.pci, self.host, (instance_uuid, migration_uuid), vf_ports)

    def attach_interface(self, instance_uuid: str, port_id: str,
                         vf_provider: str | None = None) -> dict[str, Any]:
        """Plug a port into the running guest (the driver's `attach_interface`); an SR-IOV
        port takes a VF of the PF `vf_provider` names first. Returns the VF's profile part
        ({} without one); a failure gives the VF back. Idempotent."""
        pci = (port_devices.attach(self.pci, self.host, instance_uuid, port_id, vf_provider)
               if vf_provider else {})
        try:
            self.driver.checkpoint("attach_interface")
        except Exception:
            port_devices.detach(self.pci, instance_uuid, port_id)
            raise
        return pci

    def detach_interface(self, instance_uuid: str, port_id: str) -> None:
        """Unplug a port from the guest and give its VF back (idempotent)."""
        self.driver.checkpoint("detach_interface")
        port_devices.detach(self.pci, instance_uuid, port_id)

    def terminate_instance(self, instance_uuid: str) -> None:
        """Destroy the guest and everything it holds here; an unknown guest is fine."""
        self.driver.destroy(instance_uuid)
        self.pci.drop_instance(instance_uuid)
        self._save_pci()

    def power_off_instance(self, instance_uuid: str) -> None:
        self.driver.power_off(instance_uuid)

    def power_on_instance(self, instance_uuid: str) -> None:
        self.driver.power_on(instance_uuid)

    def reboot_instance(self, instance_uuid: str, hard: bool) -> None:
        self.driver.reboot(instance_uuid, hard)

    def pause_instance(self, instance_uuid: str) -> None:
        self.driver.pause(instance_uuid)

    def unpause_instance(self, instance_uuid: str) -> None:
        self.driver.unpause(instance_uuid)

    def suspend_instance(self, instance_uuid: str) -> None:
        self.driver.suspend(instance_uuid)

    def resume_instance(self, instance_uuid: str) -> None:
        self.driver.resume(instance_uuid)

    def rescue_instance(self, instance_uuid: str, image_ref: str | None = None) -> None:
        self.driver.rescue(instance_uuid, image_ref)

    def unrescue_instance(self, instance_uuid: str) -> None:
        self.driver.unrescue(instance_uuid)

    def rebuild_in_place(self, instance_uuid: str, flavor: dict[str, Any], power_on: bool,
                         preserve_ephemeral: bool = False) -> None:
        """Recreate the guest from its (new) image on this host; its claims stay as they are."""
        self.driver.rebuild(instance_uuid, flavor, power_on, preserve_ephemeral)

    def guest_power_state(self, instance_uuid: str) -> int:
        """What the hypervisor says of the guest now: NOSTATE (0) when there is none.

        The conductor's crash recovery asks this to settle an operation a
        crash cut off on what really exists, not on what the records hoped.
        """
        return self.driver.power_state(instance_uuid)

    # --- steps: resize / cold migrate ----------------------------------------------
    def prep_resize(self, instance_uuid: str, migration_uuid: str,
                    new_flavor: dict[str, Any], vf_ports: dict[str, str] | None = None
                    ) -> dict[str, dict[str, Any]]:
        """Destination: claim the new flavor's PCI devices and the ports' VFs under the
        migration's key, then this host as the migration's destination, after the late
        check of the group policy; returns each SR-IOV port's VF here."""
        self.driver.checkpoint(PREP_RESIZE)
        with self._pci_claim((instance_uuid, migration_uuid), new_flavor, vf_ports) as vfs:
            self._claim_destination(instance_uuid, migration_uuid)
        return vfs

    # --- the late check of server group policies ------------------------------------
    def _claim_host(self, instance_uuid: str) -> None:
        """A build's claim becomes real: the instance runs here, if its group allows it.

        The scheduler filtered on a snapshot; members scheduled at the same
        time are only told apart here (Nova's `_validate_instance_group_policy`).
        The check and the write are made under the group's row lock, held until
        the write committed (`late_check`, also with a cell database of its
        own), so it holds across agents in other processes too. A server
        deleted meanwhile (task_state no longer spawning) refuses the claim.
        """
        with server_groups.late_check(self.api_db) as check, self.db.write() as conn:
            check(conn, instance_uuid, self.host.name)
            instances.update(conn, instance_uuid, expected_task_state=states.TASK.SPAWNING,
                             host=self.host.name, node=self.host.name)

    def _claim_destination(self, instance_uuid: str, migration_uuid: str) -> None:
        """A move's claim becomes real: the migration's destination is this host, if allowed."""
        with server_groups.late_check(self.api_db) as check, self.db.write() as conn:
            check(conn, instance_uuid, self.host.name)
            migrations.save(conn, migration_uuid, dest_compute=self.host.name,
                            dest_node=self.host.name, dest_host=self.host.name)

    def abort_prep_resize(self, instance_uuid: str, migration_uuid: str) -> None:
        self.pci.drop((instance_uuid, migration_uuid))
        self._save_pci()

    def resize_instance(self, instance_uuid: str, migration_uuid: str, dest_host: str,
                        new_flavor: dict[str, Any]) -> None:
        """Source: power the guest off and set its disks aside for the destination.

        A local root disk cannot shrink (libvirt's rule): refused before anything
        is touched, as Nova's InstanceFaultRollback, so the server stays as it was.
        """
        with self.db.read() as conn:
            inst = instances.get(conn, instance_uuid)
        old_root = int(inst.flavor.get("root_gb") or 0)
        if not inst.volume_backed and int(new_flavor.get("root_gb") or 0) < old_root:
            raise InstanceFaultRollback("Resize error: Unable to resize disk down.")
        self.driver.migrate_disk_and_power_off(instance_uuid, migration_uuid, dest_host,
                                               new_flavor)

    def abort_resize_instance(self, instance_uuid: str, migration_uuid: str) -> None:
        """Source: bring the set-aside guest back, running unless the instance was stopped."""
        with self.db.read() as conn:
            inst = instances.get(conn, instance_uuid)
        self.driver.finish_revert_migration(instance_uuid, migration_uuid,
                                            power_on=inst.vm_state != states.STOPPED)

    def finish_resize(self, instance_uuid: str, migration_uuid: str,
                      new_flavor: dict[str, Any], power_on: bool) -> None:
        """Destination: guest up with the new flavor.

        The PCI claim made by prep_resize keeps its key: claims belong to the
        instance whatever their key, and confirm_resize drops every other
        claim of the instance on the source.
        """
        self.driver.finish_migration(instance_uuid, migration_uuid, new_flavor, power_on)

    def abort_finish_resize(self, instance_uuid: str, migration_uuid: str) -> None:
        """Destination: undo finish_resize and prep_resize (guest gone, claim dropped)."""
        self._drop_destination(instance_uuid, migration_uuid)

    def confirm_resize(self, instance_uuid: str, migration_uuid: str) -> None:
        """Source: forget the old guest and free the devices it held here."""
        self.driver.confirm_migration(instance_uuid, migration_uuid)
        self.pci.drop_instance(instance_uuid, keep=(instance_uuid, migration_uuid))
        self._save_pci()

    def revert_resize(self, instance_uuid: str, migration_uuid: str) -> None:
        """Destination: destroy the new guest and drop the destination claim."""
        self._drop_destination(instance_uuid, migration_uuid)

    def finish_revert_resize(self, instance_uuid: str, migration_uuid: str,
                             old_flavor: dict[str, Any], power_on: bool) -> None:
        """Source: the old guest runs again; its devices were never given up."""
        self.driver.finish_revert_migration(instance_uuid, migration_uuid, power_on)

    def _drop_destination(self, instance_uuid: str, migration_uuid: str) -> None:
        # On a same-host move the guest here is also the source's: the source
        # step (finish_revert_resize / abort_resize_instance) puts the old one
        # back over it, and destroying would take the set-aside disks too.
        if not self._same_host(migration_uuid):
            self.driver.destroy(instance_uuid)
        self.pci.drop((instance_uuid, migration_uuid))
        self._save_pci()

    def _same_host(self, migration_uuid: str) -> bool:
        with self.db.read() as conn:
            try:
                mig = migrations.get(conn, migration_uuid)
            except NotFound:
                return False
        return mig.source_compute == mig.dest_compute == self.host.name

    @contextmanager
    def _pci_claim(self, key: ClaimKey, flavor: dict[str, Any],
                   vf_ports: dict[str, str] | None = None
                   ) -> Iterator[dict[str, dict[str, Any]]]:
        """Claim the flavor's PCI devices and the ports' VFs for the step inside; a step
        that fails gives claims it created back (those that existed already, a retried
        step's, stay). Yields each SR-IOV port's VF."""
        self.driver.checkpoint("claim")
        had_vfs = bool(self.pci.vfs_held(key))
        created = self.pci.claim(key, pci_requests(flavor))
        try:
            vfs = port_devices.claim(self.pci, self.host, key, vf_ports) if vf_ports else {}
            yield vfs
        except Exception:
            if created or (vf_ports and not had_vfs):
                self.pci.drop(key)
            raise
        finally:
            self._save_pci()

    def _save_pci(self) -> None:
        """Write the PCI counts at once: the scheduler reads them before the next period."""
        if not self.host.pci or not self.node_uuid:
            return
        with self.db.write() as conn:
            services.update_compute_node(conn, self.node_uuid, pci_stats=self.pci.stats())
