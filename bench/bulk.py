"""Benchmark the two bulk Placement writes at growing sizes, to show they grow linearly.

    python bench/bulk.py [--sizes 10000,50000,250000] [--consumers 1000,10000,50000]
        [--backend sqlite|postgresql|mysql]

A Placement service on a loopback port (uvicorn in a thread, as the
functional tests run it) over a fresh throw-away database. For each size N:

- `PUT /resource_providers/{u}/aggregates` with N new aggregate uuids, then
  the same PUT again with half of them replaced (the diff path);
- `POST /allocations` with N consumers, one VCPU each, on one provider.

Prints seconds per request and microseconds per item: linear growth keeps
the per-item figure flat as N grows. Asserts nothing.
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.functional.conftest import serving  # noqa: E402

HEADERS = {"x-auth-token": "admin", "openstack-api-version": "placement latest",
           "accept": "application/json"}


def _timed(client: httpx.Client, method: str, path: str, body: object) -> float:
    started = time.perf_counter()
    resp = client.request(method, path, json=body)
    elapsed = time.perf_counter() - started
    if resp.status_code >= 300:
        raise RuntimeError(f"{method} {path}: {resp.status_code} {resp.text[:300]}")
    return elapsed


def _provider(client: httpx.Client, name: str, vcpus: int = 0) -> str:
    rp = str(uuid.uuid4())
    client.post("/resource_providers", json={"name": name, "uuid": rp}).raise_for_status()
    if vcpus:
        client.put(f"/resource_providers/{rp}/inventories", json={
            "resource_provider_generation": 0,
            "inventories": {"VCPU": {"total": vcpus}}}).raise_for_status()
    return rp


def aggregates(client: httpx.Client, size: int) -> tuple[float, float]:
    rp = _provider(client, f"agg-{size}")
    uuids = [str(uuid.uuid4()) for _ in range(size)]
    first = _timed(client, "PUT", f"/resource_providers/{rp}/aggregates",
                   {"aggregates": uuids, "resource_provider_generation": 0})
    half = uuids[: size // 2] + [str(uuid.uuid4()) for _ in range(size - size // 2)]
    second = _timed(client, "PUT", f"/resource_providers/{rp}/aggregates",
                    {"aggregates": half, "resource_provider_generation": 1})
    return first, second


def allocations(client: httpx.Client, size: int) -> float:
    rp = _provider(client, f"alloc-{size}", vcpus=size)
    project, user = str(uuid.uuid4()), str(uuid.uuid4())
    body = {str(uuid.uuid4()): {"allocations": {rp: {"resources": {"VCPU": 1}}},
                                "project_id": project, "user_id": user,
                                "consumer_generation": None, "consumer_type": "INSTANCE"}
            for _ in range(size)}
    return _timed(client, "POST", "/allocations", body)


def _sizes(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10000,50000,250000",
                        help="aggregate uuids per PUT")
    parser.add_argument("--consumers", default="1000,10000,50000",
                        help="consumers per POST /allocations")
    parser.add_argument("--backend", default="sqlite",
                        choices=("sqlite", "postgresql", "mysql"))
    args = parser.parse_args()
    with serving(args.backend, ("placement",)) as live, \
            httpx.Client(base_url=live.url, headers=HEADERS, timeout=3600) as client:
        print(f"backend {args.backend}")
        print(f"{'PUT aggregates':<28}{'N':>8}{'new s':>9}{'us/item':>9}"
              f"{'diff s':>9}{'us/item':>9}")
        for size in _sizes(args.sizes):
            first, second = aggregates(client, size)
            print(f"{'':<28}{size:>8}{first:>9.2f}{first / size * 1e6:>9.1f}"
                  f"{second:>9.2f}{second / size * 1e6:>9.1f}", flush=True)
        print(f"{'POST /allocations':<28}{'N':>8}{'s':>9}{'us/item':>9}")
        for size in _sizes(args.consumers):
            took = allocations(client, size)
            print(f"{'':<28}{size:>8}{took:>9.2f}{took / size * 1e6:>9.1f}",
                  flush=True)


if __name__ == "__main__":
    main()
