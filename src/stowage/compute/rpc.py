"""The RPC surface of the control plane: who may ask whom for what.

Each class names the remote methods of one worker and how they are sent:
`cast` when the caller does not wait (the API handing work to the conductor),
`call` when the next step needs the answer (the conductor asking an agent to
do one step). Arguments are plain JSON values: uuids, flavor snapshots, dicts.

    API ──cast──> conductor ──call──> scheduler
                      └──────call──> agent on host X (one idempotent step)

Which calls wait the long timeout (`call_long`, Nova's `long_rpc_timeout`)
and not the default one (`rpc_response_timeout`): scheduling, as Nova's
`select_destinations`; and the agent steps in `LONG_AGENT_STEPS`. Nova makes
some of those calls with the long timeout itself (the live migration
pre-checks, `pre_live_migration`) and *casts* the others (spawn, the resize
steps, rebuild, snapshot, unshelve, the live migration's own steps), so they
have no timeout there at all. stowage's conductor waits for every step,
because it, not the agent, decides the next one; waiting the long timeout
keeps a slow but healthy step (a disk copy, an image download) from being
taken for a dead host. Short questions and undo steps keep the default.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stowage.messaging import Transport

__all__ = ["CONDUCTOR", "SCHEDULER", "LONG_AGENT_STEPS", "agent_target", "ConductorAPI",
           "SchedulerAPI", "AgentAPI"]

CONDUCTOR = "conductor"
SCHEDULER = "scheduler"

# Agent steps called with the long timeout (see the module docstring).
LONG_AGENT_STEPS = frozenset({
    # Nova: calls with long_rpc_timeout.
    "check_can_live_migrate_destination", "pre_live_migration",
    # Nova: casts (no timeout); each may copy disks or fetch an image.
    "build_and_run_instance", "prep_resize", "resize_instance", "finish_resize",
    "revert_resize", "finish_revert_resize", "confirm_resize",
    "rebuild_instance", "rebuild_in_place", "snapshot_instance", "shelve_offload_instance",
    "unshelve_instance", "rescue_instance", "live_migration", "post_live_migration",
    "post_live_migration_at_destination",
})


def agent_target(host: str) -> str:
    return f"compute.{host}"


class ConductorAPI:
    """What the Compute API asks of the conductor; every method but `check_attach` and
    `attach_interface` returns at once.

    `operation_uuid` names the journal entry the API wrote when it accepted the
    operation (`tasks.accept`), so a cast lost in a crash is found on restart.
    """

    def __init__(self, transport: Transport) -> None:
        self.transport = transport

    def build_instances(self, instance_uuids: list[str], request_id: str,
                        operation_uuid: str | None = None,
                        selections: list[dict[str, Any]] | None = None) -> None:
        """`selections`: a server carried to its host's cell, built there on them."""
        extra = {} if selections is None else {"selections": selections}
        self.transport.cast(CONDUCTOR, "build_instances", instance_uuids=instance_uuids,
                            request_id=request_id, operation_uuid=operation_uuid, **extra)

    def migrate_server(self, instance_uuid: str, request_id: str,
                       new_flavor: dict[str, Any] | None, host: str | None,
                       operation_uuid: str | None = None, cross_cell: bool = False) -> None:
        """Resize (`new_flavor` given) or cold migrate (`host` optional, admin's choice);
        `cross_cell`: a host of another cell may be chosen."""
        extra = {"cross_cell": True} if cross_cell else {}
        self.transport.cast(CONDUCTOR, "migrate_server", instance_uuid=instance_uuid,
                            request_id=request_id, new_flavor=new_flavor, host=host,
                            operation_uuid=operation_uuid, **extra)

    def cross_cell_resize(self, instance_uuid: str, request_id: str,
                          operation_uuid: str, cell_uuid: str) -> None:
        """The part of a cross-cell move that runs in the target cell (`cell_uuid`: its
        journal is there, while the instance mapping still names the source)."""
        self.transport.cast(CONDUCTOR, "cross_cell_resize", instance_uuid=instance_uuid,
                            request_id=request_id, operation_uuid=operation_uuid,
                            cell_uuid=cell_uuid)

    def confirm_resize(self, instance_uuid: str, migration_uuid: str, request_id: str,
                       operation_uuid: str | None = None) -> None:
        self.transport.cast(CONDUCTOR, "confirm_resize", instance_uuid=instance_uuid,
                            migration_uuid=migration_uuid, request_id=request_id,
                            operation_uuid=operation_uuid)

    def revert_resize(self, instance_uuid: str, migration_uuid: str, request_id: str,
                      operation_uuid: str | None = None) -> None:
        self.transport.cast(CONDUCTOR, "revert_resize", instance_uuid=instance_uuid,
                            migration_uuid=migration_uuid, request_id=request_id,
                            operation_uuid=operation_uuid)

    def power(self, instance_uuid: str, request_id: str, on: bool,
              operation_uuid: str | None = None) -> None:
        self.transport.cast(CONDUCTOR, "power", instance_uuid=instance_uuid,
                            request_id=request_id, on=on, operation_uuid=operation_uuid)

    def guest_action(self, instance_uuid: str, request_id: str, action: str,
                     operation_uuid: str | None = None,
                     args: dict[str, Any] | None = None) -> None:
        """reboot, reboot_hard, pause, unpause, suspend, resume, rescue or unrescue on the
        server's host (`args`: a rescue's image)."""
        self.transport.cast(CONDUCTOR, "guest_action", instance_uuid=instance_uuid,
                            request_id=request_id, action=action,
                            operation_uuid=operation_uuid, **({"args": args} if args else {}))

    def rebuild_server(self, instance_uuid: str, request_id: str, args: dict[str, Any],
                       operation_uuid: str | None = None) -> None:
        """Rebuild in place from the image the API recorded (`args`, conductor/rebuild.py)."""
        self.transport.cast(CONDUCTOR, "rebuild_server", instance_uuid=instance_uuid,
                            request_id=request_id, args=args, operation_uuid=operation_uuid)

    def delete_instance(self, instance_uuid: str, request_id: str,
                        operation_uuid: str | None = None) -> None:
        self.transport.cast(CONDUCTOR, "delete_instance", instance_uuid=instance_uuid,
                            request_id=request_id, operation_uuid=operation_uuid)

    def shelve_server(self, instance_uuid: str, request_id: str, image_id: str | None,
                      operation_uuid: str | None = None) -> None:
        """Power off and snapshot into `image_id` (None: volume-backed); the conductor
        offloads at once too when `shelved_offload_time` is 0 (or volume-backed)."""
        self.transport.cast(CONDUCTOR, "shelve_server", instance_uuid=instance_uuid,
                            request_id=request_id, image_id=image_id,
                            operation_uuid=operation_uuid)

    def snapshot_server(self, instance_uuid: str, request_id: str, image_id: str,
                        operation_uuid: str | None = None,
                        backup: dict[str, Any] | None = None) -> None:
        """createImage (createBackup with `backup`: backup_type, rotation): the root disk
        into `image_id` (conductor/snapshot.py)."""
        self.transport.cast(CONDUCTOR, "snapshot_server", instance_uuid=instance_uuid,
                            request_id=request_id, image_id=image_id,
                            operation_uuid=operation_uuid,
                            **({"backup": backup} if backup else {}))

    def shelve_offload(self, instance_uuid: str, request_id: str,
                       operation_uuid: str | None = None) -> None:
        self.transport.cast(CONDUCTOR, "shelve_offload", instance_uuid=instance_uuid,
                            request_id=request_id, operation_uuid=operation_uuid)

    def unshelve_server(self, instance_uuid: str, request_id: str, host: str | None,
                        operation_uuid: str | None = None) -> None:
        """Power on in place (shelved) or schedule and spawn (offloaded; `host` pins it)."""
        self.transport.cast(CONDUCTOR, "unshelve_server", instance_uuid=instance_uuid,
                            request_id=request_id, host=host, operation_uuid=operation_uuid)

    def evacuate_server(self, instance_uuid: str, migration_uuid: str, request_id: str,
                        host: str | None, operation_uuid: str | None = None) -> None:
        """Rebuild the server of a dead host elsewhere (`host`: the admin's choice)."""
        self.transport.cast(CONDUCTOR, "evacuate_server", instance_uuid=instance_uuid,
                            migration_uuid=migration_uuid, request_id=request_id, host=host,
                            operation_uuid=operation_uuid)

    def live_migrate_instance(self, instance_uuid: str, migration_uuid: str, request_id: str,
                              host: str | None, force: bool, block_migration: bool | None,
                              operation_uuid: str | None = None) -> None:
        """Move a running server (`host`: the admin's choice; `force`: not scheduled).

        A cast at every microversion; before 2.34, where Nova's API calls its conductor,
        the API then waits on the operation's journal (api/server_live_migrate.py)."""
        self.transport.cast(CONDUCTOR, "live_migrate_instance", instance_uuid=instance_uuid,
                            migration_uuid=migration_uuid, request_id=request_id, host=host,
                            force=force, block_migration=block_migration,
                            operation_uuid=operation_uuid)


    def check_attach(self, instance_uuid: str, port_id: str | None, network_id: str | None,
                     request_id: str) -> None:
        """A call: refuse an attach before anything is recorded (see conductor/interfaces)."""
        self.transport.call(CONDUCTOR, "check_attach", instance_uuid=instance_uuid,
                            port_id=port_id, network_id=network_id, request_id=request_id)

    def attach_interface(self, instance_uuid: str, port_row: int, request_id: str,
                         operation_uuid: str | None = None) -> str:
        """The one call: attach the port of `instance_ports` row `port_row` and wait (as
        Nova's API calls the compute service); returns the port id."""
        return str(self.transport.call(CONDUCTOR, "attach_interface",
                                       instance_uuid=instance_uuid, port_row=port_row,
                                       request_id=request_id, operation_uuid=operation_uuid))

    def detach_interface(self, instance_uuid: str, port_id: str, request_id: str,
                         operation_uuid: str | None = None) -> None:
        self.transport.cast(CONDUCTOR, "detach_interface", instance_uuid=instance_uuid,
                            port_id=port_id, request_id=request_id,
                            operation_uuid=operation_uuid)

    def power_update(self, instance_uuid: str, request_id: str, tag: str,
                     operation_uuid: str | None = None) -> None:
        """The power-update external event (conductor/power_update.py)."""
        self.transport.cast(CONDUCTOR, "power_update", instance_uuid=instance_uuid,
                            request_id=request_id, tag=tag, operation_uuid=operation_uuid)


