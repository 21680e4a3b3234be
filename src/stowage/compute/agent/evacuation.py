"""Evacuation steps an agent runs: rebuild on the destination, clean up on a returned source.

The conductor (`conductor/evacuate.py`) owns the order; each step is one
idempotent action on this host that changes nothing when it fails::

    destination  rebuild_claim           claim: PCI devices and the ports' VFs (of the PFs
                                         the conductor names; keyed by the migration),
                                         then the late server group check, recording this
                                         host on the migration (`pre-migrating`); a
                                         refused claim raises RebuildClaimRefused
                                         (alternates may be tried); returns the VFs
                 rebuild_instance        the same claim (again: idempotent), then spawn,
                                         powered off if stopped (the conductor bound the
                                         ports here in between)
                 abort_rebuild_instance  the undo: guest destroyed, claim dropped
    source       clean_evacuated         when the dead host's agent starts again (and when
                                         the conductor finds it back): the guests of
                                         evacuations from here destroyed; a `done` one's
                                         allocation deleted and the migration `completed`;
                                         the guest's VFs are freed here, the ports'
                                         bindings never touched (they point at the
                                         destination already)

Only a `done` evacuation's allocation is deleted here: one still under way
belongs to the conductor, which gives it back if the rebuild fails, or
leaves it `done` for the next cleanup. Deleting before marking `completed`
means a crash in between leaves work the next start redoes harmlessly.
The server of a `done` evacuation may have been deleted while this host was
down: the delete dropped the source allocation and soft-deleted the
migration (Nova's delete and instance_destroy), so here its guest is only
destroyed, and the migration stays `done`, as Nova's
`_destroy_evacuated_instances` leaves it for an instance gone. One whose
server was shelve-offloaded meanwhile holds nothing either (the offload
dropped it): its release deletes nothing and only sets it `completed`, as
Nova's does for an instance that is still there.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from stowage.compute import migrations, server_groups
from stowage.compute import tables as t
from stowage.compute.agent.driver import Driver
from stowage.db import Database
from stowage.placement.client import PlacementClient

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from stowage.compute.agent.pci import ClaimKey, PciTracker
    from stowage.compute.hosts import HostConfig

__all__ = ["EvacuationSteps", "RebuildClaimRefused", "CLEANED_UP", "release_deleted_source"]

LOG = logging.getLogger(__name__)

# Nova's `_destroy_evacuated_instances`: the evacuations whose guest must not run here.
CLEANED_UP = ("accepted", "pre-migrating", "done")


class RebuildClaimRefused(Exception):
    """This host refused the rebuild before touching anything; another host may do it.

    The conductor knows it by name (`evacuate.CLAIM_REFUSED`): only the
    type's name crosses the RPC seam.
    """


class EvacuationSteps:
    """Mixed into `ComputeAgent` (manager.py): RPC entry points of one operation's steps."""

    host: HostConfig
    db: Database
    api_db: Database
    placement: PlacementClient
    driver: Driver
    pci: PciTracker

    if TYPE_CHECKING:  # provided by ComputeAgent
        def terminate_instance(self, instance_uuid: str) -> None:
            ...

        def _save_pci(self) -> None:
            ...

        def _pci_claim(self, key: ClaimKey, flavor: dict[str, Any],
                       vf_ports: dict[str, str] | None = None
                       ) -> AbstractContextManager[dict[str, dict[str, Any]]]:
            ...

    # --- destination --------------------------------------------------------------
    def rebuild_claim(self, instance_uuid: str, migration_uuid: str, flavor: dict[str, Any],
                      vf_ports: dict[str, str] | None = None) -> dict[str, dict[str, Any]]:
        """Claim this host for the evacuated instance (PCI, the ports' VFs, the group check);
        returns each SR-IOV port's VF here, for its binding."""
        with self._rebuild_claim(instance_uuid, migration_uuid, flavor, vf_ports) as vfs:
            return vfs

    def rebuild_instance(self, instance_uuid: str, migration_uuid: str,
                         flavor: dict[str, Any], power_on: bool,
                         vf_ports: dict[str, str] | None = None) -> None:
        """Claim this host for the evacuated instance and spawn its guest here.

        A stopped server's guest is powered off once spawned, as Nova's rebuild
        does. A failure after the claim destroys what was spawned and gives a
        claim made here back.
        """
        with self._rebuild_claim(instance_uuid, migration_uuid, flavor, vf_ports):
            try:
                self.driver.spawn(instance_uuid, flavor)
                if not power_on:
                    self.driver.power_off(instance_uuid)
            except Exception:
                self._destroy_quietly(instance_uuid)
                raise

    @contextmanager
    def _rebuild_claim(self, instance_uuid: str, migration_uuid: str, flavor: dict[str, Any],
                       vf_ports: dict[str, str] | None = None
                       ) -> Iterator[dict[str, dict[str, Any]]]:
        """The PCI and VF claim (`_pci_claim`, keyed by the migration), then the late group
        check recording this host on the migration; a failure of either is
        RebuildClaimRefused (the claim given back), a failure of the step inside passes
        as it is."""
        refused = True
        try:
            with self._pci_claim((instance_uuid, migration_uuid), flavor, vf_ports) as vfs:
                with server_groups.late_check(self.api_db) as check, \
                        self.db.write() as conn:
                    check(conn, instance_uuid, self.host.name)
                    migrations.save(conn, migration_uuid, status="pre-migrating",
                                    dest_compute=self.host.name, dest_node=self.host.name,
                                    dest_host=self.host.name)
                refused = False
                yield vfs
        except Exception as exc:
            if refused:
                raise RebuildClaimRefused(str(exc)) from exc
            raise

    def abort_rebuild_instance(self, instance_uuid: str, migration_uuid: str) -> None:
        """Undo rebuild_instance: the guest gone from here, the claim dropped."""
        self.driver.destroy(instance_uuid)
        self.pci.drop((instance_uuid, migration_uuid))
        self._save_pci()

    def _destroy_quietly(self, instance_uuid: str) -> None:
        try:
            self.driver.destroy(instance_uuid)
        except Exception:
            LOG.exception("host %s: could not destroy the half-rebuilt guest of %s",
                          self.host.name, instance_uuid)

    # --- source ---------------------------------------------------------------------
    def clean_evacuated(self, migration_uuid: str | None = None) -> list[str]:
        """Destroy the guests evacuated away from this host; release `done` evacuations.

        Returns the migrations set `completed`. Idempotent: a second run finds
        them completed and does nothing; a guest that cannot be destroyed
        keeps its migration (and allocation) for the next run.
        """
        completed = []
        for mig in _evacuations_from(self.db, self.host.name, CLEANED_UP, migration_uuid):
            try:
                self.terminate_instance(mig.instance_uuid)
            except Exception:
                LOG.exception("host %s: could not destroy the evacuated guest of %s",
                              self.host.name, mig.instance_uuid)
                continue
            LOG.info("host %s: destroyed the guest of %s, evacuated by %s (%s)",
                     self.host.name, mig.instance_uuid, mig.uuid, mig.status)
            if mig.status != "done":
                continue  # under way: the conductor owns its allocations
            if mig.deleted:
                continue  # its server was deleted: the delete dropped the allocation
            _release(self.db, self.placement, mig)
            completed.append(mig.uuid)
        return completed


