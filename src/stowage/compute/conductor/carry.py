"""A new server carried from the cell the API wrote it in to the cell it will live in.

The API writes every new server into the default cell (cell1): the cell its
host will be in is known only once the scheduler chose one. When the chosen
host is in another cell, or no host was found (the server goes to cell0, as
Nova buries it), the build carries the server's records over:

    journal: carry executing {instance, cell}
    target database: the records copied, the instance hidden      (cell_copy)
    API database:    the instance mapping points at the target   <- the switch
    source database: the records purged (a delete that reached them is kept)
    target database: unhidden; the build's continuation accepted there (its own
                     journal) with a host to build on -- or the delete
    journal: carry done; the continuation (or delete) cast to the target's conductor

Cells that share a database need the mapping flip only. Until the flip the
server is the source's; after it, the target's. So a crash before the flip
leaves a hidden copy that nothing lists (the recovered build replaces or
purges it), and `recover` finishes a carry the flip had reached: source
purged, unhidden, continuation written (its claim dropped: it schedules
again). A DELETE that found the server in the source before the flip is not
lost: the purge sees it under the row's lock and the target deletes the
server instead of building it.
"""

from __future__ import annotations

import json
import logging
import uuid as uuidlib
from dataclasses import dataclass
from typing import Any

from stowage.compute import cell_copy, instances
from stowage.compute import cells as cell_records
from stowage.compute.cells import CellMapping
from stowage.compute.conductor import tasks
from stowage.compute.conductor.common import Ops
from stowage.compute.conductor.tasks import Journal
from stowage.compute.states import TASK
from stowage.errors import NotFound

__all__ = ["target_of", "carry", "bury", "recover", "sweep", "STEP", "CRASH_POINTS"]

LOG = logging.getLogger(__name__)
STEP = "carry"
# Where crash tests stop a carry: journaled, right after the mapping switch, done.
CRASH_POINTS = (f"{STEP}:executing", f"{STEP}:switched", f"{STEP}:done")


def target_of(ops: Ops, uuid: str, choice: dict[str, Any]) -> CellMapping | None:
    """The cell the server must go to before it is built on `choice`'s host; None when
    it is already there."""
    if ops.cells is None or not choice.get("cell_uuid"):
        return None
    if ops.cells.only_compute_cell() is not None:
        return None  # the server was written into the only cell its host can be in
    here = ops.cells.of_instance(uuid)
    if here.uuid == choice["cell_uuid"]:
        return None
    return ops.cells.by_uuid(str(choice["cell_uuid"]))


def carry(ops: Ops, uuid: str, target: CellMapping, journal: Journal,
          choices: list[dict[str, Any]] | None) -> bool:
    """Move the server's records to `target`; True when they went to another database
    (the build goes on there, `choices` its host and alternates), False when only the
    mapping changed (the build goes on here)."""
    assert ops.cells is not None
    journal.record(STEP, "executing", json.dumps({"instance_uuid": uuid,
                                                  "cell": target.uuid}))
    # The build runs in the conductor of the server's (source) cell database.
    apart = ops.cells.database(target).engine is not ops.db.engine
    if apart:
        cell_copy.copy_server(ops.db, ops.cells.database(target), uuid, hidden=True)
    with ops.api_db.write() as conn:
        cell_records.move_instance(conn, uuid, target)
    if ops.hook is not None:
        ops.hook(journal.operation, STEP, "switched")
    settled = _settle(ops, uuid, target, journal.uuid, choices) if apart else None
    journal.record(STEP, "done")
    if settled is not None:
        _cast_next(ops, uuid, settled, choices)
    return apart


def bury(ops: Ops, uuid: str, journal: Journal) -> None:
    """A server no host was found for goes to cell0 (its ERROR and fault with it)."""
    cell0 = None if ops.cells is None else ops.cells.cell0()
    if cell0 is None:
        return
    try:
        carry(ops, uuid, cell0, journal, None)
    except NotFound:
        return  # deleted meanwhile: nothing to keep
    except Exception:  # it stays in ERROR where it is: listed, deletable
        LOG.exception("could not move server %s to %s", uuid, cell0.name)


