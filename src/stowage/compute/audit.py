"""The accounting invariants, checked against Placement and the compute records.

1. Every consumer holding an allocation is a live instance or a migration in
   progress.
2. No provider is used beyond its capacity, (total - reserved) x ratio.
3. A migration in a final status owns nothing -- but an evacuation `done`
   owns its source's allocation until the source agent, started again,
   cleans up and sets it `completed`, or its server is deleted (the delete
   drops that allocation and soft-deletes the migration) or shelve-offloaded
   (the offload drops it and names the migration in the instance's
   `migrations.RELEASED_KEY`).
4. A settled instance (active, stopped, shelved or error, with a host, no
   move in progress) holds exactly its flavor and its ports' request groups
   (bandwidth, VFs: `instance_ports.request`), all of it in its host's tree or
   on a sharing provider; an instance in VERIFY_RESIZE holds its new flavor on the
   destination and its migration the old flavor on the source; an evacuated
   one holds its flavor on its new host, and each `done` evacuation's
   migration the flavor on that evacuation's source (the ports' groups count
   on both sides of a move). An instance without a host (shelved and
   offloaded, never scheduled) holds nothing.
5. Given the Network service (`network`): every port a live server's records
   name exists there, and no port is bound (`device_owner` compute:*) to a
   server that is not live -- a port deleted behind the server's back while
   no detach could run, or one a delete or a crash left bound. Both are
   reported, not repaired: detach the port, or unbind or delete it.

`audit()` returns the violations as sentences (empty when all hold). The
tests call it after every operation; `stowage manage placement audit` runs it.
`orphans()` names the consumers that break rule 1 or 3 -- allocations nobody
owns any more, safe to delete (`audit --delete`); the other violations need
a decision (`heal-allocations`, or an operator) and are only reported.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa

from stowage.compute import instance_ports, instances, migrations, port_requests, resources, states
from stowage.compute import tables as t
from stowage.db import Database
from stowage.network.client import NetworkClient
from stowage.placement.client import PlacementClient

__all__ = ["audit", "orphans", "delete_orphans", "node_uuids", "Dbs", "live_instances"]

# States in which a server holds exactly its flavor on its host (a paused, suspended,
# rescued or soft-deleted one keeps it until it is deleted).
_SETTLED = (states.ACTIVE, states.STOPPED, states.SHELVED, states.ERROR, states.PAUSED,
            states.SUSPENDED, states.RESCUED, states.SOFT_DELETED)


def _holdings(placement: PlacementClient, providers: list[dict[str, Any]]
              ) -> dict[str, dict[str, dict[str, int]]]:
    """consumer -> provider -> class -> amount, over every provider."""
    held: dict[str, dict[str, dict[str, int]]] = {}
    for rp in providers:
        for consumer, res in placement.provider_allocations(rp["uuid"]).items():
            held.setdefault(consumer, {})[rp["uuid"]] = res
    return held


def _over_capacity(placement: PlacementClient, rp: Mapping[str, Any]) -> list[str]:
    inventories = placement.provider_part(rp["uuid"], "inventories")
    usages = placement.usages(rp["uuid"])
    problems = []
    for rc, inv in inventories.items():
        capacity = int((inv["total"] - inv["reserved"]) * inv["allocation_ratio"])
        if usages.get(rc, 0) > capacity:
            problems.append(f"provider {rp['name']} uses {usages[rc]} {rc} of {capacity}")
    return problems


# One cell's database, or every cell's: the records are read in each and merged.
Dbs = Database | Sequence[Database]


def _each(db: Dbs) -> Sequence[Database]:
    return [db] if isinstance(db, Database) else db


def node_uuids(db: Dbs) -> dict[str, str]:
    """host name -> compute node uuid (= its root provider)."""
    cn = t.compute_nodes
    found: dict[str, str] = {}
    for one in _each(db):
        with one.read() as conn:
            rows = conn.execute(sa.select(cn.c.host, cn.c.uuid).where(cn.c.deleted == 0))
            found.update((row.host, row.uuid) for row in rows)
    return found


def audit(db: Dbs, placement: PlacementClient,
          network: NetworkClient | None = None) -> list[str]:
    providers = placement.providers()
    held = _holdings(placement, providers)
    problems = [p for rp in providers for p in _over_capacity(placement, rp)]
    live, moves = _known(db)
    in_tree = {rp["uuid"]: rp["root_provider_uuid"] for rp in providers}
    nodes = node_uuids(db)
    rows = _port_rows(db, list(live))
    ports = _port_amounts(rows)
    for consumer, what in _orphans(held, live, moves).items():
        problems.append(f"{consumer} holds {held[consumer]} but is a {what}")
    for inst in live.values():
        problems.extend(_instance_problems(inst, held, moves, in_tree, nodes,
                                           ports.get(inst.uuid, {})))
    if network is not None:
        problems.extend(_port_problems(network, live, rows))
    return problems


PortRows = dict[str, list[instance_ports.InstancePort]]


def _port_rows(db: Dbs, uuids: list[str]) -> PortRows:
    """instance -> its `instance_ports` rows, from every cell."""
    rows: PortRows = {}
    for one in _each(db):
        with one.read() as conn:
            rows.update(instance_ports.of_instances(conn, uuids))
    return rows


def _port_amounts(rows: PortRows) -> dict[str, dict[str, int]]:
    """instance -> what its ports' request groups add to its flavor, by resource class."""
    return {uuid: port_requests.amounts(port_requests.PortRequest.from_json(r.request)
                                        for r in ports if r.request)
            for uuid, ports in rows.items()}