def release_deleted_source(db: Database, placement: PlacementClient, host: str) -> list[str]:
    """The source's compute service was deleted: no agent will come back to clean up, so
    its `done` evacuations give the source allocation up now and are `completed`."""
    released = []
    for mig in _evacuations_from(db, host, ("done",)):
        _release(db, placement, mig)
        released.append(mig.uuid)
    return released


def _evacuations_from(db: Database, host: str, statuses: tuple[str, ...],
                      migration_uuid: str | None = None) -> list[migrations.Migration]:
    m = t.migrations
    # SELECT * FROM migrations WHERE source_compute = :host AND migration_type = 'evacuation'
    #   AND status IN (:statuses) [AND uuid = :uuid] ORDER BY id
    where = [m.c.source_compute == host, m.c.migration_type == "evacuation",
             m.c.status.in_(statuses)]
    if migration_uuid is not None:
        where.append(m.c.uuid == migration_uuid)
    with db.read() as conn:
        return migrations.list_migrations(conn, where=where, newest_first=False)


def _release(db: Database, placement: PlacementClient, mig: migrations.Migration) -> None:
    """Delete first, then `completed`: a crash between leaves what the next run redoes."""
    placement.delete_allocations(mig.uuid)
    with db.write() as conn:
        migrations.save(conn, mig.uuid, status="completed")
