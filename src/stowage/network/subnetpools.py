"""Subnet pools (extension `subnet_allocation`): records, and subnets' prefixes allocated
from them.

A pool holds prefixes of one IP version (compacted: overlapping or adjacent
prefixes are merged), prefix-length bounds (`min_prefixlen` <=
`default_prefixlen` <= `max_prefixlen`; Neutron's defaults 8/32 for IPv4,
64/128 for IPv6) and flags: `shared` (admins only) and `is_default` (admins
only; one default pool per IP version, held by a unique column so that two
requests cannot both make one). Address scopes are not served
(`address_scope_id` is null).

A subnet created with `subnetpool_id` gets its prefix from the pool: the
first free prefix of `prefixlen` (the pool's default unless given) inside
the pool's prefixes, or the `cidr` asked for if it is free. The pool's row
is locked (its revision bumped) before the free space is computed, so two
allocations from one pool run one after the other and never overlap. A pool
that still has subnets cannot be deleted (409 SubnetPoolInUse); its prefixes
may grow, never shrink.
"""

from __future__ import annotations

import datetime
import ipaddress
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.context import RequestContext
from stowage.errors import DomainError, Invalid
from stowage.network import addresses as a
from stowage.network import errors as e
from stowage.network import quotas
from stowage.network import tables as t
from stowage.network.policy import Guard
from stowage.network.standard import lock, try_insert, utcnow

__all__ = ["Pool", "get", "list_pools", "create", "update", "delete", "allocate", "record",
           "missing", "target", "PREFIX_BOUNDS"]

_P = t.subnetpools
_A = t.subnetpool_allocations
Net = ipaddress.IPv4Network | ipaddress.IPv6Network
# IP version -> (default min_prefixlen, max_prefixlen): Neutron's SubnetPoolHelper.
PREFIX_BOUNDS = {4: (8, 32), 6: (64, 128)}


@dataclass
class Pool:
    id: str
    project_id: str
    name: str
    description: str
    ip_version: int
    prefixes: list[str]
    default_prefixlen: int
    min_prefixlen: int
    max_prefixlen: int
    shared: bool
    is_default: bool
    default_quota: int | None
    revision_number: int
    created_at: datetime.datetime
    updated_at: datetime.datetime


def missing(pool_id: str) -> DomainError:
    return e.not_found("SubnetPoolNotFound", f"Subnet pool {pool_id} could not be found.")


def target(pool: Pool) -> dict[str, object]:
    return {"id": pool.id, "project_id": pool.project_id, "tenant_id": pool.project_id,
            "shared": pool.shared}


def _pools(conn: Connection, where: sa.ColumnElement[bool]) -> list[Pool]:
    rows = conn.execute(sa.select(_P).where(where).order_by(_P.c.created_at, _P.c.id))
    return [Pool(r.id, r.project_id, r.name, r.description, int(r.ip_version),
                 list(r.prefixes), int(r.default_prefixlen), int(r.min_prefixlen),
                 int(r.max_prefixlen), bool(r.shared), r.default_key is not None,
                 r.default_quota, int(r.revision_number), r.created_at, r.updated_at)
            for r in rows]


def _visible(ctx: RequestContext) -> sa.ColumnElement[bool]:
    if ctx.is_admin:
        return sa.true()
    return sa.or_(_P.c.shared.is_(True), _P.c.project_id == (ctx.project_id or ""))


def get(conn: Connection, ctx: RequestContext, pool_id: str) -> Pool:
    found = _pools(conn, sa.and_(_P.c.id == pool_id, _visible(ctx)))
    if not found:
        raise missing(pool_id)
    return found[0]


def list_pools(conn: Connection, ctx: RequestContext,
               ids: Sequence[str] | None = None) -> list[Pool]:
    where = _visible(ctx)
    if ids:
        where = sa.and_(where, _P.c.id.in_(list(ids)))
    return _pools(conn, where)


def _compact(prefixes: Sequence[str]) -> tuple[int, list[Net]]:
    """The IP version and the merged prefixes; 400 for none or mixed versions."""
    if not prefixes:
        raise Invalid("Empty subnet pool prefix list.", "EmptySubnetPoolPrefixList")
    nets = [ipaddress.ip_network(p, strict=False) for p in prefixes]
    if len({n.version for n in nets}) > 1:
        raise Invalid("Cannot mix IPv4 and IPv6 prefixes in a subnet pool.",
                      "PrefixVersionMismatch")
    merged: list[Net] = list(ipaddress.collapse_addresses(nets))  # type: ignore[type-var]
    return nets[0].version, merged


