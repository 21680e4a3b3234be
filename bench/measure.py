"""Timing loops: per-request latency, claims that add usage, and throughput.

Why these three: latency with and without `limit` shows whether a target
does work proportional to the answer or to the whole cloud; claiming 10% of
the trees makes usages non-empty (a fresh cloud hides the capacity check);
throughput with concurrent clients shows how the server's workers share load.
"""

from __future__ import annotations

import http.client
import statistics
import threading
import time
import uuid
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from client import HEADERS, call, new_client

__all__ = ["candidates", "claim", "latency", "throughput"]

PROJECT = str(uuid.uuid5(uuid.NAMESPACE_OID, "bench-project"))
USER = str(uuid.uuid5(uuid.NAMESPACE_OID, "bench-user"))


def _path(query: str, limit: int | None) -> str:
    return f"/allocation_candidates?{query}" + (f"&limit={limit}" if limit else "")


def candidates(base: str, query: str, limit: int | None = None) -> dict[str, Any]:
    """One GET /allocation_candidates; returns the decoded body."""
    with new_client(base) as c:
        body: dict[str, Any] = call(c, "GET", _path(query, limit), retries=0).json()
        return body


def latency(base: str, query: str, limit: int | None, runs: int,
            warmup: int = 2) -> dict[str, float]:
    """Median and p95 (ms) of `runs` sequential requests on one kept-alive connection.

    Timed with the standard library's http.client, whose own cost is small
    next to the service's: httpx's pure-Python reader spends ~6 ms on a 4.5 MB
    answer (N=10,000, no limit) that http.client reads in ~1 ms, and that
    would time the benchmark's client rather than the service.
    """
    samples = []
    parts = urlsplit(base)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port or 80,
                                      timeout=600)
    path = parts.path.rstrip("/") + _path(query, limit)
    try:
        for i in range(warmup + runs):
            t0 = time.perf_counter()
            conn.request("GET", path, headers=HEADERS)
            resp = conn.getresponse()
            body = resp.read()
            if resp.status != 200:
                raise RuntimeError(f"GET {path} -> {resp.status}: {body[:500]!r}")
            if i >= warmup:
                samples.append((time.perf_counter() - t0) * 1000.0)
    finally:
        conn.close()
    samples.sort()
    p95 = samples[min(len(samples) - 1, max(0, round(0.95 * len(samples)) - 1))]
    return {"median_ms": statistics.median(samples), "p95_ms": p95,
            "min_ms": samples[0], "runs": float(len(samples))}


def _pick(requests: list[dict[str, Any]], tree_of: dict[str, int],
          count: int) -> Iterable[dict[str, Any]]:
    """The first candidate of each of the first `count` distinct trees."""
    seen: set[int] = set()
    for req in requests:
        tree = tree_of[next(iter(req["allocations"]))]
        if tree not in seen:
            seen.add(tree)
            yield req
            if len(seen) == count:
                return


def claim(base: str, query: str, tree_of: dict[str, int], fraction: float) -> int:
    """Write allocations for `fraction` of the trees; return how many consumers."""
    size = len(set(tree_of.values()))
    count = max(1, round(size * fraction))
    reqs = candidates(base, query)["allocation_requests"]
    made = 0
    with new_client(base) as c:
        for req in _pick(reqs, tree_of, count):
            body = {"allocations": req["allocations"], "consumer_generation": None,
                    "project_id": PROJECT, "user_id": USER, "consumer_type": "INSTANCE"}
            call(c, "PUT", f"/allocations/{uuid.uuid4()}", body, ok=(204,))
            made += 1
    return made


def throughput(base: str, query: str, limit: int | None, total: int,
               clients: int = 10, max_seconds: float = 120.0) -> dict[str, float]:
    """`clients` threads, each with its own connection, share `total` requests.

    Stops early after `max_seconds` so a slow target cannot stall the run;
    the rate is computed over the requests actually completed.
    """
    lock = threading.Lock()
    state = {"left": total, "done": 0, "errors": 0}
    deadline = time.monotonic() + max_seconds
    path = _path(query, limit)

    def worker() -> None:
        with new_client(base) as c:
            while time.monotonic() < deadline:
                with lock:
                    if state["left"] <= 0:
                        return
                    state["left"] -= 1
                ok = c.get(path).status_code == 200
                with lock:
                    state["done" if ok else "errors"] += 1

    threads = [threading.Thread(target=worker) for _ in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    return {"rps": state["done"] / elapsed, "requests": float(state["done"]),
            "errors": float(state["errors"]), "seconds": elapsed}
