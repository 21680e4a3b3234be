"""`stowage manage host fault add|list|clear`: a simulated host's faults from the shell.

A client of the Compute API's `/os-simulator/hosts/{host}/faults`
(docs/faults.md), not a writer of its own: the faults live in the host's
agent, which only the API reaches (over the control plane's transport). The
API is at `--url` (default `http://<bind>/compute`, the settings' `bind`);
the caller is the admin -- noauth2's `admin` token, with `builtin-identity`
a service token issued from the database, or with a `[nova]` table the
Keystone service user the Network service calls Compute as (the client
factory, web/service_clients.py)::

    stowage manage host fault add host1 prep_resize                  # fails once
    stowage manage host fault add host1 spawn --times 3 --error "disk full"
    stowage manage host fault add host1 heartbeat --always           # service goes down
    stowage manage host fault add host1 agent                        # kill its agent
    stowage manage host fault list host1
    stowage manage host fault clear host1 [--id FAULT_ID]

Exit status 0 on success; 1 with the API's message when it refuses.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import httpx

from stowage import config
from stowage.compute.agent.faults import STEPS
from stowage.db import Database
from stowage.web.service_client import Answer, close_send

__all__ = ["add_parser", "run"]

_TIMEOUT = 90.0  # the API waits for the agent's answer up to the RPC timeout (60 s)


def add_parser(manage_sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    host = manage_sub.add_parser("host", help="simulated hosts: injected faults")
    areas = host.add_subparsers(dest="action", required=True)
    fault = areas.add_parser("fault", help="arm, list or clear a simulated host's faults")
    actions = fault.add_subparsers(dest="fault_action", required=True)
    add = actions.add_parser("add", help="make a step fail (once by default)")
    add.add_argument("host")
    add.add_argument("step", choices=STEPS, metavar="STEP",
                     help=f"one of: {', '.join(STEPS)}")
    mode = add.add_mutually_exclusive_group()
    mode.add_argument("--times", type=int, metavar="N", help="fail the next N times")
    mode.add_argument("--always", action="store_true", help="fail until cleared")
    add.add_argument("--error", help="the failure's message")
    listing = actions.add_parser("list", help="the armed faults, with firings left")
    listing.add_argument("host")
    clear = actions.add_parser("clear", help="disarm every fault, or one (--id)")
    clear.add_argument("host")
    clear.add_argument("--id", dest="fault_id", help="only the fault of this id")
    for sub in (add, listing, clear):
        sub.add_argument("--url", help="the Compute API (default http://<bind>/compute)")
        sub.add_argument("--database", help="SQLAlchemy URL (builtin-identity's tokens)")


def run(args: argparse.Namespace, settings: config.Settings, db: Database) -> int:
    """Through the client factory as the Network service reaches Compute: `[nova]`'s
    service user (`--url`, when given, names the endpoint) or builtin-identity's mint."""
    from stowage.identity.service_auth import service_clients
    from stowage.web.service_clients import COMPUTE, Unreachable

    url = args.url or f"http://{settings.bind}/compute"
    path = f"/os-simulator/hosts/{args.host}/faults"
    headers = {"x-auth-token": "admin", "accept": "application/json"}
    try:
        send = service_clients(settings, db).send(COMPUTE, headers, url=url,
                                                    timeout=_TIMEOUT)
    except ValueError as exc:
        print(f"stowage: {exc}", file=sys.stderr)
        return 1
    assert send is not None, "an explicit URL always gives a way"
    try:
        if args.fault_action == "add":
            answer = send("POST", path, json.dumps({"fault": _spec(args)}).encode(), None)
        elif args.fault_action == "list":
            answer = send("GET", path, None, None)
        else:
            answer = send("DELETE", f"{path}/{args.fault_id}" if args.fault_id else path,
                          None, None)
    except (httpx.HTTPError, RuntimeError) as exc:  # Unreachable is an httpx error
        where = url if not isinstance(exc, Unreachable) else "it"
        print(f"stowage: cannot reach the Compute API at {where}: {exc}", file=sys.stderr)
        return 1
    finally:
        close_send(send)
    if answer.status >= 400:
        print(f"stowage: {answer.status} {_message(answer)}", file=sys.stderr)
        return 1
    if args.fault_action == "add":
        _print([answer.json()["fault"]])
    elif args.fault_action == "list":
        _print(answer.json()["faults"])
    return 0


def _spec(args: argparse.Namespace) -> dict[str, Any]:
    spec: dict[str, Any] = {"step": args.step}
    if args.always:
        spec["mode"] = "always"
    elif args.times is not None:
        spec.update(mode="times", times=args.times)
    if args.error is not None:
        spec["error"] = args.error
    return spec


def _print(faults: list[dict[str, Any]]) -> None:
    """One line per fault: id, step, mode, firings left (- for always), message."""
    for fault in faults:
        left = "-" if fault["remaining"] is None else str(fault["remaining"])
        print("\t".join((str(fault["id"]), fault["step"], fault["mode"], left,
                         fault["error"])))


def _message(answer: Answer) -> str:
    """The message of a Nova-style error body ({"badRequest": {"message": ...}})."""
    try:
        body = answer.json()
        return str(next(iter(body.values()))["message"])
    except (ValueError, StopIteration, KeyError, TypeError, AttributeError):
        return answer.body.decode(errors="replace")[:500]