def _bounds_error(kind: str, value: int, base_kind: str, base: int) -> Invalid:
    return Invalid(f"Illegal prefix bounds: {kind}={value}, {base_kind}={base}.",
                   "IllegalSubnetPoolPrefixBounds")


def _bounds(version: int, values: Mapping[str, Any],
            current: Pool | None = None) -> tuple[int, int, int]:
    """min, max and default prefix lengths checked as Neutron's SubnetPoolHelper does."""
    low_default, top = PREFIX_BOUNDS[version]
    low = values.get("min_prefixlen", current.min_prefixlen if current else low_default)
    high = values.get("max_prefixlen", current.max_prefixlen if current else top)
    default = values.get("default_prefixlen",
                         current.default_prefixlen if current else low)
    if low < 0:
        raise Invalid(f"Prefix '{low}' not supported in IPv4 pool.",
                      "UnsupportedMinSubnetPoolPrefix")
    if low > high:
        raise _bounds_error("min_prefixlen", low, "max_prefixlen", high)
    if high > top:
        raise _bounds_error("max_prefixlen", high, "ip_version_max", top)
    if default < low:
        raise _bounds_error("default_prefixlen", default, "min_prefixlen", low)
    if default > high:
        raise _bounds_error("default_prefixlen", default, "max_prefixlen", high)
    return low, high, default


def _attributes(values: Mapping[str, Any]) -> list[str]:
    """The attributes with a rule of their own that the request sets (is_default, shared:
    sending them false needs no admin)."""
    return [k for k in ("shared", "is_default") if values.get(k)]


def _default_key(conn: Connection, version: int, is_default: bool,
                 pool_id: str) -> int | None:
    if not is_default:
        return None
    taken = conn.execute(sa.select(_P.c.id).where(_P.c.default_key == version,
                                                  _P.c.id != pool_id)).first()
    if taken is not None:
        raise _default_taken()
    return version


def _default_taken() -> Invalid:
    return Invalid("Invalid input for operation: A default subnetpool for this IP family "
                   "has already been set. Only one default may exist per IP family.",
                   e.INVALID_INPUT)


def create(conn: Connection, guard: Guard, values: Mapping[str, Any]) -> Pool:
    ctx = guard.ctx
    project_id = values.get("project_id") or ctx.project_id or ""
    guard.check("create_subnetpool", {**values, "project_id": project_id,
                                      "tenant_id": project_id}, _attributes(values))
    quotas.claim(conn, project_id, "subnetpool")
    version, prefixes = _compact(values["prefixes"])
    low, high, default = _bounds(version, values)
    now, pool_id = utcnow(), str(uuid.uuid4())
    row = {"id": pool_id, "project_id": project_id, "name": values.get("name", ""),
           "description": values.get("description", ""), "ip_version": version,
           "prefixes": [str(p) for p in prefixes], "default_prefixlen": default,
           "min_prefixlen": low, "max_prefixlen": high,
           "shared": values.get("shared", False), "default_quota": values.get("default_quota"),
           "default_key": _default_key(conn, version, values.get("is_default", False),
                                       pool_id),
           "revision_number": 0, "created_at": now, "updated_at": now}
    if not try_insert(conn, _P, row):
        raise _default_taken()
    return get(conn, ctx, pool_id)


def _locked(conn: Connection, guard: Guard, pool_id: str, action: str,
            expected: int | None, values: Mapping[str, Any] | None = None) -> Pool:
    pool = get(conn, guard.ctx, pool_id)
    seen = target(pool)
    guard.check(action, {**seen, **(values or {})}, _attributes(values or {}),
                lambda: missing(pool_id), seen)
    lock(conn, _P, pool_id, expected, lambda: missing(pool_id))
    return pool


def update(conn: Connection, guard: Guard, pool_id: str, values: Mapping[str, Any],
           expected: int | None) -> Pool:
    pool = _locked(conn, guard, pool_id, "update_subnetpool", expected, values)
    changes = {k: values[k] for k in ("name", "description", "default_quota") if k in values}
    if "prefixes" in values:
        version, prefixes = _compact(values["prefixes"])
        old = [ipaddress.ip_network(p) for p in pool.prefixes]
        if version != pool.ip_version or not all(
                any(o.subnet_of(n) for n in prefixes) for o in old):  # type: ignore[arg-type]
            raise Invalid("Illegal update to prefixes: Existing prefixes must be a subset "
                          "of the new prefixes.", "IllegalSubnetPoolPrefixUpdate")
        changes["prefixes"] = [str(p) for p in prefixes]
    changes.update(zip(("min_prefixlen", "max_prefixlen", "default_prefixlen"),
                       _bounds(pool.ip_version, values, pool), strict=True))
    if "is_default" in values:
        changes["default_key"] = _default_key(conn, pool.ip_version, values["is_default"],
                                              pool_id)
    try:
        with conn.begin_nested():
            conn.execute(_P.update().where(_P.c.id == pool_id).values(**changes))
    except sa.exc.IntegrityError:
        raise _default_taken() from None
    return get(conn, guard.ctx, pool_id)


