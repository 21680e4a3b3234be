"""Live migration steps an agent runs: pre-checks on dest and source, the copy, rollback.

The conductor calls each step on the host that owns it and decides what
comes next (`conductor/live_migrate.py`)::

    dest:   check_can_live_migrate_destination ─┐ (the block migration decided; the
                                                │  SR-IOV ports' VFs claimed)
    source: check_can_live_migrate_source ──────┤
    dest:   pre_live_migration ─────────────────┤ (a paused guest waits for the memory)
    source: live_migration ─────────────────────┤ (the copy starts; polled with
            live_migration_progress, stopped by live_migration_abort, ended early by
            live_migration_force_complete)
    dest:   post_live_migration_at_destination ─┤ (the guest runs here)
    source: post_live_migration ────────────────┘ (what the copy left is dropped)
    undo:   rollback_live_migration_at_destination, rollback_live_migration

`live_migration` returns once the copy started, so no RPC call waits for a
copy: the conductor polls, and abort and force-complete (sent by the API to
the source, as Nova's are) are short calls that only flag the running copy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stowage.compute import instances
from stowage.compute.agent import port_devices
from stowage.compute.agent.driver import Driver
from stowage.compute.agent.pci import PciTracker
from stowage.compute.hosts import HostConfig
from stowage.compute.resources import pci_requests
from stowage.config import ComputeSettings
from stowage.db import Database

__all__ = ["LiveMigrationSteps", "MigrationPreCheckError"]

_MIB, _GIB = 1 << 20, 1 << 30


class MigrationPreCheckError(Exception):
    """This host cannot take part in the live migration (Nova's exception of that name)."""


class LiveMigrationSteps:
    """Mixed into `ComputeAgent` (manager.py): RPC entry points of one operation's steps."""

    host: HostConfig
    settings: ComputeSettings
    db: Database
    driver: Driver
    pci: PciTracker

    if TYPE_CHECKING:
        def _save_pci(self) -> None: ...

    def check_can_live_migrate_destination(self, instance_uuid: str,
                                           block_migration: bool | None,
                                           migration_uuid: str = "",
                                           vf_ports: dict[str, str] | None = None
                                           ) -> dict[str, Any]:
        """Destination: whether the guest can come here; decides `auto` block migration.

        With `vf_ports` (port id -> the PF provider the destination mapping names),
        each SR-IOV port's VF is claimed here under the migration's key, as Nova's
        check claims the PCI devices of the ports; `port_pci` in the answer is
        each VF's part of the destination binding. Idempotent; a failed claim
        changes nothing.
        """
        check = dict(self.driver.check_can_live_migrate_destination(instance_uuid,
                                                                    block_migration))
        if vf_ports:
            check["port_pci"] = port_devices.claim(self.pci, self.host,
                                                   (instance_uuid, migration_uuid), vf_ports)
            self._save_pci()
        return check

    def check_can_live_migrate_source(self, instance_uuid: str,
                                      dest_check: dict[str, Any]) -> None:
        """Source: the guest is here and can leave for the destination that answered.

        A guest with PCI devices cannot move live (the destination would need
        the devices claimed and attached while the guest runs), as libvirt's
        check refuses flavor-based passthrough.
        """
        with self.db.read() as conn:
            inst = instances.get(conn, instance_uuid)
        if pci_requests(inst.flavor):
            raise MigrationPreCheckError(
                "Migration pre-check error: Live migration of an instance with PCI "
                "passthrough devices is not supported.")
        self.driver.check_can_live_migrate_source(instance_uuid, dest_check)

    def pre_live_migration(self, instance_uuid: str, migration_uuid: str) -> None:
        """Destination: a paused guest of the instance's flavor, ready to receive its memory."""
        with self.db.read() as conn:
            inst = instances.get(conn, instance_uuid)
        self.driver.pre_live_migration(instance_uuid, migration_uuid, inst.flavor)

    def live_migration(self, instance_uuid: str, migration_uuid: str, dest_host: str,
                       block_migration: bool) -> None:
        """Source: start copying memory (and the local disks of a block migration)."""
        with self.db.read() as conn:
            inst = instances.get(conn, instance_uuid)
        flavor = inst.flavor
        memory = int(flavor.get("memory_mb") or 0) * _MIB
        local_gb = int(flavor.get("ephemeral_gb") or 0) + (
            0 if inst.volume_backed else int(flavor.get("root_gb") or 0))
        disk = local_gb * _GIB if block_migration else 0
        self.driver.live_migration(instance_uuid, migration_uuid, dest_host, memory, disk,
                                   self.settings.sim_live_migration_seconds)

    def live_migration_progress(self, instance_uuid: str,
                                migration_uuid: str) -> dict[str, Any]:
        return self.driver.live_migration_progress(instance_uuid, migration_uuid)

    def live_migration_abort(self, migration_uuid: str) -> bool:
        """Stop the copy; the conductor sees it stopped and rolls the move back."""
        return self.driver.live_migration_abort(migration_uuid)

    def live_migration_force_complete(self, migration_uuid: str) -> bool:
        return self.driver.live_migration_force_complete(migration_uuid)

    def post_live_migration_at_destination(self, instance_uuid: str,
                                           migration_uuid: str) -> None:
        self.driver.post_live_migration_at_destination(instance_uuid, migration_uuid)

    def post_live_migration(self, instance_uuid: str, migration_uuid: str) -> None:
        """Source: the guest left; the VFs its ports held here go back to their PFs (even
        when the driver's cleanup fails: the guest runs elsewhere)."""
        try:
            self.driver.post_live_migration(instance_uuid, migration_uuid)
        finally:
            self.pci.drop_instance(instance_uuid, keep=(instance_uuid, migration_uuid))
            self._save_pci()

    def rollback_live_migration(self, instance_uuid: str, migration_uuid: str) -> None:
        self.driver.rollback_live_migration(instance_uuid, migration_uuid)

    def rollback_live_migration_at_destination(self, instance_uuid: str,
                                               migration_uuid: str) -> None:
        """Destroy the prepared guest; a PCI claim an agent restart rebuilt under the
        migration's key (manager.py `_recover`) goes with it."""
        self.driver.rollback_live_migration_at_destination(instance_uuid, migration_uuid)
        self.pci.drop((instance_uuid, migration_uuid))
        self._save_pci()