def _port_problems(network: NetworkClient, live: Mapping[str, Any],
                   rows: PortRows) -> list[str]:
    """Rule 5, from one listing of every port (admin: all projects)."""
    listed = network.list_ports()
    known = {str(p["id"]) for p in listed}
    problems = [f"instance {uuid} is bound to port {row.port_id}, which the Network "
                "service does not have"
                for uuid, ports in sorted(rows.items()) for row in ports
                if row.port_id and row.port_id not in known]
    problems += [f"port {p['id']} is bound to server {p['device_id']}, which does not exist"
                 for p in sorted(listed, key=lambda p: str(p["id"]))
                 if str(p.get("device_owner") or "").startswith("compute:")
                 and p.get("device_id") and p["device_id"] not in live]
    return problems


def _orphans(held: Mapping[str, Any], live: Mapping[str, Any],
             moves: Mapping[str, migrations.Migration]) -> dict[str, str]:
    """consumer -> why it may hold nothing: neither a live instance nor a migration under way."""
    found = {}
    for consumer in held:
        move = moves.get(consumer)
        if consumer not in live and (move is None or _over(move, live)):
            found[consumer] = (f"finished migration ({move.status})" if move
                               else "unknown consumer")
    return found


def _over(move: migrations.Migration, live: Mapping[str, Any]) -> bool:
    """Final, and no longer owning anything (rule 3)."""
    inst = live.get(move.instance_uuid)
    released = migrations.released(inst.system_metadata if inst is not None else None)
    return move.finished and not migrations.awaiting_source_cleanup(move, released)


def live_instances(db: Dbs, uuids: list[str] | None = None) -> list[instances.Instance]:
    """Every cell's live instances (those with these uuids, if given)."""
    found: list[instances.Instance] = []
    for one in _each(db):
        with one.read() as conn:
            found += instances.list_instances(conn, uuids=uuids)
    return found


def _known(db: Dbs, uuids: list[str] | None = None
           ) -> tuple[dict[str, Any], dict[str, migrations.Migration]]:
    """Live instances and all migrations (only those with these uuids, if given)."""
    where = [] if uuids is None else [t.migrations.c.uuid.in_(uuids)]
    live = {i.uuid: i for i in live_instances(db, uuids)}
    moves: dict[str, migrations.Migration] = {}
    for one in _each(db):
        with one.read() as conn:
            moves.update((m.uuid, m) for m in migrations.list_migrations(conn, where=where))
    return live, moves


def orphans(db: Dbs, placement: PlacementClient) -> dict[str, str]:
    """Consumers holding allocations that nothing owns (rules 1 and 3): consumer -> why."""
    held = _holdings(placement, placement.providers())
    return _orphans(held, *_known(db))


def delete_orphans(db: Dbs, placement: PlacementClient) -> dict[str, str]:
    """Delete what `orphans()` finds, each one checked again just before.

    The second look keeps a consumer that became known meanwhile (a move
    whose migration was written after the first read) from losing its claim.
    """
    found = orphans(db, placement)
    deleted = {}
    for consumer, why in sorted(found.items()):
        live, moves = _known(db, [consumer])
        if consumer in _orphans({consumer: None}, live, moves):
            placement.delete_allocations(consumer)
            deleted[consumer] = why
    return deleted


def _instance_problems(inst: instances.Instance, held: Mapping[str, Any],
                       moves: Mapping[str, migrations.Migration], in_tree: Mapping[str, str],
                       nodes: Mapping[str, str], ports: Mapping[str, int]) -> list[str]:
    active_moves = [m for m in moves.values() if m.instance_uuid == inst.uuid and not m.finished]
    mine = held.get(inst.uuid, {})
    if inst.host is None:
        return [f"instance {inst.uuid} has no host but holds {mine}"] if mine else []
    if inst.vm_state == states.RESIZED and active_moves:
        move = active_moves[0]
        return (_holds_flavor(inst.uuid, mine, inst.flavor, inst, nodes.get(inst.host), in_tree,
                              ports)
                + _holds_flavor(move.uuid, held.get(move.uuid, {}),
                                inst.old_flavor or inst.flavor, inst,
                                nodes.get(move.source_compute or ""), in_tree, ports))
    if inst.vm_state not in _SETTLED or inst.task_state is not None or active_moves:
        return []
    released = migrations.released(inst.system_metadata)
    evacuated = [m for m in moves.values() if m.instance_uuid == inst.uuid
                 and migrations.awaiting_source_cleanup(m, released)]
    return _holds_flavor(inst.uuid, mine, inst.flavor, inst, nodes.get(inst.host), in_tree,
                         ports) + [
        problem for move in evacuated
        for problem in _holds_flavor(move.uuid, held.get(move.uuid, {}), inst.flavor, inst,
                                     nodes.get(move.source_compute or ""), in_tree, ports)]


def _holds_flavor(consumer: str, by_rp: Mapping[str, Mapping[str, int]],
                  flavor: Mapping[str, Any], inst: instances.Instance, root: str | None,
                  in_tree: Mapping[str, str], ports: Mapping[str, int]) -> list[str]:
    want = resources.placement_request(flavor, inst.volume_backed).amounts()
    for rc, n in ports.items():
        want[rc] = want.get(rc, 0) + n
    have = resources.summed(by_rp)
    problems = []
    if have != want:
        problems.append(f"{consumer} of instance {inst.uuid} holds {have}, flavor and ports "
                        f"need {want}")
    for rp in by_rp:
        if root is not None and in_tree.get(rp) != root and "DISK_GB" not in by_rp[rp]:
            problems.append(f"{consumer} holds on provider {rp} outside its host's tree")
    return problems
