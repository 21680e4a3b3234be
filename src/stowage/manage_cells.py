"""`stowage manage cell list|discover-hosts`: the operator's view of the cells.

Both bootstrap the deployment's cells first (as `stowage serve` does), so they
run before the service ever started too. `list` prints one line per cell
(Nova's `nova-manage cell_v2 list_cells`, passwords masked); `discover-hosts`
maps every compute host a cell's database knows and no host mapping names yet
(Nova's `discover_hosts`), printing each one it maps.
"""

from __future__ import annotations

import argparse
import sys

import sqlalchemy as sa

from stowage import config
from stowage.compute import cells as cell_records
from stowage.compute import services
from stowage.compute import tables as t
from stowage.db import Database, schema
from stowage.errors import Conflict

__all__ = ["add_parser", "run"]


def add_parser(manage_sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    cell = manage_sub.add_parser("cell", help="cells: list them, map their hosts")
    actions = cell.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", help="one line per cell: name, uuid, database")
    discover = actions.add_parser("discover-hosts",
                                  help="map the compute hosts of every cell not mapped yet")
    discover.add_argument("--verbose", action="store_true", help="also name hosts already mapped")
    for sub in (listing, discover):
        sub.add_argument("--database", help="SQLAlchemy URL of the API database")


def run(args: argparse.Namespace, settings: config.Settings, db: Database) -> int:
    schema.upgrade(db)
    cells = cell_records.bootstrap(db, settings.compute.cell1_database)
    if args.action == "list":
        return _list(cells)
    return _discover(cells, args.verbose)


def _list(cells: cell_records.Cells) -> int:
    found = cells.reload()
    with cells.api.read() as conn:
        hosts: dict[int, int] = {
            int(cell_id): int(count) for cell_id, count in conn.execute(
                sa.select(t.host_mappings.c.cell_id, sa.func.count())
                .group_by(t.host_mappings.c.cell_id))}
    print(f"{'Name':<12} {'UUID':<36} {'Hosts':>5}  {'Disabled':<8} Database")
    for cell in found:
        print(f"{cell.name:<12} {cell.uuid:<36} {hosts.get(cell.id, 0):>5}  "
              f"{str(cell.disabled):<8} {cells.location(cell) or '(the API database)'}")
    return 0


def _discover(cells: cell_records.Cells, verbose: bool) -> int:
    mapped = failed = 0
    for cell, cell_db in cells.databases():
        print(f"stowage: looking for hosts in {cell.name} ...", file=sys.stderr, flush=True)
        with cell_db.read() as conn:
            found = sorted({s.host for s in services.list_services(
                conn, binary=services.COMPUTE)})
        for host in found:
            try:
                with cells.api.write() as conn:
                    new = cell_records.map_host(conn, host, cell)
            except Conflict as exc:
                print(f"stowage: {exc} Left as it is.", file=sys.stderr)
                failed += 1
                continue
            mapped += new
            if new or verbose:
                print(f"{host} {'mapped to' if new else 'already in'} {cell.name}")
    print(f"stowage: {mapped} host(s) mapped", file=sys.stderr)
    return 1 if failed else 0
