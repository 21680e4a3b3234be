"""Hosts as the dashboard lists them: service state, zone, cell and provider tree.

One page costs the page, not the cloud: the compute nodes and services of
every cell are read as rows (a few columns each, no JSON), filtered and
sorted in memory, and only the page's hosts get their zone, cell mapping
and Placement tree read -- inventories, usages, traits and aggregates of
each provider, through Placement's own domain functions. Sharing providers
(trait MISC_SHARES_VIA_AGGREGATE) are shown under every host of the page
that is in one of their aggregates.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.compute import aggregates as compute_aggregates
from stowage.compute import services
from stowage.compute import tables as t
from stowage.placement import aggregates, inventories, providers, traits, usages
from stowage.placement import tables as pt
from stowage.web.dashboard.paging import BadQuery, Page
from stowage.web.dashboard.world import World

__all__ = ["host_page", "STATES", "SHARING_TRAIT"]

SHARING_TRAIT = "MISC_SHARES_VIA_AGGREGATE"
# The `state` filter's values: what the service row says about the host.
STATES = ("up", "down", "forced_down", "disabled", "enabled")


@dataclass
class _Host:
    name: str
    node: services.ComputeNode
    service: services.Service | None
    cell: str
    up: bool

    @property
    def states(self) -> set[str]:
        service = self.service
        found = {"up" if self.up else "down"}
        if service is not None and service.forced_down:
            found.add("forced_down")
        found.add("disabled" if service is not None and service.disabled else "enabled")
        return found


def _hosts(world: World) -> list[_Host]:
    """Every compute node of every cell, with its service."""
    found = []
    for cell, db in world.cell_dbs():
        with db.read() as conn:
            nodes = services.list_compute_nodes(conn)
            by_host = {s.host: s for s in services.list_services(conn, binary="nova-compute")}
        for node in nodes:
            service = by_host.get(node.host)
            up = service is not None and services.is_up(service, world.settings.compute)
            found.append(_Host(node.host, node, service, cell, up))
    return found


def host_page(world: World, query: Mapping[str, str]) -> dict[str, Any]:
    """The hosts matching `q` (part of the name) and `state`, one page of them."""
    page = Page.of(query)
    text, state = query.get("q", "").strip().lower(), query.get("state", "")
    if state and state not in STATES:
        raise BadQuery(f"state must be one of {', '.join(STATES)}, not {state!r}")
    found = [h for h in _hosts(world)
             if (not text or text in h.name.lower() or text in h.node.hypervisor_hostname.lower())
             and (not state or state in h.states)]
    found.sort(key=lambda h: (h.name, h.node.hypervisor_hostname))
    shown = found[page.offset:page.offset + page.size]
    zones = _zones(world, [h.name for h in shown])
    trees = _trees(world, [h.node.uuid for h in shown])
    counts = _servers(world, [h.name for h in shown])
    views = [_view(h, zones, trees) for h in shown]
    for view in views:
        view["servers"] = counts.get(view["host"], 0)
        view["zone"] = view["zone"] or world.settings.compute.default_availability_zone
    return {"hosts": views, **page.meta(len(found)), "placement": world.placement_db is not None}


def _servers(world: World, hosts: Sequence[str]) -> dict[str, int]:
    """host -> its live servers, for the page's hosts only."""
    if not hosts:
        return {}
    i = t.instances
    counts: dict[str, int] = {}
    for _, db in world.cell_dbs():
        with db.read() as conn:
            # SELECT host, count(*) FROM instances WHERE deleted = 0 AND host IN (:hosts)
            #  GROUP BY host
            for host, count in conn.execute(
                    sa.select(i.c.host, sa.func.count()).where(
                        i.c.deleted == 0, i.c.host.in_(list(hosts))).group_by(i.c.host)):
                counts[str(host)] = counts.get(str(host), 0) + int(count)
    return counts


def _zones(world: World, hosts: Sequence[str]) -> dict[str, str]:
    if world.api_db is None or not hosts:
        return {}
    with world.api_db.read() as conn:
        return compute_aggregates.host_zones(conn, hosts)


