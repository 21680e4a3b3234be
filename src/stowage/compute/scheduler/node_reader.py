"""The candidates' compute records, read fresh per decision, kept as state between decisions.

Why only the candidates: Placement already chose them (at most
`max_placement_results`), and a decision never looks at another host.
Reading every service and compute node of every cell per decision made a
decision cost the size of the cloud (1 s of CPU at 10,000 hosts); one join of
the candidates' nodes with their services makes it cost the candidates, as
Nova's `HostManager` reads `ComputeNodeList.get_all_by_uuids` of the provider
summaries.

Why fresh rows rather than a cache refreshed from a change marker: what
decides a host's fate changes behind the scheduler's back in other
processes, and not all of it moves a marker -- a heartbeat writes only
`last_seen_up` (a service is down `service_down_time` after its last one,
with no write at all), and every agent rewrites its node's `updated_at` each
period, so an `updated_at` marker would either re-read most of a big cloud or
need a window guessing commit delays and clock skew. One indexed read of the
candidates' rows is exact and costs about as much as the rows it returns.

What is kept: `NodeRecords` remembers each node's record with the row it was
built from, and builds a new one only when the row (or the host's aggregate
metadata, or its up/down verdict at this decision's `now`) differs. Building
1,000 records per decision was a measurable share of it.
"""

from __future__ import annotations

import datetime
import functools
import json
import threading
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.compute import aggregates, services
from stowage.compute import tables as t
from stowage.compute.scheduler.host_state import NodeRecord
from stowage.config import ComputeSettings

__all__ = ["Row", "rows_by_uuid", "rows_of_host", "NodeRecords", "metadata_of_hosts"]

_N, _S = t.compute_nodes, t.services
_H, _M = t.aggregate_hosts, t.aggregate_metadata
# Bound parameters per IN list: well under every backend's limit (SQLite's 32,766).
_CHUNK = 1000
# (uuid, host, node, pci_stats, service id, zone, disabled, disabled_reason,
#  forced_down, last_seen_up); the service's columns are None when it has none;
#  last_seen_up is a datetime, or on SQLite the text SQLAlchemy stored.
Row = tuple[Any, ...]
_SERVICE_COLUMNS = (_S.c.id, _S.c.availability_zone, _S.c.disabled, _S.c.disabled_reason,
                    _S.c.forced_down, _S.c.last_seen_up)
# A node whose service_id names no live compute service falls back to its host's
# (the newest), as `host_state.load_nodes` does.
_SERVICE_OF_HOST = (sa.select(_S.c.host, *_SERVICE_COLUMNS)
                    .where(_S.c.deleted == 0, _S.c.binary == services.COMPUTE,
                           _S.c.host.in_(sa.bindparam("keys", expanding=True)))
                    .order_by(_S.c.id))


@functools.lru_cache(maxsize=64)
def _joined_sql(dialect: Any, key: str, count: int) -> str:
    """The candidates' join (below) with an IN list of `count` driver placeholders.

    Why not the SQLAlchemy statement: expanding an IN list of 1,000 bound
    parameters and processing 1,000 result rows through its types cost a
    quarter of a decision; the driver's own placeholders and values do not.
    """
    q = dialect.identifier_preparer.quote
    mark = "?" if dialect.paramstyle == "qmark" else "%s"
    # SELECT n.uuid, n.host, n.hypervisor_hostname, n.pci_stats, s.id,
    #   s.availability_zone, s.disabled, s.disabled_reason, s.forced_down, s.last_seen_up
    # FROM compute_nodes n LEFT OUTER JOIN services s ON s.id = n.service_id
    #   AND s.deleted = 0 AND s.binary = 'nova-compute'
    # WHERE n.deleted = 0 AND n.<key> IN (...)
    columns = ", ".join([*(f"n.{q(c)}" for c in ("uuid", "host", "hypervisor_hostname",
                                                 "pci_stats")),
                         *(f"s.{q(c.name)}" for c in _SERVICE_COLUMNS)])
    return (f"SELECT {columns} FROM {q(_N.name)} n LEFT OUTER JOIN {q(_S.name)} s "
            f"ON s.{q('id')} = n.{q('service_id')} AND s.{q('deleted')} = 0 "
            f"AND s.{q('binary')} = {mark} WHERE n.{q('deleted')} = 0 "
            f"AND n.{q(key)} IN ({', '.join([mark] * count)})")


