"""Network records: create (claiming a segment), read, list, update and delete.

A network is deleted together with its subnets, the ports the service
itself owns (`AUTO_DELETED_OWNERS`, e.g. DHCP ports) and its unassociated
floating IPs; any other port on it makes the delete a 409 NetworkInUse and
nothing changes.
"""

from __future__ import annotations

import dataclasses
import datetime
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.config import NetworkSettings
from stowage.context import RequestContext
from stowage.errors import DomainError
from stowage.network import errors as e
from stowage.network import qos, quotas, segments
from stowage.network import tables as t
from stowage.network.policy import Guard
from stowage.network.segments import Segment
from stowage.network.standard import lock, try_insert, utcnow

__all__ = ["Network", "AUTO_DELETED_OWNERS", "MIN_MTU", "get", "hold", "list_networks", "create",
           "update", "delete", "missing", "target", "parent_target"]

# Ports Neutron deletes along with their network (its AUTO_DELETE_PORT_OWNERS).
AUTO_DELETED_OWNERS = ("network:dhcp", "network:router_ha_interface", "network:distributed")
MIN_MTU = 68
# Segment ids tried per create when concurrent creators take the lowest free ones.
ID_ATTEMPTS = 20
_N = t.networks


@dataclass
class Network:
    id: str
    project_id: str
    name: str
    description: str
    admin_state_up: bool
    shared: bool
    mtu: int
    segment: Segment
    qos_policy_id: str | None
    revision_number: int
    created_at: datetime.datetime
    updated_at: datetime.datetime
    subnet_ids: list[str] = field(default_factory=list)
    status: str = "ACTIVE"
    # Extension external-net: routers' gateways and floating IPs live here.
    external: bool = False


def missing(network_id: str) -> DomainError:
    return e.not_found(e.NETWORK_NOT_FOUND, f"Network {network_id} could not be found.")


def target(network: Network) -> dict[str, object]:
    """What the policy rules see of a network (see `policy.Guard`)."""
    return {"id": network.id, "project_id": network.project_id,
            "tenant_id": network.project_id, "shared": network.shared,
            "router:external": network.external}


def parent_target(conn: Connection, network_id: str) -> dict[str, object]:
    """What the rules see of the network of a port or a subnet being made, read whoever
    may see it (Neutron reads it with an elevated context); 404 if there is none."""
    found = _networks(conn, _N.c.id == network_id)
    if not found:
        raise missing(network_id)
    return {"network:tenant_id": found[0].project_id,
            "network:project_id": found[0].project_id, "shared": found[0].shared}


def _owner(project_id: str) -> dict[str, object]:
    return {"project_id": project_id, "tenant_id": project_id}