@dataclass(frozen=True)
class _Settled:
    """How a carry ended in the target: what it accepted there (an operation uuid)."""

    found: bool  # the target holds the copy
    build: str | None = None  # the build's continuation, written now
    delete: str | None = None  # a delete that reached the source during the carry


def _next_uuid(operation_uuid: str, instance_uuid: str, what: str) -> str:
    """The uuid of what the carry of `operation_uuid` accepts in the target (the same
    if written again after a restart)."""
    return str(uuidlib.uuid5(uuidlib.UUID(operation_uuid), f"{instance_uuid}:{what}"))


def _settle(ops: Ops, uuid: str, target: CellMapping, operation_uuid: str,
            choices: list[dict[str, Any]] | None) -> _Settled:
    """The source's records purged (a delete that reached them meanwhile is carried
    over), then in the target: the server shown and what comes next accepted -- the
    delete, or the build's continuation (a compute cell's)."""
    assert ops.cells is not None
    deleting = _purge_source(ops, uuid)
    build, delete = (_next_uuid(operation_uuid, uuid, what) for what in ("build", "delete"))
    with ops.cells.database(target).write() as conn:
        if not cell_copy.show(conn, uuid):
            return _Settled(False)
        if deleting:
            instances.update(conn, uuid, task_state=TASK.DELETING, progress=0)
            if not tasks.exists(conn, delete):
                tasks.accept(conn, "delete", uuid, ops.request_id, operation_uuid=delete)
                return _Settled(True, delete=delete)
        elif target.name != cell_records.CELL0 and not tasks.exists(conn, build):
            args: dict[str, Any] = {"instance_uuids": [uuid]}
            if choices is not None:
                args["selections"] = choices
            tasks.accept(conn, "build", uuid, ops.request_id, operation_uuid=build, **args)
            return _Settled(True, build=build)
    return _Settled(True)


def _purge_source(ops: Ops, uuid: str) -> bool:
    """Hard-delete the source's records; True when a delete had reached them. Looked at
    under the row's lock: a DELETE that found the server here (its mapping not switched
    yet) commits before, and is seen, or after, and finds nothing."""
    with ops.db.write() as conn:
        deleting = cell_copy.being_deleted(conn, uuid)
        cell_copy.delete_records(conn, uuid)
    return deleting


def _cast_next(ops: Ops, uuid: str, settled: _Settled,
               choices: list[dict[str, Any]] | None) -> None:
    assert ops.conductor is not None
    if settled.delete is not None:
        LOG.info("server %s was deleted while it was carried; deleting it there", uuid)
        ops.conductor.delete_instance(uuid, ops.request_id, settled.delete)
    elif settled.build is not None:
        ops.conductor.build_instances([uuid], ops.request_id, settled.build,
                                      selections=choices)


def recover(ops: Ops, uuid: str, operation_uuid: str) -> bool:
    """Finish a carry a crash cut off after the flip; True when the server is no longer
    this database's (the caller leaves it alone)."""
    if ops.cells is None:
        return False
    try:
        target = ops.cells.of_instance(uuid)
    except NotFound:
        return False
    there = ops.cells.database(target)
    if there.engine is ops.db.engine:
        return False
    with there.read() as conn:
        written = tasks.exists(conn, _next_uuid(operation_uuid, uuid, "build"))
    if not written and target.name != cell_records.CELL0:
        ops.placement.delete_allocations(uuid)  # the continuation schedules again
    settled = _settle(ops, uuid, target, operation_uuid, None)
    if settled.found:
        LOG.warning("finished carrying %s to %s after a restart", uuid, target.name)
        _cast_next(ops, uuid, settled, None)
    return True


def sweep(ops: Ops, older_than_seconds: float) -> None:
    """Purge hidden copies this database holds of servers mapped elsewhere: carries a
    crash cut off before the flip (left alone while younger than a lease: a carry may
    be running)."""
    if ops.cells is None:
        return
    for uuid in cell_copy.hidden_before(ops.db, older_than_seconds):
        try:
            cell = ops.cells.of_instance(uuid)
        except NotFound:
            cell = None
        if cell is None or ops.cells.database(cell).engine is not ops.db.engine:
            LOG.warning("purging %s's copy left by a carry that did not finish", uuid)
            cell_copy.purge_server(ops.db, uuid)