def _seen(value: Any) -> datetime.datetime | None:
    """`last_seen_up` as a datetime: SQLite's driver gives SQLAlchemy's stored text."""
    return datetime.datetime.fromisoformat(value) if isinstance(value, str) else value


def _fetch(conn: Connection, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    """The driver's own row tuples: wrapping 1,000 rows in SQLAlchemy's `Row`s and
    fetching them one by one cost a third of the read (the statement still goes
    through SQLAlchemy's execution, its events included)."""
    result = conn.exec_driver_sql(sql, params)
    try:
        rows: list[tuple[Any, ...]] = list(result.cursor.fetchall())
    finally:
        result.close()
    return rows


def _read(conn: Connection, key: str, keys: Sequence[str]) -> list[Row]:
    rows: list[Row] = []
    for start in range(0, len(keys), _CHUNK):
        chunk = keys[start:start + _CHUNK]
        sql = _joined_sql(conn.dialect, key, len(chunk))
        # SQLite's last_seen_up stays its stored text: `NodeRecords` parses it only
        # when it differs from the text it kept for that node.
        rows.extend(_fetch(conn, sql, (services.COMPUTE, *chunk)))
    orphans = sorted({r[1] for r in rows if r[4] is None})
    if not orphans:
        return rows
    by_host: dict[str, tuple[Any, ...]] = {}
    for start in range(0, len(orphans), _CHUNK):
        for svc in conn.execute(_SERVICE_OF_HOST, {"keys": orphans[start:start + _CHUNK]}):
            by_host[svc[0]] = tuple(svc[1:])
    return [r if r[4] is not None or r[1] not in by_host else r[:4] + by_host[r[1]]
            for r in rows]


def rows_by_uuid(conn: Connection, uuids: Collection[str]) -> list[Row]:
    """The live nodes among `uuids` (the others are not here), each with its service.

    The IN list is sorted: nothing reads the rows' order, but SQLite probes
    the index in key order, and the sort costs less than it saves (measured:
    1.38 against 1.47 ms at 1,000 uuids, sort included)."""
    return _read(conn, "uuid", sorted(uuids))


def rows_of_host(conn: Connection, host: str) -> list[Row]:
    """The live nodes of `host` (a requested destination), each with its service."""
    return _read(conn, "host", [host])


def _pci(value: Any) -> dict[str, Any]:
    if isinstance(value, str):  # the text of a JSON column; PostgreSQL's driver parses it
        value = json.loads(value)
    return dict(value or {})


def _record(row: Row, up: bool, default_zone: str,
            meta: Mapping[str, frozenset[str]], cell: str | None) -> NodeRecord:
    uuid, host, node, pci, svc_id, own_zone, disabled, reason, forced, _ = row
    if svc_id is None:
        return NodeRecord(uuid, host, node, default_zone, service_up=False,
                          pci_stats=_pci(pci), aggregate_metadata=meta, cell=cell)
    zones = meta.get(aggregates.AZ_KEY)
    zone = (min(zones) if zones else own_zone) or default_zone
    return NodeRecord(uuid, host, node, zone, service_up=up, service_disabled=bool(disabled),
                      disabled_reason=reason, forced_down=bool(forced), pci_stats=_pci(pci),
                      aggregate_metadata=meta, cell=cell)


class NodeRecords:
    """The records of the nodes a worker has scheduled to, each with the row it came from."""

    _EMPTY: Mapping[str, frozenset[str]] = {}

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # node uuid -> (row as read, last_seen_up as a datetime, up, metadata, cell, record).
        # The whole row is compared (no slice per row), so a heartbeat rebuilds the node's
        # record once; SQLite's last_seen_up text is parsed only then.
        self._known: dict[str, tuple[Row, datetime.datetime | None, bool,
                                     Mapping[str, frozenset[str]], str | None,
                                     NodeRecord]] = {}

    def records(self, rows: Sequence[Row], settings: ComputeSettings, now: datetime.datetime,
                metadata: Mapping[str, Mapping[str, frozenset[str]]],
                cell_of: Mapping[str, str | None] | str | None = None) -> dict[str, NodeRecord]:
        """node uuid -> record, as `host_state.load_nodes` makes them; `cell_of` is the cell
        of every node (a str), or per host (a mapping: hosts it lacks are left out)."""
        default_zone = settings.default_availability_zone
        per_host = isinstance(cell_of, Mapping)
        found: dict[str, NodeRecord] = {}
        # `services.heard_from` as a window around `now` (one compare per row, not a call):
        # up/down is decided at every decision's `now`, from the row read just now.
        window = datetime.timedelta(seconds=settings.service_down_time)
        earliest, latest = now - window, now + window
        empty = self._EMPTY
        with self._lock:
            known = self._known
            for row in rows:
                uuid, host = row[0], row[1]
                if per_host:
                    assert isinstance(cell_of, Mapping)
                    if host not in cell_of:
                        continue
                    cell = cell_of[host]
                else:
                    cell = cell_of  # type: ignore[assignment]
                meta = metadata.get(host, empty)
                kept = known.get(uuid)
                if kept is not None and kept[0] == row:
                    seen = kept[1]
                else:
                    kept, seen = None, _seen(row[9])
                up = not row[8] and seen is not None and earliest <= seen <= latest
                if (kept is not None and kept[2] == up and kept[4] == cell
                        and (kept[3] is meta or kept[3] == meta)):
                    found[uuid] = kept[5]
                    continue
                record = _record(row, up, default_zone, meta, cell)
                known[uuid] = (row, seen, up, meta, cell, record)
                found[uuid] = record
        return found


@functools.lru_cache(maxsize=64)
def _metadata_sql(dialect: Any, count: int) -> str:
    """The hosts' aggregate metadata with an IN list of `count` driver placeholders
    (SQLAlchemy's expansion of 1,000 parameters cost more than the statement)."""
    q = dialect.identifier_preparer.quote
    mark = "?" if dialect.paramstyle == "qmark" else "%s"
    # SELECT h.host, m.key, m.value FROM aggregate_hosts h JOIN aggregate_metadata m
    #   ON m.aggregate_id = h.aggregate_id WHERE h.host IN (...)
    return (f"SELECT h.{q('host')}, m.{q('key')}, m.{q('value')} FROM {q(_H.name)} h "
            f"JOIN {q(_M.name)} m ON m.{q('aggregate_id')} = h.{q('aggregate_id')} "
            f"WHERE h.{q('host')} IN ({', '.join([mark] * count)})")


def metadata_of_hosts(conn: Connection, hosts: Collection[str]
                      ) -> dict[str, dict[str, frozenset[str]]]:
    """`aggregates.metadata_by_host`, for `hosts` only."""
    found: dict[str, dict[str, set[str]]] = {}
    ordered = sorted(hosts)
    for start in range(0, len(ordered), _CHUNK):
        chunk = tuple(ordered[start:start + _CHUNK])
        for host, key, value in _fetch(conn, _metadata_sql(conn.dialect, len(chunk)), chunk):
            found.setdefault(host, {}).setdefault(key, set()).add(value)
    return {host: {k: frozenset(v) for k, v in keys.items()} for host, keys in found.items()}