def _view(host: _Host, zones: Mapping[str, str], trees: Mapping[str, Any]) -> dict[str, Any]:
    service = host.service
    return {
        "host": host.name, "hypervisor_hostname": host.node.hypervisor_hostname,
        "node_uuid": host.node.uuid, "cell": host.cell,
        "zone": zones.get(host.name) or None, "state": "up" if host.up else "down",
        "forced_down": bool(service and service.forced_down),
        "disabled": bool(service and service.disabled),
        "disabled_reason": service.disabled_reason if service else None,
        "tree": trees.get(host.node.uuid, {}).get("tree"),
        "sharing": trees.get(host.node.uuid, {}).get("sharing", []),
    }


def _trees(world: World, roots: Sequence[str]) -> dict[str, Any]:
    """node uuid -> its provider tree and the sharing providers of its aggregates."""
    if world.placement_db is None or not roots:
        return {}
    out: dict[str, Any] = {}
    with world.placement_db.read() as conn:
        sharing = [_provider(conn, p) for p in _sharing_providers(conn)]
        trees: dict[str, list[dict[str, Any]]] = {}
        for rp in _members(conn, roots):
            trees.setdefault(rp.root_provider_uuid, []).append(_provider(conn, rp))
        for root, members in trees.items():
            tree_aggs = {a for m in members for a in m["aggregates"]}
            out[root] = {"tree": _nest(members),
                         "sharing": [s for s in sharing if tree_aggs & set(s["aggregates"])]}
    return out


def _members(conn: Connection, roots: Sequence[str]) -> list[providers.Provider]:
    """Every provider of the trees rooted at `roots`, in creation order, in one read."""
    rp = pt.resource_providers
    root = rp.alias("root")
    # SELECT rp.id FROM resource_providers rp JOIN resource_providers root
    #   ON rp.root_provider_id = root.id WHERE root.uuid IN (:roots)
    ids = set(conn.execute(sa.select(rp.c.id).join(root, rp.c.root_provider_id == root.c.id)
                           .where(root.c.uuid.in_(list(roots)))).scalars())
    return providers.list_providers(conn, ids=ids) if ids else []


def _sharing_providers(conn: Connection) -> list[providers.Provider]:
    """Providers carrying MISC_SHARES_VIA_AGGREGATE (few in any cloud)."""
    rpt, trait = pt.provider_traits, pt.traits
    # SELECT rpt.resource_provider_id FROM resource_provider_traits rpt
    #   JOIN traits t ON t.id = rpt.trait_id WHERE t.name = 'MISC_SHARES_VIA_AGGREGATE'
    ids = set(conn.execute(sa.select(rpt.c.resource_provider_id)
                           .join(trait, trait.c.id == rpt.c.trait_id)
                           .where(trait.c.name == SHARING_TRAIT)).scalars())
    return providers.list_providers(conn, ids=ids) if ids else []


def _provider(conn: Connection, rp: providers.Provider) -> dict[str, Any]:
    used = usages.for_provider(conn, rp.id)
    return {
        "uuid": rp.uuid, "name": rp.name, "generation": rp.generation,
        "parent": rp.parent_provider_uuid,
        "resources": [{"class": inv.resource_class, "total": inv.total,
                       "reserved": inv.reserved, "allocation_ratio": inv.allocation_ratio,
                       "capacity": inv.capacity, "used": used.get(inv.resource_class, 0)}
                      for inv in inventories.list_inventories(conn, rp.id)],
        "traits": [row.name for row in traits.provider_traits(conn, rp.id)],
        "aggregates": sorted(aggregates.provider_aggregates(conn, rp.id)),
    }


def _nest(members: list[dict[str, Any]]) -> dict[str, Any]:
    """The tree's providers (creation order) as the root with nested `children`."""
    by_uuid = {m["uuid"]: {**m, "children": []} for m in members}
    root = None
    for member in by_uuid.values():
        parent = by_uuid.get(member["parent"] or "")
        if parent is None:
            root = root or member
        else:
            parent["children"].append(member)
    assert root is not None
    return root
