"""What `auth_strategy = "keystone"` costs per request once a token is cached.

Same run, same route, same database: two in-process Placement apps, one with
noauth2 and one validating tokens against a real Keystone (tests/keystone,
started here), each called through its whole ASGI pipeline (the threadpool
hop included) for `GET /resource_providers`. The Keystone app's cache is
warmed by one request first, so the figures are the cached path: the issue's
target is at most 0.2 ms added per request. Rounds alternate between the two
apps so that drift (other processes on the machine) hits both alike; the
median round is reported.

    python3 bench/auth.py [--requests 2000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "src")]

from stowage import config  # noqa: E402
from stowage.db import Database, schema  # noqa: E402
from stowage.placement.app import build_app  # noqa: E402
from tests.keystone.fixture import Keystone, running_keystone  # noqa: E402

ROUTE = "/resource_providers"
TARGET_MS = 0.2


def _scope(token: str) -> dict[str, Any]:
    headers = [(b"x-auth-token", token.encode()), (b"accept", b"application/json"),
               (b"openstack-api-version", b"placement 1.39"), (b"host", b"bench")]
    return {"type": "http", "method": "GET", "path": ROUTE, "query_string": b"",
            "headers": headers, "root_path": "", "scheme": "http",
            "client": ("127.0.0.1", 1)}


async def _receive() -> dict[str, Any]:
    return {"type": "http.request", "body": b"", "more_body": False}


async def _run(app: Any, token: str, count: int) -> tuple[float, float]:
    """(wall s, CPU s) for `count` requests; each must answer 200."""
    statuses: list[int] = []

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    scope = _scope(token)
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(count):
        await app(scope, _receive, send)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    if set(statuses) != {200}:
        raise SystemExit(f"bench: {ROUTE} answered {sorted(set(statuses))}")
    return wall, cpu


def _apps(db_url: str, keystone: Keystone) -> dict[str, tuple[Any, str]]:
    from tests.functional.keystone_deploy import authtoken

    db = Database(db_url)
    schema.upgrade(db)
    plain = config.Settings(database=db_url, services=("placement",))
    checked = config.Settings(database=db_url, services=("placement",),
                              api=config.ApiSettings(auth_strategy="keystone"),
                              keystone_authtoken=authtoken(keystone))
    return {"noauth2": (build_app(plain, db), "admin"),
            "keystone": (build_app(checked, db), keystone.admin.admin_token())}


async def _measure(apps: dict[str, tuple[Any, str]], count: int,
                   rounds: int) -> dict[str, list[tuple[float, float]]]:
    figures: dict[str, list[tuple[float, float]]] = {name: [] for name in apps}
    for app, token in apps.values():
        await _run(app, token, 50)  # warm: the snapshot, the token cache
    for _ in range(rounds):
        for name, (app, token) in apps.items():
            figures[name].append(await _run(app, token, count))
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, running_keystone() as keystone:
        apps = _apps(f"sqlite:///{tmp}/bench.db", keystone)
        figures = asyncio.run(_measure(apps, args.requests, args.rounds))
    per = {name: (statistics.median(w for w, _ in runs) / args.requests,
                  statistics.median(c for _, c in runs) / args.requests)
           for name, runs in figures.items()}
    print(f"GET {ROUTE}, {args.requests} requests x {args.rounds} rounds, median round:")
    for name, (wall, cpu) in per.items():
        print(f"  {name:<9} {1 / wall:8.0f} req/s   {wall * 1000:.3f} ms/req   "
              f"CPU {cpu * 1000:.3f} ms/req")
    added = (per["keystone"][0] - per["noauth2"][0]) * 1000
    added_cpu = (per["keystone"][1] - per["noauth2"][1]) * 1000
    verdict = "within" if added <= TARGET_MS else "OVER"
    print(f"  keystone adds {added:.3f} ms/req ({added_cpu:.3f} ms CPU) with a warm cache: "
          f"{verdict} the {TARGET_MS} ms target")


if __name__ == "__main__":
    main()
