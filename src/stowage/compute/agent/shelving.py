"""Shelve steps an agent runs: snapshot, offload, spawn on unshelve.

The conductor (`conductor/shelve.py`, `conductor/unshelve.py`) owns the order;
each step here is one idempotent action on this host that changes nothing
when it fails::

    shelve:     power_off_instance (manager.py) ─> snapshot_instance(image)
    offload:    shelve_offload_instance (guest and its PCI claim gone)
    unshelve:   power_on_instance (still shelved here)
                or unshelve_instance on the host the scheduler claimed (offloaded), with
                the ports' VFs from the PFs the conductor names

Placement is not touched here: the conductor drops the allocation on offload,
and the scheduler claims the host on unshelve.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

from stowage.compute.agent.driver import Driver

if TYPE_CHECKING:
    from stowage.compute.agent.pci import PciTracker
    from stowage.config import ComputeSettings

__all__ = ["ShelvingSteps"]


class ShelvingSteps:
    """Mixed into `ComputeAgent` (manager.py): RPC entry points of one operation's steps."""

    driver: Driver
    pci: PciTracker
    settings: ComputeSettings

    if TYPE_CHECKING:  # provided by ComputeAgent
        def build_and_run_instance(self, instance_uuid: str, flavor: dict[str, Any],
                                   vf_ports: dict[str, str] | None = None
                                   ) -> dict[str, dict[str, Any]]:
            ...

        def _save_pci(self) -> None:
            ...

    def snapshot_instance(self, instance_uuid: str, image_id: str) -> str:
        """The guest's root disk (createImage, shelve, a cross-cell move), base64 for the
        RPC's JSON; the conductor stores it as the image's data."""
        disk = self.driver.snapshot(instance_uuid, image_id, self.settings.sim_snapshot_seconds)
        return base64.b64encode(disk).decode()

    def shelve_offload_instance(self, instance_uuid: str) -> None:
        """Remove the shelved guest from this host, and the PCI devices it held here.

        Idempotent: a guest already gone is fine, so a retried offload (or
        one a crash cut off) goes through.
        """
        self.driver.destroy(instance_uuid)
        self.pci.drop_instance(instance_uuid)
        self._save_pci()

    def unshelve_instance(self, instance_uuid: str, flavor: dict[str, Any],
                          image_id: str | None, vf_ports: dict[str, str] | None = None
                          ) -> dict[str, dict[str, Any]]:
        """Spawn the offloaded server here from its shelved image (None: volume-backed).

        As a build: claim the PCI devices and the ports' VFs (of the PFs the
        conductor names), record this host on the instance after the late
        server-group check, spawn; a failure gives the claims back and the
        conductor tries an alternate. Returns each SR-IOV port's VF here.
        """
        return self.build_and_run_instance(instance_uuid, flavor, vf_ports)
