"""Moves in progress, each showing who owns what where.

A move has two consumers in Placement (docs/moves.md): the migration holds
the old flavor on the source, the instance its (new) flavor on the
destination. For each migration not yet final the dashboard shows both
holdings by provider, the step of the conductor's journal the instance's
operation is at, the time since the move started, a live migration's copied
bytes and the instance's last fault. Moves in progress are few even in a
large cloud; they are all shown.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.compute import instances, migrations
from stowage.compute import tables as t
from stowage.compute.conductor.tasks import ACCEPTED, END
from stowage.placement import allocations, providers
from stowage.timeutil import utcnow
from stowage.web.dashboard.servers import server_view
from stowage.web.dashboard.world import World

__all__ = ["moves_in_progress"]

_J = t.operation_steps


def moves_in_progress(world: World) -> dict[str, Any]:
    found = []
    for _, db in world.cell_dbs():
        with db.read() as conn:
            moving = migrations.in_progress(conn)
            uuids = [m.instance_uuid for m in moving]
            records = {i.uuid: i for i in instances.list_instances(conn, uuids=uuids)}
            faults = instances.latest_faults(conn, uuids) if uuids else {}
            steps = _steps(conn, uuids)
        for mig in moving:
            inst = records.get(mig.instance_uuid)
            found.append({**_migration(mig), "step": steps.get(mig.instance_uuid),
                          "server": None if inst is None
                          else server_view(inst, faults.get(inst.uuid))})
    _holdings(world, found)
    found.sort(key=lambda m: m["created"] or "", reverse=True)
    return {"moves": found}


def _migration(mig: migrations.Migration) -> dict[str, Any]:
    elapsed = (utcnow() - mig.created_at).total_seconds() if mig.created_at else None
    return {
        "uuid": mig.uuid, "type": mig.migration_type, "status": mig.status,
        "source": mig.source_compute, "dest": mig.dest_compute,
        "created": mig.created_at.isoformat() if mig.created_at else None,
        "elapsed": None if elapsed is None else round(max(elapsed, 0.0), 1),
        "progress": {"memory_total": mig.memory_total, "memory_processed": mig.memory_processed,
                     "memory_remaining": mig.memory_remaining, "disk_total": mig.disk_total,
                     "disk_processed": mig.disk_processed,
                     "disk_remaining": mig.disk_remaining},
    }


def _steps(conn: Connection, uuids: list[str]) -> dict[str, dict[str, Any]]:
    """instance -> where its newest operation is: the last step the journal recorded
    (and its state), and whether the operation has ended."""
    if not uuids:
        return {}
    # SELECT * FROM operation_steps WHERE instance_uuid IN (:uuids) ORDER BY id
    rows = conn.execute(sa.select(_J).where(_J.c.instance_uuid.in_(uuids)).order_by(_J.c.id))
    newest: dict[str, dict[str, Any]] = {}
    for row in rows:
        at = (row.updated_at or row.created_at).isoformat()
        if row.step == ACCEPTED or row.instance_uuid not in newest:
            newest[row.instance_uuid] = {"operation": row.operation, "step": row.step,
                                         "state": row.state, "ended": False, "at": at}
        elif row.step == END:
            newest[row.instance_uuid]["ended"] = True
        else:
            newest[row.instance_uuid].update(step=row.step, state=row.state, at=at)
    return newest


def _holdings(world: World, moves: list[dict[str, Any]]) -> None:
    """Each move's `migration_holds` and `instance_holds`: what each consumer holds, by
    provider (named), read in one transaction."""
    if world.placement_db is None:
        return
    with world.placement_db.read() as conn:
        held = {}
        for move in moves:
            server = move["server"]
            for consumer in (move["uuid"], server["uuid"] if server else None):
                if consumer:
                    held[consumer] = _held(conn, consumer)
        names = providers.get_providers_by_uuid(
            conn, {rp for by_rp in held.values() for rp in by_rp})
    for move in moves:
        server = move["server"]
        move["migration_holds"] = _named(held[move["uuid"]], names)
        move["instance_holds"] = _named(held[server["uuid"]], names) if server else []


def _held(conn: Connection, consumer: str) -> dict[str, dict[str, int]]:
    view = allocations.for_consumer(conn, consumer)
    by_provider: dict[str, dict[str, int]] = {}
    for row in view.rows if view is not None else ():
        by_provider.setdefault(row.provider_uuid, {})[row.resource_class] = row.used
    return by_provider


def _named(by_provider: dict[str, dict[str, int]], names: dict[str, providers.Provider]
           ) -> list[dict[str, Any]]:
    return [{"provider": uuid, "name": names[uuid].name if uuid in names else uuid,
             "resources": dict(sorted(res.items()))}
            for uuid, res in sorted(by_provider.items())]
