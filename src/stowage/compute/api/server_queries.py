"""The reads the server API needs beyond `instances.py`: listing with Nova's filters, hosts.

No HTTP here: handlers in `servers.py`, `server_actions.py` and the views
call these with a connection. Filters that every backend evaluates the same
way run in SQL; the regular-expression filters (`name`, ...) and the sort
run in Python, as flavors do, so that ordering does not depend on the
backend's collation.

The regular expressions come from any caller, so they run on RE2, whose
matching time is linear in the text: a pattern such as `(a+)+$` that makes a
backtracking engine (Python's `re`, and the databases' REGEXP operators Nova
uses) take exponential time cannot stall the worker. Patterns are capped in
length, and anything RE2 cannot compile (a syntax error, a backreference or
lookaround, which RE2 does not support, or a program over its memory budget)
is an `Invalid` filter rather than an error of the service.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import re2
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.compute import aggregates as aggs
from stowage.compute import instance_ports, server_groups, services, states, unbuilt
from stowage.compute import instances as inst
from stowage.compute import tables as t
from stowage.compute import tags as tag_records
from stowage.config import ComputeSettings
from stowage.db import Database
from stowage.db.statements import Sql
from stowage.errors import Invalid, NotFound

__all__ = ["ServerQuery", "list_servers", "known_zones", "compute_host_exists",
           "hosts_of_node", "host_services", "groups_of", "host_status", "forget_instance",
           "server_with_host", "MAX_PATTERN_LENGTH"]

_I = t.instances
# The longest regular expression a filter takes. The columns it is matched
# against hold at most 255 characters; the cap bounds the cost of compiling.
MAX_PATTERN_LENGTH = 1024
_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # a caller's bad pattern is a 400, not a log line
# Only "does it match" matters: without groups RE2 can answer from its DFA,
# which keeps even a large program (`(.*){1000}`) well under a millisecond a row.
_RE2_OPTIONS.never_capture = True


@dataclass
class ServerQuery:
    """What GET /servers[/detail] asks for, already checked against policy."""

    project_id: str | None = None  # None: every project (all_tenants)
    user_id: str | None = None
    # Exact filters on instance columns; a list means "any of".
    exact: dict[str, Any] = field(default_factory=dict)
    # Regular expressions on instance columns (Nova's "regex" filters).
    regex: dict[str, str] = field(default_factory=dict)
    flavorid: str | None = None
    deleted: bool | None = False  # None: deleted or not
    # Nova lists SOFT_DELETED servers only when asked (deleted None, or their status).
    soft_deleted: bool = False
    changes_since: datetime.datetime | None = None
    changes_before: datetime.datetime | None = None
    sort: Sequence[tuple[str, str]] = (("created_at", "desc"),)
    limit: int | None = None
    marker: str | None = None
    # 2.26's tag filters, each a list of tags: tags, tags-any, not-tags, not-tags-any.
    tags: dict[str, list[str]] = field(default_factory=dict)
    # The `ip` / `ip6` filters: IP version -> a regular expression that must
    # match the start of one of the server's fixed addresses of that version.
    ips: dict[int, str] = field(default_factory=dict)


def _sort_value(instance: inst.Instance, key: str) -> Any:
    value = getattr(instance, key, None)
    if isinstance(value, bool):
        value = int(value)
    # None sorts first, as NULL does on MySQL and SQLite.
    return (value is not None, value if value is not None else 0)


def _sorted(found: list[inst.Instance], sort: Sequence[tuple[str, str]]) -> list[inst.Instance]:
    # Stable sorts from the least to the most significant key; the internal
    # id breaks ties in the direction of the first key, as Nova adds it, then the
    # uuid (ids are per cell: servers of two cells can share one).
    first_desc = bool(sort) and sort[0][1] == "desc"
    found.sort(key=lambda i: (i.id or 0, i.uuid), reverse=first_desc)
    for key, direction in reversed(sort):
        found.sort(key=lambda i, k=key: _sort_value(i, k),  # type: ignore[misc]
                   reverse=direction == "desc")
    return found


def _where(query: ServerQuery) -> list[Any]:
    # A cross-cell move's hidden copy is never listed (cell_copy.py).
    clauses: list[Any] = [_I.c.hidden == sa.false()]
    if query.project_id is not None:
        clauses.append(_I.c.project_id == query.project_id)
    if query.user_id is not None:
        clauses.append(_I.c.user_id == query.user_id)
    if query.deleted is not None:
        clauses.append(_I.c.deleted != 0 if query.deleted else _I.c.deleted == 0)
    if query.deleted is False and not query.soft_deleted:
        clauses.append(_I.c.vm_state != states.SOFT_DELETED)
    for name, value in query.exact.items():
        column = _I.c[name]
        if isinstance(value, (list, tuple)):
            values = [v for v in value if v is not None]
            clause: Any = column.in_(values)
            if None in value:
                clause = sa.or_(clause, column.is_(None))
            clauses.append(clause)
        else:
            clauses.append(column.is_(None) if value is None else column == value)
    clauses += tag_records.filter_clauses(
        _I.c.uuid, all_of=query.tags.get("tags", ()), any_of=query.tags.get("tags-any", ()),
        not_all_of=query.tags.get("not-tags", ()), none_of=query.tags.get("not-tags-any", ()))
    # Nova compares changes-since/-before with updated_at, which a new row
    # does not have yet: COALESCE(updated_at, created_at).
    changed = sa.func.coalesce(_I.c.updated_at, _I.c.created_at)
    if query.changes_since is not None:
        clauses.append(changed >= query.changes_since)
    if query.changes_before is not None:
        clauses.append(changed <= query.changes_before)
    return clauses


def _compile(pattern: str) -> Any:
    """`pattern` as an RE2 program; Invalid when it is too long or RE2 refuses it."""
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise Invalid(f"Invalid regular expression: longer than {MAX_PATTERN_LENGTH} "
                      "characters")
    try:
        return re2.compile(pattern, options=_RE2_OPTIONS)
    except (re2.error, UnicodeError):
        raise Invalid(f"Invalid regular expression: {pattern}") from None


def _search(program: Any, value: object) -> bool:
    try:
        return program.search(str(value)) is not None
    except UnicodeError:  # a lone surrogate cannot be UTF-8 for RE2: no match
        return False


def _matches(instance: inst.Instance, query: ServerQuery, programs: dict[str, Any]) -> bool:
    for name, program in programs.items():
        value = getattr(instance, name, None)
        if value is None or not _search(program, value):
            return False
    return query.flavorid is None or instance.flavor.get("flavorid") == query.flavorid


def list_servers(conn: Connection, query: ServerQuery, marker: inst.Instance | None = None
                 ) -> list[inst.Instance]:
    """Instances matching `query`, sorted and paged after the marker (an instance uuid;
    `marker`: its record, read in its own cell)."""
    programs = {name: _compile(pattern) for name, pattern in query.regex.items()}
    uuids = list(conn.execute(sa.select(_I.c.uuid).where(*_where(query))).scalars())
    found = inst.list_instances(conn, read_deleted=True, uuids=uuids) if uuids else []
    found = [i for i in found if _matches(i, query, programs)]
    if query.ips:
        found = _with_ips(conn, found, query.ips)
    found = _sorted(found, query.sort)
    if query.marker is not None:
        found = _after_marker(conn, found, query, marker)
    return found[:query.limit] if query.limit is not None else found


def _with_ips(conn: Connection, found: list[inst.Instance],
              ips: dict[int, str]) -> list[inst.Instance]:
    """The instances one of whose fixed addresses `ips` matches (Nova's `_ip_filter`).

    Nova's in-memory filter anchors the expression at the start of the
    address (`re.match`): `10.0.0.1` finds 10.0.0.1 and 10.0.0.12, not 110.0.0.1.
    An address is tried only against the filter of its own IP version.
    """
    programs = {version: _compile(pattern) for version, pattern in ips.items()}
    ports = instance_ports.of_instances(conn, [i.uuid for i in found])

    def matches(instance: inst.Instance) -> bool:
        for port in ports.get(instance.uuid, ()):
            for ip in (port.vif or {}).get("ips") or ():
                program = programs.get(int(ip.get("version") or 0))
                address = str(ip.get("address") or "")
                if program is not None and address and program.match(address) is not None:
                    return True
        return False
    return [i for i in found if matches(i)]


def _after_marker(conn: Connection, found: list[inst.Instance],
                  query: ServerQuery, marker: inst.Instance | None) -> list[inst.Instance]:
    uuids = [i.uuid for i in found]
    if query.marker in uuids:
        return found[uuids.index(query.marker) + 1:]
    # The marker left the result set (its state changed), or lives in another cell:
    # page from where it sorts.
    if marker is None:
        marker = find_marker(conn, query)
    merged = _sorted([*found, marker], query.sort)
    return merged[[i.uuid for i in merged].index(marker.uuid) + 1:]


def find_marker(conn: Connection, query: ServerQuery) -> inst.Instance:
    try:
        return inst.get(conn, query.marker or "", read_deleted=True,
                        project_id=query.project_id)
    except NotFound:
        raise Invalid(f"marker [{query.marker}] not found") from None


def merge_sorted(parts: Sequence[list[inst.Instance]], query: ServerQuery
                 ) -> list[inst.Instance]:
    """Several cells' pages as one: sorted again, cut at the limit."""
    found = _sorted([i for part in parts for i in part], query.sort)
    return found[:query.limit] if query.limit is not None else found


def known_zones(conn: Connection, api_db: Database, default_zone: str) -> set[str]:
    """Availability zones of the compute services (`conn`: their cell), plus the default
    zone; the aggregates that make zones are `api_db`'s."""
    found = services.list_services(conn, binary=services.COMPUTE)
    with api_db.using(conn) as api:
        found = aggs.with_zones(api, found)
    return {s.availability_zone for s in found if s.availability_zone} | {default_zone}


def compute_host_exists(conn: Connection, host: str) -> bool:
    try:
        services.service_by_host(conn, host, services.COMPUTE)
    except NotFound:
        return False
    return True


def hosts_of_node(conn: Connection, hypervisor_hostname: str) -> list[str]:
    """Hosts with a live compute node of that name (a node's name is its provider's)."""
    n = t.compute_nodes
    # SELECT host FROM compute_nodes
    #  WHERE hypervisor_hostname = :name AND deleted = 0 ORDER BY id
    query = sa.select(n.c.host).where(n.c.hypervisor_hostname == hypervisor_hostname,
                                      n.c.deleted == 0).order_by(n.c.id)
    return [str(host) for host in conn.execute(query).scalars()]


def host_services(conn: Connection, hosts: Iterable[str | None]) -> dict[str, services.Service]:
    """host -> its compute service, for the hosts that have one."""
    wanted = {h for h in hosts if h}
    if not wanted:
        return {}
    if len(wanted) == 1:
        host = next(iter(wanted))
        found = services.compute_service(conn, host)
        return {} if found is None else {host: found}
    return {s.host: s for s in services.list_services(conn, binary=services.COMPUTE)
            if s.host in wanted}


def host_status(service: services.Service | None, host: str | None,
                settings: ComputeSettings) -> str:
    """Nova's host_status: UP, DOWN, MAINTENANCE, UNKNOWN, or "" without a host."""
    if not host or service is None:
        return ""
    if service.forced_down:
        return "DOWN"
    if service.disabled:
        return "MAINTENANCE"
    return "UP" if services.is_up(service, settings) else "UNKNOWN"


def groups_of(conn: Connection, instance_uuid: str) -> list[str]:
    """Uuids of the server groups the instance belongs to (2.71's `server_groups`)."""
    return server_groups.group_uuids_of(conn, instance_uuid)


_WITH_HOST: dict[tuple[str, bool, bool], Sql] = {}


def _with_host_sql(dialect: Any, read_deleted: bool, project: bool) -> Sql:
    """The instance and its host's compute service, in one statement of its cell."""
    key = (dialect.name, read_deleted, project)
    statement = _WITH_HOST.get(key)
    if statement is None:
        quote = dialect.identifier_preparer.quote
        service = services.select_list(dialect, "s")
        record = ", ".join(f"i.{name}" for name in inst.RECORD.names)
        # SELECT i.<instance>, s.<service> FROM instances i
        #   LEFT JOIN services s ON s.host = i.host AND s.binary = 'nova-compute'
        #                           AND s.deleted = 0
        #  WHERE i.uuid = :uuid [AND i.deleted = 0] [AND i.project_id = :project_id]
        statement = _WITH_HOST[key] = Sql(
            f"SELECT {record}, {service} FROM instances i "
            f"LEFT JOIN services s ON s.host = i.host AND s.{quote('binary')} = :binary "
            "AND s.deleted = 0 WHERE i.uuid = :uuid"
            + ("" if read_deleted else " AND i.deleted = 0")
            + (" AND i.project_id = :project_id" if project else ""))
    return statement


def server_with_host(conn: Connection, uuid: str, project_id: str | None = None,
                     read_deleted: bool = False
                     ) -> tuple[inst.Instance, services.Service | None]:
    """What a server's view needs from its cell in one statement (every status poll asks
    for it): the instance as `instances.get` finds it and its host's compute service
    (in its own zone: `aggregates.with_zones` puts it in its host's)."""
    row = _with_host_sql(conn.dialect, read_deleted, project_id is not None).first(
        conn, uuid=uuid, project_id=project_id, binary=services.COMPUTE)
    if row is None:
        raise NotFound(f"Instance {uuid} could not be found.")
    width = len(inst.RECORD.names)
    service_row = row[width:width + len(services.SERVICE.names)]
    service = None if service_row[0] is None else services.service_from_raw(conn, service_row)
    return inst.from_raw(conn, row), service


def forget_instance(conn: Connection, api_db: Database, instance_uuid: str) -> None:
    """Drop what a deleted instance leaves behind: the ports it was given (none of them
    bound yet: it was never built; `conn`, its cell), then its request spec and group
    membership (the API database)."""
    conn.execute(t.instance_ports.delete().where(
        t.instance_ports.c.instance_uuid == instance_uuid))
    with api_db.using(conn, write=True) as api:
        _forget_spec_and_membership(api, instance_uuid)


def forget_api_records(conn: Connection, instance_uuid: str) -> None:
    """A server that was never written to its cell: its mapping, request spec and group
    membership go (`conn`: the API database; `unbuilt.py` does the same after a crash)."""
    unbuilt.forget_api_records(conn, instance_uuid)


def _forget_spec_and_membership(api: Connection, instance_uuid: str) -> None:
    api.execute(t.request_specs.delete().where(t.request_specs.c.instance_uuid == instance_uuid))
    server_groups.remove_member(api, instance_uuid)
