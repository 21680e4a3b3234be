"""Server CPU per `GET /metrics` scrape with N simulated hosts and their servers.

    python bench/metrics.py [--hosts 1000] [--servers 2000] [--scrapes 20]
        [--backend sqlite|postgresql|mysql]

Why: issue 32 bounds a scrape of 1,000 hosts' gauges at 50 ms of server
time. The whole app (`build_asgi` with `--sim-hosts N`, as `stowage serve`
builds it) runs on a uvicorn thread of this process, periodic work out of
the way; `--servers` servers are booted (ten per request) and spread over
the hosts. Each scrape is an HTTP GET /metrics with an admin token; the
client's own thread CPU is taken out of the process CPU, what is left is
the server's (its event loop, the handler thread, the SQL client side; on
PostgreSQL and MySQL the database server's own CPU is not in it). Printed:
the answer's size and series, then the median and worst server CPU and wall
time per scrape, and the share of the Placement gauges alone (rendered in
this thread). Asserts nothing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

import move_counts  # noqa: E402
import moves  # noqa: E402
import servers  # noqa: E402


def _boot(url: str, plane: object, count: int) -> None:
    """`count` servers, ten per request, each request drained before the next."""
    with httpx.Client(base_url=f"{url}/compute/v2.1", headers=moves.HEADERS,
                      timeout=300) as client:
        small, _, image = moves.setup(client, f"{url}/image")
        unlimited = {"instances": -1, "cores": -1, "ram": -1}
        resp = client.put("/os-quota-class-sets/default", json={"quota_class_set": unlimited})
        assert resp.status_code == 200, resp.text
        left = count
        while left > 0:
            n = min(10, left)
            resp = client.post("/servers", json={"server": {
                "name": "s", "flavorRef": small, "imageRef": image, "networks": "none",
                "min_count": n, "max_count": n}})
            assert resp.status_code == 202, resp.text
            plane.drain(300)  # type: ignore[attr-defined]
            left -= n


def _scrape(client: httpx.Client) -> tuple[float, float, int]:
    """(server CPU s, wall s, bytes) of one scrape."""
    cpu, mine, wall = time.process_time(), time.thread_time(), time.perf_counter()
    resp = client.get("/metrics")
    wall = time.perf_counter() - wall
    mine = time.thread_time() - mine
    cpu = time.process_time() - cpu
    assert resp.status_code == 200, resp.text
    return cpu - mine, wall, len(resp.content)


def _placement_only(db_url: str, rounds: int) -> float:
    """Median thread CPU of the Placement gauges alone (query + render)."""
    from stowage.db import Database
    from stowage.metrics.exporter import placement_families
    from stowage.metrics.text import render

    db = Database(db_url)
    took = []
    for _ in range(rounds):
        start = time.thread_time()
        render(placement_families(db))
        took.append(time.thread_time() - start)
    db.dispose()
    return statistics.median(took)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--hosts", type=int, default=1000)
    p.add_argument("--servers", type=int, default=2000)
    p.add_argument("--scrapes", type=int, default=20)
    p.add_argument("--backend", default="sqlite")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp, \
            servers.database(args.backend, Path(tmp), "metrics") as db_url:
        started = time.monotonic()
        with move_counts._app(db_url, args.hosts, count=False) as (url, plane, _):
            print(f"{args.hosts} hosts up in {time.monotonic() - started:.0f} s", flush=True)
            started = time.monotonic()
            _boot(url, plane, args.servers)
            print(f"{args.servers} servers booted in {time.monotonic() - started:.0f} s",
                  flush=True)
            with httpx.Client(base_url=url, headers={"x-auth-token": "admin"},
                              timeout=60) as client:
                _scrape(client)  # warm: the first one starts the background audit
                rows = [_scrape(client) for _ in range(args.scrapes)]
                text = client.get("/metrics").text
            placement = _placement_only(db_url, args.scrapes)
    series = sum(1 for line in text.splitlines() if line and not line.startswith("#"))
    cpu = sorted(r[0] * 1000 for r in rows)
    wall = sorted(r[1] * 1000 for r in rows)
    print(f"backend {args.backend}, {args.hosts} hosts, {args.servers} servers: "
          f"{rows[-1][2]:,} bytes, {series:,} series per scrape")
    print(f"server CPU per scrape: median {statistics.median(cpu):.1f} ms, "
          f"worst {cpu[-1]:.1f} ms; wall median {statistics.median(wall):.1f} ms")
    print(f"of which the Placement gauges (query + render): {placement * 1000:.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
