"""`stowage manage placement import|export`: adopt an upstream Placement database, or
give one back (docs/placement-import.md).

The stowage database is the usual `--database` (or the settings file's); the
upstream one is `--from` for an import and `--to` for an export. Progress and
the summary go to stderr; the exit code is 0 on success, 1 when refused or
failed (the target then is unchanged).
"""

from __future__ import annotations

import argparse
import sys

from stowage.db import Database

__all__ = ["add_parsers", "run", "ACTIONS"]

ACTIONS = ("import", "export")


def add_parsers(actions: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    imp = actions.add_parser(
        "import", help="copy an upstream OpenStack Placement database into stowage's")
    imp.add_argument("--from", dest="source", required=True, metavar="URL",
                     help="SQLAlchemy URL of upstream Placement's database "
                          "([placement_database] connection)")
    imp.add_argument("--database", "--to", dest="database", metavar="URL",
                     help="stowage's database (default: the settings')")
    imp.add_argument("--force", action="store_true",
                     help="replace the Placement data the target already holds")
    exp = actions.add_parser(
        "export", help="write stowage's Placement data into an empty upstream-schema database")
    exp.add_argument("--to", dest="target", required=True, metavar="URL",
                     help="SQLAlchemy URL of an empty database for upstream Placement 16.0.0")
    exp.add_argument("--database", "--from", dest="database", metavar="URL",
                     help="stowage's database (default: the settings')")


def run(args: argparse.Namespace, db: Database) -> int:
    from stowage.placement import adopt

    try:
        if args.action == "import":
            progress = adopt.import_database(args.source, db, force=args.force,
                                             out=sys.stderr)
        else:
            progress = adopt.export_database(db, args.target, out=sys.stderr)
    except (adopt.ImportRefused, adopt.ImportFailed, adopt.ExportRefused,
            adopt.ExportFailed) as exc:
        print(f"stowage: {args.action} refused or failed, target unchanged: {exc}",
              file=sys.stderr)
        return 1
    print(f"stowage: {args.action}ed {progress.summary()}", file=sys.stderr)
    return 0
