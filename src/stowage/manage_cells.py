"""`stowage manage cell create|delete|list|discover-hosts`: the operator's cells.

Each bootstraps the deployment's cells first (as `stowage serve` does), so
they run before the service ever started too. `create --name N --database URL`
adds a cell whose records live in that database (its schema brought to head;
"@api" is the API database itself), as Nova's `cell_v2 create_cell`; running
services learn of it when a request first names it. `delete --name N` removes
a cell that holds no server (`--force` also unmaps its hosts), as
`delete_cell`. `list` prints one line per cell (`list_cells`, passwords
masked); `discover-hosts` maps every compute host a cell's database knows
and no host mapping names yet (`discover_hosts`), printing each one it maps.
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
from stowage.errors import Conflict, NotFound

__all__ = ["add_parser", "run"]


def add_parser(manage_sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    cell = manage_sub.add_parser("cell", help="cells: create, delete, list, map their hosts")
    actions = cell.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", help="one line per cell: name, uuid, database")
    discover = actions.add_parser("discover-hosts",
                                  help="map the compute hosts of every cell not mapped yet")
    discover.add_argument("--verbose", action="store_true", help="also name hosts already mapped")
    for sub in (listing, discover):
        sub.add_argument("--database", help="SQLAlchemy URL of the API database")
    create = actions.add_parser("create", help="add a cell keeping its records in a database")
    create.add_argument("--name", required=True, help="the cell's name, e.g. cell2")
    create.add_argument("--database", dest="cell_database", required=True,
                        help="SQLAlchemy URL of the cell's database (\"@api\": the API's)")
    delete = actions.add_parser("delete", help="remove a cell that holds no server")
    delete.add_argument("--name", required=True)
    delete.add_argument("--force", action="store_true",
                        help="also unmap the hosts still mapped to it")
    for sub in (create, delete):
        sub.add_argument("--api-database", dest="database",
                         help="SQLAlchemy URL of the API database")


def run(args: argparse.Namespace, settings: config.Settings, db: Database) -> int:
    schema.upgrade(db)
    cells = cell_records.bootstrap_with(db, settings.compute)
    if args.action == "list":
        return _list(cells)
    if args.action == "create":
        return _create(cells, args.name, args.cell_database)
    if args.action == "delete":
        return _delete(cells, args.name, args.force)
    return _discover(cells, args.verbose)


def _create(cells: cell_records.Cells, name: str, url: str) -> int:
    if url != cell_records.SAME_DATABASE:
        try:
            target = Database(url)
        except Exception as exc:  # a URL SQLAlchemy cannot use
            print(f"stowage: cannot use {url!r} as a database URL: {exc}", file=sys.stderr)
            return 2
        print(f"stowage: bringing the schema of {name}'s database to head ...",
              file=sys.stderr, flush=True)
        try:
            schema.upgrade(target)
        except Exception as exc:
            print(f"stowage: cannot reach {name}'s database: {exc}; create it first and "
                  "check the URL", file=sys.stderr)
            return 1
        finally:
            target.dispose()
    try:
        with cells.api.write() as conn:
            cell = cell_records.create_cell(conn, name, url)
    except Conflict as exc:
        print(f"stowage: {exc}", file=sys.stderr)
        return 1
    print(cell.uuid)
    return 0


def _delete(cells: cell_records.Cells, name: str, force: bool) -> int:
    try:
        with cells.api.write() as conn:
            cell_records.delete_cell(conn, name, force)
    except (Conflict, NotFound) as exc:
        print(f"stowage: {exc}", file=sys.stderr)
        return 1
    print(f"stowage: cell {name} deleted", file=sys.stderr)
    return 0


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
    for cell in cells.compute_cells():
        cell_db = cells.database(cell)
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
