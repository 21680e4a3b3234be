"""Resize and cold migration to a host of another cell (Nova's cross-cell resize).

Allowed by `compute:servers:resize:cross_cell` (nobody by default). The
source cell's conductor runs the move as any other (migrate.py) until the
scheduler -- free to choose any cell's host, the CrossCellWeigher preferring
the source cell -- picked a host whose cell keeps its records in another
database; then the rest of the move runs in that cell, under its journal:

    source cell's conductor             target cell's conductor
    create_migration (source records)
    claim_destination: the migration
      owns the source, the instance
      the destination (Placement)
    hand_over: the server's records
      copied into the target, hidden,
      with the continuation accepted ──> prep_resize      (destination host; its
    end                                                     alternates, same cell)
                                        snapshot_at_source (an image-backed server:
                                                         an image record of its root)
                                        resize_instance  (source host)
                                        finish_resize    (destination host)
                                        swap: the source's copy hidden, the mapping
                                          -> target, the target's shown: VERIFY_RESIZE
                                          (finish_resize leaves the task resize_finish
                                          so that a failed swap is a failed move)
                                        end

A failure in the target undoes its steps and gives the source allocation
back to the instance as any failed move does; then the target's records
(ERROR or ACTIVE, the fault, the migration `error`, the action's events) are
carried back over the source's copy and the target's are hard-deleted: the
instance mapping never moved. Confirm (resize_end.py, in the target cell)
hard-deletes the source's copy once the source host let the old guest go;
revert carries the records back to the source cell, points the mapping at
it and hard-deletes the target's copy. Either way a later move back to the
first cell finds nothing left there.
"""

from __future__ import annotations

import contextlib
import json
import logging
import uuid as uuidlib
from typing import TYPE_CHECKING, Any

from sqlalchemy.engine import Connection

from stowage.compute import cell_copy, instances, migrations, states
from stowage.compute import cells as cell_records
from stowage.compute.cells import CellMapping
from stowage.compute.conductor import shelve, tasks
from stowage.compute.conductor.common import Ops
from stowage.compute.conductor.tasks import Step
from stowage.compute.instances import UnexpectedTaskState
from stowage.compute.migrations import Migration
from stowage.compute.states import TASK
from stowage.db import Database
from stowage.image import images

if TYPE_CHECKING:
    from stowage.compute.conductor.migrate import Move

__all__ = ["OPERATION", "target_cell", "HandOver", "SnapshotAtSource", "Swap",
           "continuation_of", "carry_back", "forget_source_copy", "source_copy", "snapshots"]

LOG = logging.getLogger(__name__)
# The continuation's operation name in the target cell's journal.
OPERATION = "cross_cell_resize"


def target_cell(ops: Ops, dest: dict[str, Any] | None) -> CellMapping | None:
    """The destination's cell when it keeps its records in another database than the
    server's (the move must be handed over); None otherwise."""
    if ops.cells is None or dest is None or not dest.get("cell_uuid"):
        return None
    cell = ops.cells.by_uuid(str(dest["cell_uuid"]))
    return None if ops.cells.database(cell).engine is ops.db.engine else cell


def continuation_of(operation_uuid: str) -> str:
    """The uuid of the target's part of the move (the same if written again)."""
    return str(uuidlib.uuid5(uuidlib.UUID(operation_uuid), OPERATION))


class HandOver(Step):
    """The server's records (migration included) copied into the target cell hidden, with
    the move's continuation accepted there in the same transaction; then cast to it."""

    name = "hand_over"

    def __init__(self, move: Move, target: CellMapping, operation_uuid: str) -> None:
        self.move, self.target, self.operation_uuid = move, target, operation_uuid

    def journal_detail(self) -> str:
        return json.dumps({"cell": self.target.uuid})

    def execute(self) -> None:
        m = self.move
        ops = m.ops
        assert ops.cells is not None and m.dest is not None
        args = {"migration_uuid": m.migration.uuid, "new_flavor": m.new_flavor,
                "source_operation": self.operation_uuid,
                "selections": [m.dest, *m.selections]}
        continuation = continuation_of(self.operation_uuid)

        def accept(conn: Connection) -> None:
            tasks.accept(conn, OPERATION, m.instance.uuid, ops.request_id,
                         operation_uuid=continuation, **args)
        with ops.db.write() as conn:  # Nova's Migration.cross_cell_move, copied along
            migrations.save(conn, m.migration.uuid, cross_cell_move=True)
        cell_copy.copy_server(ops.db, ops.cells.database(self.target), m.instance.uuid,
                              hidden=True, then=accept)
        assert ops.conductor is not None
        ops.conductor.cross_cell_resize(m.instance.uuid, ops.request_id, continuation,
                                        self.target.uuid)

    def rollback(self) -> None:
        """Recovery only (nothing runs after this step): the copy a crash left, purged."""
        m = self.move
        assert m.ops.cells is not None
        cell_copy.purge_server(m.ops.cells.database(self.target), m.instance.uuid)


def handed_over(ops: Ops, target: CellMapping, operation_uuid: str) -> bool:
    """The target holds the continuation: the move is the target cell's now."""
    assert ops.cells is not None
    with ops.cells.database(target).read() as conn:
        return tasks.exists(conn, continuation_of(operation_uuid))


def snapshot_id(migration: Migration) -> str:
    """The image the move's snapshot is written to (the same if made again)."""
    return str(uuidlib.uuid5(uuidlib.UUID(migration.uuid), "cross-cell-snapshot"))


