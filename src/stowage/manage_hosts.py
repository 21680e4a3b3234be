"""`stowage manage host fault add|list|clear` and `stowage manage host drain`.

`fault`: a simulated host's faults from the shell. `drain`: the host's
servers moved off it (compute/drain/, docs/drain.md): `--dry-run` prints the
plan (`GET /os-stowage-drain/{host}`), else `execute.DrainRun` carries it out.

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
    stowage manage host drain host1 --dry-run [--verbose] [--format json]
    stowage manage host drain host1 [--max-parallel 2]

Exit status 0 on success; 1 with the API's message when it refuses.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Any

import httpx

from stowage import config
from stowage.compute.agent.faults import STEPS
from stowage.compute.drain import report
from stowage.compute.drain.execute import ComputeCalls, DrainFailed, DrainRun
from stowage.compute.drain.progress import Progress
from stowage.db import Database
from stowage.web.service_client import Answer, Send, close_send

__all__ = ["add_parser", "run"]

_TIMEOUT = 90.0  # the API waits for the agent's answer up to the RPC timeout (60 s)


def add_parser(manage_sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    host = manage_sub.add_parser("host", help="hosts: drain; simulated hosts' injected faults")
    areas = host.add_subparsers(dest="action", required=True)
    _add_drain(areas)
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


def _add_drain(areas: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    drain = areas.add_parser("drain", help="move every server off a host (or --dry-run: "
                                           "the plan)")
    drain.add_argument("host")
    drain.add_argument("--dry-run", action="store_true", help="print the plan, move nothing")
    drain.add_argument("--verbose", action="store_true",
                       help="with --dry-run: every host's rejection of each server")
    drain.add_argument("--format", choices=("table", "json"), default="table")
    drain.add_argument("--max-parallel", type=int, default=2, metavar="N",
                       help="moves at once (default 2)")
    drain.add_argument("--timeout", type=float, default=900.0, metavar="SECONDS",
                       help="longest wait for one move (default 900)")
    drain.add_argument("--url", help="the Compute API (default http://<bind>/compute)")
    drain.add_argument("--database", help="SQLAlchemy URL (builtin-identity's tokens)")


def compute_calls(settings: config.Settings, db: Database, url: str | None,
                  timeout: float = _TIMEOUT) -> tuple[ComputeCalls, Send]:
    """The Compute API as the admin at the latest microversion, and its `send` (to close)."""
    from stowage.identity.service_auth import service_clients
    from stowage.web.service_clients import COMPUTE

    headers = {"x-auth-token": "admin", "accept": "application/json",
               "openstack-api-version": "compute latest"}
    send = service_clients(settings, db).send(
        COMPUTE, headers, url=url or f"http://{settings.bind}/compute", timeout=timeout)
    assert send is not None, "an explicit URL always gives a way"

    def call(method: str, path: str, body: Any = None) -> tuple[int, Any]:
        answer = send(method, path, None if body is None else json.dumps(body).encode(),
                      None)
        try:
            return answer.status, answer.json() if answer.body else None
        except ValueError:
            return answer.status, answer.body.decode(errors="replace")
    return call, send


def run_drain(args: argparse.Namespace, settings: config.Settings, db: Database) -> int:
    """The plan (--dry-run), or the drain and its report; 1 when a server failed to move."""
    from stowage.web.service_clients import Unreachable

    try:
        call, send = compute_calls(settings, db, args.url)
    except ValueError as exc:
        print(f"stowage: {exc}", file=sys.stderr)
        return 1
    try:
        if args.dry_run:
            status, answer = call("GET", f"/os-stowage-drain/{args.host}"
                                  + ("?verbose=true" if args.verbose else ""))
            if status != 200:
                raise DrainFailed(f"{status} {_text(answer)}")
            plan = answer["drain"]
            print(json.dumps(plan, indent=2) if args.format == "json"
                  else report.plan_table(plan, args.verbose))
            return 0
        run = DrainRun(call, args.host, Progress(sys.stdout), args.max_parallel,
                       timeout=args.timeout)
        outcomes = run.run()
    except (httpx.HTTPError, RuntimeError, Unreachable) as exc:
        print(f"stowage: cannot reach the Compute API: {exc}", file=sys.stderr)
        return 1
    except DrainFailed as exc:
        print(f"stowage: {exc}", file=sys.stderr)
        return 1
    finally:
        close_send(send)
    if args.format == "json":
        print(json.dumps({"host": args.host,
                          "servers": [dataclasses.asdict(o) for o in outcomes.values()]},
                         indent=2))
    else:
        print(report.outcome_table(args.host, outcomes))
    return 1 if any(o.result == "failed" for o in outcomes.values()) else 0


def _text(answer: Any) -> str:
    try:
        return str(next(iter(answer.values()))["message"])
    except (AttributeError, StopIteration, KeyError, TypeError):
        return str(answer)[:500]


def run(args: argparse.Namespace, settings: config.Settings, db: Database) -> int:
    """Through the client factory as the Network service reaches Compute: `[nova]`'s
    service user (`--url`, when given, names the endpoint) or builtin-identity's mint."""
    from stowage.identity.service_auth import service_clients
    from stowage.web.service_clients import COMPUTE, Unreachable

    if args.action == "drain":
        return run_drain(args, settings, db)
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