def delete(conn: Connection, guard: Guard, pool_id: str, expected: int | None) -> None:
    _locked(conn, guard, pool_id, "delete_subnetpool", expected)
    if conn.execute(sa.select(_A.c.subnet_id).where(_A.c.subnetpool_id == pool_id)
                    .limit(1)).first() is not None:
        raise e.in_use("SubnetPoolInUse", f"Unable to complete operation on subnet pool "
                                          f"{pool_id}. Subnet pool has existing allocations.")
    conn.execute(_P.delete().where(_P.c.id == pool_id))


def _allocated(conn: Connection, pool_id: str) -> list[Net]:
    s = t.subnets
    # SELECT subnets.cidr FROM subnetpool_allocations JOIN subnets ON ... WHERE pool = :id
    rows = conn.execute(sa.select(s.c.cidr).select_from(_A.join(s, s.c.id == _A.c.subnet_id))
                        .where(_A.c.subnetpool_id == pool_id)).scalars()
    return [ipaddress.ip_network(c) for c in rows]


def _free(pool: Pool, taken: Sequence[Net]) -> Iterator[Net]:
    """The pool's free space as prefixes, smallest first (Neutron takes from those)."""
    free: list[Net] = [ipaddress.ip_network(p) for p in pool.prefixes]
    for used in taken:
        rest: list[Net] = []
        for block in free:
            if block.overlaps(used):
                if used.subnet_of(block):  # type: ignore[arg-type]
                    rest.extend(block.address_exclude(used))  # type: ignore[arg-type]
            else:
                rest.append(block)
        free = rest
    return iter(sorted(free, key=lambda n: (-n.prefixlen, n.network_address)))


def _allocation_error(reason: str) -> DomainError:
    return e.in_use("SubnetAllocationError", f"Failed to allocate subnet: {reason}.")


def allocate(conn: Connection, ctx: RequestContext, values: Mapping[str, Any]) -> str:
    """The CIDR of a subnet created from `values["subnetpool_id"]` (with `cidr` or
    `prefixlen`), the pool locked until the caller commits."""
    pool = get(conn, ctx, values["subnetpool_id"])
    if pool.ip_version != values["ip_version"]:
        raise e.bad_request("subnets", f"Cannot allocate IPv{values['ip_version']} subnet "
                                       f"from IPv{pool.ip_version} subnet pool")
    lock(conn, _P, pool.id, None, lambda: missing(pool.id))
    wanted = a.parse_cidr(values["cidr"], pool.ip_version) if values.get("cidr") else None
    length = wanted.prefixlen if wanted else values.get("prefixlen", pool.default_prefixlen)
    if length > pool.max_prefixlen:
        raise Invalid(f"Unable to allocate subnet with prefix length {length}, maximum "
                      f"allowed prefix is {pool.max_prefixlen}.",
                      "MaxPrefixSubnetAllocationError")
    if length < pool.min_prefixlen:
        raise Invalid(f"Unable to allocate subnet with prefix length {length}, minimum "
                      f"allowed prefix is {pool.min_prefixlen}.",
                      "MinPrefixSubnetAllocationError")
    free = list(_free(pool, _allocated(conn, pool.id)))
    if wanted is not None:
        if any(wanted.subnet_of(block) for block in free):  # type: ignore[arg-type]
            return str(wanted)
        raise _allocation_error("Cannot allocate requested subnet from the available set "
                                "of prefixes")
    for block in free:
        if length >= block.prefixlen:
            return str(next(block.subnets(new_prefix=length)))
    raise _allocation_error(f"Insufficient prefix space to allocate subnet size /{length}")


def record(conn: Connection, subnet_id: str, pool_id: str) -> None:
    """Remember that the subnet's prefix came from the pool."""
    conn.execute(_A.insert().values(subnet_id=subnet_id, subnetpool_id=pool_id))