class SnapshotAtSource(Step):
    """An image-backed server's root disk becomes an image record the destination spawns
    from (Nova's PrepResizeAtSourceTask); it is deleted once the server runs there, or
    when the move is undone."""

    name = "snapshot_at_source"
    event = "compute_snapshot_instance"

    def __init__(self, move: Move) -> None:
        self.move = move

    def event_host(self) -> str | None:
        return self.move.source_host

    def before(self, conn: Connection) -> None:
        inst, image = self.move.instance, snapshot_id(self.move.migration)
        values = {"id": image, "name": f"{inst.display_name}-cross-cell-resize",
                  "owner": inst.project_id, "visibility": "private",
                  "instance_uuid": inst.uuid, "image_type": "snapshot",
                  "base_image_ref": inst.image_ref or "",
                  "min_disk": int(inst.flavor.get("root_gb") or 0)}
        with self.move.ops.api_db.using(conn, write=True) as api:
            if not images.exists(api, image):
                images.create(api, shelve.IMAGE_SERVICE, values)

    def execute(self) -> None:
        m = self.move
        m.ops.call_agent(m.source_host, "snapshot_instance", instance_uuid=m.instance.uuid,
                         image_id=snapshot_id(m.migration))

    def after(self, conn: Connection) -> None:
        size = int(self.move.instance.flavor.get("root_gb") or 0) * 1024 ** 3
        with self.move.ops.api_db.using(conn, write=True) as api:
            images.record_upload(api, snapshot_id(self.move.migration), shelve.IMAGE_SERVICE,
                                 size)

    def rollback(self) -> None:
        forget_snapshot(self.move.ops, self.move.migration)


def snapshots(move: Move) -> bool:
    """The move snapshots the root disk: an image-backed server's."""
    return not move.instance.volume_backed and bool(move.instance.image_ref)


def forget_snapshot(ops: Ops, migration: Migration) -> None:
    with ops.db.write() as conn:
        shelve.forget_image(ops.api_db, conn, snapshot_id(migration), ops.image_settings)


class Swap(Step):
    """The server moves to this (the target) cell: the source's copy hidden, the instance
    mapping pointed here, this copy shown (with its migration) -- in that order, so the
    server is never listed twice."""

    name = "swap"

    def __init__(self, move: Move) -> None:
        self.move = move

    def execute(self) -> None:
        m = self.move
        ops = m.ops
        assert m.source_db is not None
        cell_copy.set_hidden(m.source_db, m.instance.uuid, True)
        with ops.api_db.write() as conn:
            cell_records.move_instance(conn, m.instance.uuid, _cell_of_db(ops, ops.db))

    def after(self, conn: Connection) -> None:
        """VERIFY_RESIZE, shown here (again, after a restart: the task is checked)."""
        uuid = self.move.instance.uuid
        with contextlib.suppress(UnexpectedTaskState):
            instances.save(conn, uuid, expected_task_state=TASK.RESIZE_FINISH,
                           vm_state=states.RESIZED, task_state=None)
        cell_copy.show(conn, uuid)
        # The destination runs from the snapshot now: it is not kept (as Nova).
        shelve.forget_image(self.move.ops.api_db, conn, snapshot_id(self.move.migration),
                            self.move.ops.image_settings)

    def rollback(self) -> None:
        m = self.move
        ops = m.ops
        assert m.source_db is not None
        with ops.db.write() as conn:
            cell_copy.hide(conn, m.instance.uuid)
        with ops.api_db.write() as conn:
            cell_records.move_instance(conn, m.instance.uuid, _cell_of_db(ops, m.source_db))
        cell_copy.set_hidden(m.source_db, m.instance.uuid, False)


def source_copy(ops: Ops, migration: Migration) -> Database | None:
    """The database of the move's source cell when it is another than this one (the
    source's copy is there); None for a move within one database -- found without a
    read while there is one compute cell (every confirm and revert asks)."""
    if migration.source_compute is None:
        return None
    source = ops.host_db(migration.source_compute)
    return None if source.engine is ops.db.engine else source


def _cell_of_db(ops: Ops, db: Database) -> CellMapping:
    """The compute cell keeping its records in `db` (cells sharing one: the first)."""
    assert ops.cells is not None
    return next(c for c in ops.cells.compute_cells()
                if ops.cells.database(c).engine is db.engine)


def carry_back(ops: Ops, migration: Migration) -> None:
    """The server's records back to the source cell (over its copy there), the mapping
    pointed at it, this cell's copy hard-deleted. Idempotent: a restart runs it again."""
    source = source_copy(ops, migration)
    if source is None:
        return
    uuid = migration.instance_uuid
    with ops.db.write() as conn:
        here = cell_copy.exists(conn, uuid)
        cell_copy.hide(conn, uuid)  # never listed twice: hidden here before shown there
    if here:  # else a crash came after the purge below: the source's copy is complete
        cell_copy.copy_server(ops.db, source, uuid, hidden=True)
        with ops.api_db.write() as conn:
            cell_records.move_instance(conn, uuid, _cell_of_db(ops, source))
    cell_copy.set_hidden(source, uuid, False)
    cell_copy.purge_server(ops.db, uuid)
    LOG.info("server %s is back in its source cell", uuid)


def forget_source_copy(ops: Ops, migration: Migration) -> None:
    """A confirmed cross-cell move: the source cell's (hidden) copy is hard-deleted."""
    source = source_copy(ops, migration)
    if source is None:
        return
    with source.read() as conn:
        if cell_copy.exists(conn, migration.instance_uuid, hidden=False):
            return  # the server is the source's again (never delete a shown copy)
    cell_copy.purge_server(source, migration.instance_uuid)


