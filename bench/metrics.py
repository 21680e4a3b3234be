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
import contextlib
import gc
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

import move_counts  # noqa: E402
import moves  # noqa: E402
import servers  # noqa: E402


@contextlib.contextmanager
def _app(db_url: str, hosts: int) -> Iterator[tuple[str, Any, Any]]:
    """The whole app on a uvicorn thread, periodic work and the audit gauge out of the way;
    yields its URL, its control plane and its `/metrics` app."""
    from stowage import config
    from stowage.cli import build_asgi, plane_of
    from stowage.compute.cells import bootstrap
    from stowage.db import Database, schema

    settings = config.Settings(
        database=db_url, metrics=config.MetricsSettings(audit_interval=0),
        compute=config.ComputeSettings(sim_hosts=hosts, report_interval=3600.0,
                                       update_resources_interval=3600.0))
    db = Database(db_url)
    schema.upgrade(db)
    cells = bootstrap(db)
    app = build_asgi(settings, db, at_root=False, cells=cells)
    with move_counts.on_thread(app) as url:
        plane = plane_of(app)
        try:
            yield url, plane, dict(app.mounts)["/metrics"]
        finally:
            plane.stop()
            cells.dispose()
            db.dispose()


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


class _Collections:
    """Time the cyclic garbage collector took, per generation, since the last `take()`:
    the suspect of a slow outlier scrape (a full collection walks every object of the
    process, 1,000 hosts' and their servers' records included)."""

    def __init__(self) -> None:
        self.spent = [0.0, 0.0, 0.0]
        self._start = 0.0
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.spent[info["generation"]] += time.perf_counter() - self._start

    def take(self) -> list[float]:
        found, self.spent = self.spent, [0.0, 0.0, 0.0]
        return found


def _scrape(client: httpx.Client, collections: _Collections
            ) -> tuple[float, float, int, list[float]]:
    """(server CPU s, wall s, bytes, gc seconds per generation) of one scrape."""
    collections.take()
    cpu, mine, wall = time.process_time(), time.thread_time(), time.perf_counter()
    resp = client.get("/metrics")
    wall = time.perf_counter() - wall
    mine = time.thread_time() - mine
    cpu = time.process_time() - cpu
    assert resp.status_code == 200, resp.text
    return cpu - mine, wall, len(resp.content), collections.take()


def _cpu(func: Callable[[], Any], rounds: int) -> float:
    """Median thread CPU (s) of `func` in this thread."""
    took = []
    for _ in range(rounds):
        start = time.thread_time()
        func()
        took.append(time.thread_time() - start)
    return statistics.median(took)


def _parts(metrics_app: Any, rounds: int) -> dict[str, float]:
    """The handler and its parts, each in this thread (ms)."""
    from prometheus_client import generate_latest

    from stowage.compute.audit import audit
    from stowage.metrics import exporter, plane, process
    from stowage.metrics.text import render
    from stowage.web.http import Request

    sources = metrics_app.sources
    req = Request("GET", "/", "", {"x-auth-token": "admin"}, b"", "", remote_addr="127.0.0.1")
    control = sources.compute.plane
    parts = {
        "handler (MetricsApp.respond)": _cpu(lambda: metrics_app.respond(req), rounds),
        "Placement gauges": _cpu(lambda: render(
            exporter.placement_families(sources.placement_db)), rounds),
        "Nova gauges": _cpu(lambda: render(exporter.nova_families(sources.compute)), rounds),
        "cells": _cpu(lambda: render(plane.cell_families(sources.compute.cells)), rounds),
        "process counters": _cpu(lambda: generate_latest(process.REGISTRY), rounds),
        "one audit (in the background, every audit_interval)": _cpu(lambda: audit(
            sources.compute.cell_dbs(), control.placement, control.network), 1)}
    return {name: cpu * 1000 for name, cpu in parts.items()}


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
        with _app(db_url, args.hosts) as (url, plane, metrics_app):
            print(f"{args.hosts} hosts up in {time.monotonic() - started:.0f} s", flush=True)
            started = time.monotonic()
            _boot(url, plane, args.servers)
            print(f"{args.servers} servers booted in {time.monotonic() - started:.0f} s",
                  flush=True)
            with httpx.Client(base_url=url, headers={"x-auth-token": "admin"},
                              timeout=60) as client:
                collections = _Collections()
                _scrape(client, collections)
                rows = [_scrape(client, collections) for _ in range(args.scrapes)]
                text = client.get("/metrics").text
            parts = _parts(metrics_app, args.scrapes)
    series = sum(1 for line in text.splitlines() if line and not line.startswith("#"))
    cpu = sorted(r[0] * 1000 for r in rows)
    wall = sorted(r[1] * 1000 for r in rows)
    print(f"backend {args.backend}, {args.hosts} hosts, {args.servers} servers: "
          f"{rows[-1][2]:,} bytes, {series:,} series per scrape")
    print(f"server CPU per HTTP scrape: median {statistics.median(cpu):.1f} ms, "
          f"worst {cpu[-1]:.1f} ms; wall median {statistics.median(wall):.1f} ms")
    worst = max(rows, key=lambda r: r[0])
    print(f"worst scrape: CPU {worst[0] * 1000:.1f} ms, wall {worst[1] * 1000:.1f} ms, "
          "gc per generation " + ", ".join(f"{g * 1000:.1f}" for g in worst[3]) + " ms; "
          f"scrapes with a full (gen 2) collection: {sum(1 for r in rows if r[3][2])}"
          f"/{len(rows)}")
    for name, ms in parts.items():
        print(f"  {name}: {ms:.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
