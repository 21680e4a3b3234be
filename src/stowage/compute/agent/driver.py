"""The seam between a compute agent and its hypervisor: the `Driver` protocol.

The agent owns the order of things and the host's bookkeeping (PCI claims,
compute node record); a driver only makes guests exist, run, stop, move and
disappear. Every method must be idempotent, because the conductor repeats a
step it is not sure ran, and must change nothing when it raises.

A move touches two drivers (one per host, possibly the same one)::

    source                                   destination
    migrate_disk_and_power_off(dest) ──────> finish_migration(power_on)
                                                 │
    confirm_migration   <── confirm ─────────────┤
    finish_revert_migration <── revert ── destroy (the destination guest)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

__all__ = ["Driver", "GuestNotFound"]


class GuestNotFound(Exception):
    """The hypervisor has no guest for this instance (power and move steps need one)."""


class Driver(Protocol):
    def spawn(self, instance_uuid: str, flavor: Mapping[str, Any]) -> None:
        """Create and start the guest; nothing happens if it already exists."""

    def destroy(self, instance_uuid: str) -> None:
        """Remove the guest and whatever its moves left on this host; unknown is fine."""

    def power_off(self, instance_uuid: str) -> None: ...

    def power_on(self, instance_uuid: str) -> None: ...

    # Guest actions: each needs the guest and leaves it in its power state (idempotent).
    def reboot(self, instance_uuid: str, hard: bool) -> None:
        """Restart the guest; a hard reboot also starts one that is off, paused or suspended."""

    def rebuild(self, instance_uuid: str, flavor: Mapping[str, Any], power_on: bool,
                preserve_ephemeral: bool) -> None:
        """Recreate the guest from its image (created anew if it was gone)."""

    def pause(self, instance_uuid: str) -> None: ...

    def unpause(self, instance_uuid: str) -> None: ...

    def suspend(self, instance_uuid: str) -> None: ...

    def resume(self, instance_uuid: str) -> None: ...

    def rescue(self, instance_uuid: str, image_ref: str | None) -> None:
        """Boot the guest from a rescue disk (`image_ref`, else its own image), its own
        disk set aside and attached; a guest already rescued is left as it is."""

    def unrescue(self, instance_uuid: str) -> None:
        """Drop the rescue disk and boot the guest's own again (running)."""

    def migrate_disk_and_power_off(self, instance_uuid: str, migration_uuid: str,
                                   dest_host: str, flavor: Mapping[str, Any]) -> None:
        """Source side of a move: stop the guest and set its disks aside for `dest_host`."""

    def finish_migration(self, instance_uuid: str, migration_uuid: str,
                         flavor: Mapping[str, Any], power_on: bool) -> None:
        """Destination side: bring the guest up with `flavor` (powered on if asked)."""

    def confirm_migration(self, instance_uuid: str, migration_uuid: str) -> None:
        """Source side: forget what the move set aside; unknown is fine."""

    def finish_revert_migration(self, instance_uuid: str, migration_uuid: str,
                                power_on: bool) -> None:
        """Source side: bring back the guest the move set aside."""

    def snapshot(self, instance_uuid: str, image_id: str, seconds: float = 0.0) -> bytes:
        """The guest's root disk as the bytes of image `image_id` (createImage, shelve);
        the guest is kept. The conductor stores them in the Image service. `seconds`
        is how long a simulated copy lasts; a real driver takes what it takes."""

    # Live migration (agent/live_migration.py runs them; the conductor orders them).
    def check_can_live_migrate_destination(self, instance_uuid: str,
                                           block_migration: bool | None) -> dict[str, Any]:
        """Destination: can the guest come here? Returns what the source check needs."""

    def check_can_live_migrate_source(self, instance_uuid: str,
                                      dest_check: Mapping[str, Any]) -> None: ...

    def pre_live_migration(self, instance_uuid: str, migration_uuid: str,
                           flavor: Mapping[str, Any]) -> None:
        """Destination: a paused guest ready to receive the memory."""

    def live_migration(self, instance_uuid: str, migration_uuid: str, dest_host: str,
                       memory_bytes: int, disk_bytes: int, seconds: float) -> None:
        """Source: start the copy and return; its progress is polled."""

    def live_migration_progress(self, instance_uuid: str,
                                migration_uuid: str) -> dict[str, Any]:
        """`state` (running, completed, failed, cancelled), `error`, and bytes copied."""

    def live_migration_abort(self, migration_uuid: str) -> bool: ...

    def live_migration_force_complete(self, migration_uuid: str) -> bool: ...

    def post_live_migration(self, instance_uuid: str, migration_uuid: str) -> None:
        """Source: clean up after the guest left."""

    def post_live_migration_at_destination(self, instance_uuid: str,
                                           migration_uuid: str) -> None: ...

    def rollback_live_migration(self, instance_uuid: str, migration_uuid: str) -> None:
        """Source: stop the copy, the guest runs here again."""

    def rollback_live_migration_at_destination(self, instance_uuid: str,
                                               migration_uuid: str) -> None: ...

    def list_instances(self) -> list[str]: ...

    def power_state(self, instance_uuid: str) -> int:
        """Nova's power_state integer; NOSTATE (0) for an unknown guest."""

    def console_output(self, instance_uuid: str) -> list[str]:
        """The guest's serial console log, oldest line first; GuestNotFound without a guest."""

    def diagnostics(self, instance_uuid: str, nics: list[dict[str, Any]],
                    standard: bool) -> dict[str, Any]:
        """The guest's diagnostics: Nova's 2.48 standard fields (`standard`, without
        config_drive) or the driver's own flat dict; `nics` are its ports (port_id, mac)."""

    def inject_network_info(self, instance_uuid: str, vifs: list[dict[str, Any]]) -> None:
        """Give the guest its network configuration (`vifs`: network, mac, ips)."""

    def checkpoint(self, step: str) -> None:
        """Called before a step the agent does itself (e.g. "claim").

        Real drivers do nothing; the simulated one raises an injected fault.
        """
