"""`stowage manage capacity`: how many more of each flavor fit, and the stranded room.

A client of the Compute API's `GET /os-stowage-capacity` (compute/api/drain.py,
docs/drain.md), reached as `stowage manage host` reaches it (`--url`, default
`http://<bind>/compute`, as the admin)::

    stowage manage capacity                    # every flavor, a table
    stowage manage capacity --flavor m1.small --format json

Exit status 0; 1 with the API's message when it refuses or cannot be reached.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.parse

import httpx

from stowage import config
from stowage.compute.drain import report
from stowage.db import Database
from stowage.manage_hosts import compute_calls
from stowage.web.service_client import close_send

__all__ = ["add_parser", "run"]


def add_parser(manage_sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    cap = manage_sub.add_parser("capacity", help="how many more of each flavor fit; "
                                                 "fragmentation")
    cap.add_argument("--flavor", help="only this flavor (id or name)")
    cap.add_argument("--format", choices=("table", "json"), default="table")
    cap.add_argument("--url", help="the Compute API (default http://<bind>/compute)")
    cap.add_argument("--database", help="SQLAlchemy URL (builtin-identity's tokens)")


def run(args: argparse.Namespace, settings: config.Settings, db: Database) -> int:
    from stowage.web.service_clients import Unreachable

    try:
        call, send = compute_calls(settings, db, args.url)
    except ValueError as exc:
        print(f"stowage: {exc}", file=sys.stderr)
        return 1
    query = "?" + urllib.parse.urlencode({"flavor": args.flavor}) if args.flavor else ""
    try:
        status, answer = call("GET", "/os-stowage-capacity" + query)
    except (httpx.HTTPError, RuntimeError, Unreachable) as exc:
        print(f"stowage: cannot reach the Compute API: {exc}", file=sys.stderr)
        return 1
    finally:
        close_send(send)
    if status != 200:
        print(f"stowage: {status} {answer}", file=sys.stderr)
        return 1
    found = answer["capacity"]
    print(json.dumps(found, indent=2) if args.format == "json" else report.capacity_table(found))
    return 0