def _subnets_of(conn: Connection, network_ids: Sequence[str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {nid: [] for nid in network_ids}
    if not network_ids:
        return found
    s = t.subnets
    rows = conn.execute(sa.select(s.c.id, s.c.network_id)
                        .where(s.c.network_id.in_(list(network_ids)))
                        .order_by(s.c.created_at, s.c.id))
    for row in rows:
        found[row.network_id].append(row.id)
    return found


def _networks(conn: Connection, where: sa.ColumnElement[bool]) -> list[Network]:
    rows = conn.execute(sa.select(_N).where(where).order_by(_N.c.created_at, _N.c.id)).all()
    subnets = _subnets_of(conn, [r.id for r in rows])
    return [Network(r.id, r.project_id, r.name, r.description, bool(r.admin_state_up),
                    bool(r.shared), int(r.mtu),
                    Segment(r.network_type, r.physical_network, r.segmentation_id),
                    r.qos_policy_id, int(r.revision_number), r.created_at, r.updated_at,
                    subnets[r.id], external=bool(r.router_external)) for r in rows]


def _visible(ctx: RequestContext) -> sa.ColumnElement[bool]:
    if ctx.is_admin:
        return sa.true()
    # shared OR router_external OR project_id = :project (Neutron shows external networks
    # to every project: its `get_network` rule has `rule:external`)
    return sa.or_(_N.c.shared.is_(True), _N.c.router_external.is_(True),
                  _N.c.project_id == (ctx.project_id or ""))


def get(conn: Connection, ctx: RequestContext, network_id: str) -> Network:
    found = _networks(conn, sa.and_(_N.c.id == network_id, _visible(ctx)))
    if not found:
        raise missing(network_id)
    return found[0]


def hold(conn: Connection, network_id: str, ctx: RequestContext | None = None) -> Network:
    """The network, share-locked until the caller commits, so that it cannot be
    deleted under a port being written (locks go network, subnets, port).
    With `ctx`, a network the caller cannot see is 404."""
    # SELECT id FROM networks WHERE id = :network [AND <visible>] FOR SHARE
    query = sa.select(_N.c.id).where(_N.c.id == network_id)
    if ctx is not None:
        query = query.where(_visible(ctx))
    if conn.execute(query.with_for_update(read=True)).first() is None:
        raise missing(network_id)
    return _networks(conn, _N.c.id == network_id)[0]


def list_networks(conn: Connection, ctx: RequestContext,
                  ids: Sequence[str] | None = None) -> list[Network]:
    where = _visible(ctx)
    if ids is not None:
        where = sa.and_(where, _N.c.id.in_(list(ids)))
    return _networks(conn, where)


def _mtu(requested: int | None, segment: Segment, settings: NetworkSettings) -> int:
    largest = segments.mtu(segment, settings.global_physnet_mtu)
    if requested is None:
        return largest
    if requested > largest:
        raise e.invalid_input(f"Requested MTU is too big, maximum is {largest}")
    if requested < MIN_MTU:
        raise e.invalid_input(f"Requested MTU is too small, minimum is {MIN_MTU}")
    return requested


def _segment_row(segment: Segment) -> dict[str, Any]:
    return {"network_type": segment.network_type, "physical_network": segment.physical_network,
            "segmentation_id": segment.segmentation_id, "segment_key": segment.key}


def _insert(conn: Connection, ctx: RequestContext, row: dict[str, Any],
            segment: Segment) -> None:
    """Insert the network with its segment; the lowest free id when none was asked for."""
    if not segment.needs_id:
        if not try_insert(conn, _N, {**row, **_segment_row(segment)}):
            qos.check_usable(conn, ctx, row["qos_policy_id"])
            raise segments.in_use_error(segment)
        return
    for _ in range(ID_ATTEMPTS):
        free = segments.free_ids(conn, segment, 1)
        if not free:
            break
        claimed = dataclasses.replace(segment, segmentation_id=free[0])
        if try_insert(conn, _N, {**row, **_segment_row(claimed)}):
            return
        qos.check_usable(conn, ctx, row["qos_policy_id"])
    raise e.StatusError(503, "Unable to create the network. No tenant network is available "
                             "for allocation.", e.NO_NETWORK_AVAILABLE)


def create(conn: Connection, guard: Guard, values: Mapping[str, Any],
           settings: NetworkSettings) -> Network:
    ctx = guard.ctx
    project_id = values.get("project_id") or ctx.project_id or ""
    # The rules first, then the quota, in the create's transaction (as Neutron's API layer).
    guard.check("create_network", {**values, **_owner(project_id)}, values)
    quotas.claim(conn, project_id, "network")
    segment = segments.requested(values, settings.tenant_network_type)
    qos.check_usable(conn, ctx, values.get("qos_policy_id"))
    now = utcnow()
    row = {"id": str(uuid.uuid4()), "project_id": project_id,
           "name": values.get("name", ""), "description": values.get("description", ""),
           "admin_state_up": values.get("admin_state_up", True),
           "shared": values.get("shared", False),
           "mtu": _mtu(values.get("mtu"), segment, settings),
           "qos_policy_id": values.get("qos_policy_id"),
           "router_external": values.get("router:external", False), "revision_number": 0,
           "created_at": now, "updated_at": now}
    _insert(conn, ctx, row, segment)
    return get(conn, ctx, row["id"])


def _owned(conn: Connection, guard: Guard, network_id: str, action: str,
           expected: int | None, values: Mapping[str, Any] | None = None) -> Network:
    """The network, locked, once the rules let the caller do `action` with `values`."""
    network = get(conn, guard.ctx, network_id)
    seen = target(network)
    guard.check(action, {**seen, **(values or {})}, values or (),
                lambda: missing(network_id), seen)
    lock(conn, _N, network_id, expected, lambda: missing(network_id))
    return network


def _check_provider(network: Network, values: Mapping[str, Any]) -> None:
    current = {"provider:network_type": network.segment.network_type,
               "provider:physical_network": network.segment.physical_network,
               "provider:segmentation_id": network.segment.segmentation_id}
    if any(values[k] != v for k, v in current.items() if k in values):
        raise e.invalid_input("Plugin does not support updating provider attributes")


def _check_unsharing(conn: Connection, network: Network) -> None:
    """Neutron keeps a network shared while other projects have ports on it."""
    p = t.ports
    # SELECT id FROM ports WHERE network_id = :network AND project_id != :owner LIMIT 1
    other = conn.execute(sa.select(p.c.id).where(p.c.network_id == network.id,
                                                 p.c.project_id != network.project_id)
                         .limit(1)).first()
    if other is not None:
        raise e.in_use("InvalidSharedSetting", "Unable to reconfigure sharing settings for "
                       f"network {network.id}. Multiple tenants are using it.")


def _check_unexternal(conn: Connection, network: Network) -> None:
    """Neutron keeps a network external while routers' gateways or floating IPs use it."""
    p = t.ports
    # SELECT id FROM ports WHERE network_id = :network AND device_owner IN (...) LIMIT 1
    used = conn.execute(sa.select(p.c.id).where(
        p.c.network_id == network.id,
        p.c.device_owner.in_(["network:router_gateway", "network:floatingip"])).limit(1))
    if used.first() is not None:
        raise e.in_use("ExternalNetworkInUse", f"External network {network.id} cannot be "
                       "updated to be made non-external, since it has existing gateway ports.")


def update(conn: Connection, guard: Guard, network_id: str,
           values: Mapping[str, Any], expected: int | None,
           settings: NetworkSettings) -> Network:
    ctx = guard.ctx
    network = _owned(conn, guard, network_id, "update_network", expected, values)
    _check_provider(network, values)
    if "qos_policy_id" in values:
        qos.check_usable(conn, ctx, values["qos_policy_id"])
    if values.get("shared") is False and network.shared:
        _check_unsharing(conn, network)
    if values.get("router:external") is False and network.external:
        _check_unexternal(conn, network)
    changes = {k: values[k] for k in ("name", "description", "admin_state_up", "shared",
                                      "qos_policy_id") if k in values}
    if "router:external" in values:
        changes["router_external"] = values["router:external"]
    if "mtu" in values:
        changes["mtu"] = _mtu(values["mtu"], network.segment, settings)
    if changes:
        conn.execute(_N.update().where(_N.c.id == network_id).values(**changes))
    return get(conn, ctx, network_id)


def _delete_free_floating_ips(conn: Connection, network_id: str) -> None:
    """Neutron deletes an external network's unassociated floating IPs with it (associated
    ones keep their port, and the network in use)."""
    f = t.floatingips
    free = conn.execute(sa.select(f.c.id, f.c.floating_port_id).where(
        f.c.floating_network_id == network_id, f.c.fixed_port_id.is_(None))).all()
    if free:
        conn.execute(f.delete().where(f.c.id.in_([r.id for r in free])))
        conn.execute(t.ports.delete().where(
            t.ports.c.id.in_([r.floating_port_id for r in free])))


def delete(conn: Connection, guard: Guard, network_id: str,
           expected: int | None) -> None:
    _owned(conn, guard, network_id, "delete_network", expected)
    _delete_free_floating_ips(conn, network_id)
    p = t.ports
    # SELECT id, device_owner FROM ports WHERE network_id = :network
    ports = conn.execute(sa.select(p.c.id, p.c.device_owner)
                         .where(p.c.network_id == network_id)).all()
    if any(port.device_owner not in AUTO_DELETED_OWNERS for port in ports):
        raise e.in_use(e.NETWORK_IN_USE, f"Unable to complete operation on network "
                       f"{network_id}. There are one or more ports still in use on the "
                       "network.")
    if ports:
        conn.execute(t.ip_allocations.delete()
                     .where(t.ip_allocations.c.port_id.in_([r.id for r in ports])))
        conn.execute(p.delete().where(p.c.network_id == network_id))
    conn.execute(t.subnets.delete().where(t.subnets.c.network_id == network_id))
    conn.execute(_N.delete().where(_N.c.id == network_id))
