"""`stowage manage placement audit|heal-allocations`: the operator's accounting repairs.

Both work on the database directly, through an in-process Placement, so they
run with the service up or down (writes follow Placement's generation rules,
so a running control plane's moves are never overwritten). Results go to
stdout, one line per finding; progress and the summary go to stderr, so the
findings can be piped.

`import` and `export` (an upstream Placement database in and out) are manage_adopt.py's.
"""

from __future__ import annotations

import argparse
import sys
import uuid as uuidlib
from typing import TextIO

from stowage import config
from stowage.compute import heal
from stowage.compute.audit import audit, delete_orphans
from stowage.compute.cells import bootstrap_with
from stowage.compute.heal import Verdict as V
from stowage.db import Database, schema
from stowage.network.client import NetworkClient
from stowage.placement.client import PlacementClient

__all__ = ["add_parser", "run"]


def add_parser(manage_sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    placement = manage_sub.add_parser("placement", help="accounting checks and repairs")
    actions = placement.add_subparsers(dest="action", required=True)
    audit = actions.add_parser("audit", help="list allocations that break the accounting rules")
    audit.add_argument("--delete", action="store_true",
                       help="delete allocations that no instance or migration under way owns")
    heal = actions.add_parser(
        "heal-allocations", help="create missing allocations of instances on hosts "
        "(nova-manage placement heal_allocations)")
    heal.add_argument("--dry-run", action="store_true", help="report, change nothing")
    heal.add_argument("--instance", metavar="UUID", help="heal only this instance")
    heal.add_argument("--force", action="store_true",
                      help="replace allocations that differ from the flavor "
                      "(requires --instance, as Nova's)")
    heal.add_argument("--max-count", type=int, metavar="N",
                      help="stop after healing N instances (exit code 1 if more are left)")
    heal.add_argument("--skip-port-allocations", action="store_true",
                      help="do not heal the allocations and bindings of ports with "
                      "resource requests")
    heal.add_argument("--verbose", action="store_true",
                      help="one line per instance looked at, healed or not")
    for sub in (audit, heal):
        sub.add_argument("--database", help="SQLAlchemy URL")
    from stowage.manage_adopt import add_parsers

    add_parsers(actions)


def run(args: argparse.Namespace, settings: config.Settings, db: Database) -> int:
    from stowage.manage_adopt import ACTIONS
    from stowage.placement.app import build_app

    if args.action in ACTIONS:
        from stowage.manage_adopt import run as adopt

        return adopt(args, db)
    schema.upgrade(db)
    client = PlacementClient.local(build_app(settings, db))
    # Servers and hosts are the cell's records (docs/cells.md).
    cells = bootstrap_with(db, settings.compute)
    cell_dbs = [cell_db for _, cell_db in cells.distinct()]
    if args.action == "heal-allocations":
        return _heal(args, cell_dbs, client, _network(settings, db))
    return _audit(args, cell_dbs, client, _network(settings, db))


def _audit(args: argparse.Namespace, db: list[Database], client: PlacementClient,
           network: NetworkClient | None = None) -> int:
    """Every cell's servers and migrations against Placement (a server of a cell left
    out would make its allocations look orphaned), and their ports against the Network
    service when there is one."""
    if args.delete:
        print("stowage: deleting allocations nobody owns ...", file=sys.stderr, flush=True)
        for consumer, why in delete_orphans(db, client).items():
            print(f"deleted allocations of {consumer} ({why})")
    print("stowage: auditing allocations against instances and migrations ...",
          file=sys.stderr, flush=True)
    problems = audit(db, client, network)
    for problem in problems:
        print(problem)
    hint = ("; `--delete` removes allocations nobody owns, `heal-allocations` restores "
            "missing ones" if problems else "")
    print(f"stowage: {len(problems)} problem(s) found{hint}", file=sys.stderr)
    return 1 if problems else 0


def _bad_input(args: argparse.Namespace) -> str | None:
    if args.force and not args.instance:
        return "--force requires --instance UUID"
    if args.max_count is not None and args.max_count < 1:
        return "--max-count must be a positive integer"
    if args.instance:
        try:
            uuidlib.UUID(args.instance)
        except ValueError:
            return f"--instance {args.instance!r} is not a UUID"
    return None


def _network(settings: config.Settings, db: Database) -> NetworkClient | None:
    """The Network service for port allocations: in-process when this deployment serves
    it, else as the `[network]` service user or at `[compute] network_url`, as the
    services reach it (None: no ports to heal)."""
    from stowage.identity.service_auth import service_clients

    app = None
    if "network" in settings.services:
        from stowage.network.app import build_app as network_app
        app = network_app(settings, db)
    return NetworkClient.connect(service_clients(settings, db), app)


def _heal(args: argparse.Namespace, db: list[Database], client: PlacementClient,
          network: NetworkClient | None = None) -> int:
    problem = _bad_input(args)
    if problem:
        print(f"stowage: {problem}", file=sys.stderr)
        return heal.EXIT_BAD_INPUT
    options = heal.HealOptions(dry_run=args.dry_run, instance=args.instance, force=args.force,
                               max_count=args.max_count,
                               skip_port_allocations=args.skip_port_allocations)
    report = heal.heal_allocations(db, client, options, _Progress(sys.stderr).show, network)
    if args.instance and not report.outcomes:
        print(f"stowage: instance {args.instance} not found, or it runs on no host",
              file=sys.stderr)
        return heal.EXIT_BAD_INPUT
    for uuid, verdict, detail in report.outcomes:
        if args.verbose or verdict is not V.OK:
            print(f"{uuid}: {verdict.value}" + (f" ({detail})" if detail else ""))
    _summary(report, options, sys.stderr)
    return heal.exit_code(report)


def _summary(report: heal.HealReport, options: heal.HealOptions, out: TextIO) -> None:
    dry = "Dry run: " if options.dry_run else ""
    healed = report.count(V.CREATED, V.WOULD_CREATE, V.PORTS_HEALED, V.WOULD_HEAL_PORTS)
    replaced = report.count(V.REPLACED, V.WOULD_REPLACE)
    print(f"stowage: {dry}processed {len(report.outcomes)} instance(s): "
          f"{healed} {'would be ' if options.dry_run else ''}healed, {replaced} replaced, "
          f"{report.count(V.OK)} already right, {report.count(V.BUSY)} in a task, "
          f"{report.count(V.MISMATCH)} differ (--force --instance to replace), "
          f"{report.count(V.NO_NODE, V.FAILED)} failed", file=out)
    if report.more:
        print(f"stowage: --max-count {options.max_count} reached; run again for the rest",
              file=out)


class _Progress:
    """`done/total` on one self-rewriting line on a terminal, every 10% otherwise."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.tty = out.isatty()
        self.shown = -1

    def show(self, done: int, total: int) -> None:
        step = max(total // 10, 1)
        if self.tty:
            end = "\n" if done == total else ""
            print(f"\rstowage: looked at {done}/{total} instances", end=end, file=self.out,
                  flush=True)
        elif done == total or done // step != self.shown:
            self.shown = done // step
            print(f"stowage: looked at {done}/{total} instances", file=self.out, flush=True)