class SchedulerAPI:
    """The scheduler as a conductor asks it: for a move, hosts of the server's own cell
    only (`cell_of` names it: instance uuid -> cell uuid); a build asks for `any_cell`
    (docs/cells.md). No `cell_of`: no cells to keep to."""

    def __init__(self, transport: Transport,
                 cell_of: Callable[[str], str] | None = None) -> None:
        self.transport = transport
        self.cell_of = cell_of

    def select_destinations(self, spec: dict[str, Any], instance_uuids: list[str],
                            any_cell: bool = False) -> list[list[dict[str, Any]]]:
        """Per instance: the claimed selection first, then unclaimed alternates.

        Raises RemoteError("NoValidHost", reason) when nothing fits.
        """
        if self.cell_of is not None and not any_cell:
            spec = {**spec, "cell": self.cell_of(instance_uuids[0])}
        result = self.transport.call_long(SCHEDULER, "select_destinations", spec=spec,
                                          instance_uuids=instance_uuids)
        return list(result)


class AgentAPI:
    """One step on one host; every method is idempotent, keyed by instance/migration uuid."""

    def __init__(self, transport: Transport) -> None:
        self.transport = transport

    def call(self, host: str, method: str, **kwargs: Any) -> Any:
        """The step, waiting the long timeout for LONG_AGENT_STEPS, the default otherwise."""
        if method in LONG_AGENT_STEPS:
            return self.transport.call_long(agent_target(host), method, **kwargs)
        return self.transport.call(agent_target(host), method, **kwargs)
