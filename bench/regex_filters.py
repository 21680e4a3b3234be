"""Time the server list's regular-expression filters on patterns that stall backtracking engines.

    python bench/regex_filters.py [--servers 1000] [--backend sqlite|postgresql|mysql]

Compute and Placement on a loopback port (uvicorn in a thread, as the
functional tests run them) over a fresh throw-away database, holding
`--servers` instance records of one project named `aaa…a!` (20 to 40 a's).
For each pattern, a member's `GET /servers?name=<pattern>` is timed while
another thread keeps timing `GET /placement/resource_providers`: the worst
Placement latency seen during the listing shows whether the filter stalled
the rest of the service (issue 8: `(a+)+$` took 8.9 s over one 26-a name
and froze Placement for 6.7 s). Prints seconds; asserts nothing.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
import uuid
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.functional.conftest import serving  # noqa: E402

from stowage.compute import instances, states  # noqa: E402
from stowage.db import Database  # noqa: E402

PATTERNS = ("(a+)+$", "(a|aa)+$", "(.*){1000}", "^(a*)*b", "a")
MEMBER = {"x-auth-token": "u1:p1", "x-roles": "member,reader",
          "openstack-api-version": "compute latest"}


def _servers(db: Database, count: int) -> None:
    flavor = {"flavorid": "1", "name": "tiny", "vcpus": 1, "memory_mb": 512, "root_gb": 1,
              "ephemeral_gb": 0, "swap": 0, "extra_specs": {}}
    with db.write() as conn:
        for index in range(count):
            name = "a" * (20 + index % 21) + "!"
            instances.create(conn, instances.Instance(
                uuid=str(uuid.uuid4()), project_id="p1", user_id="u1", display_name=name,
                flavor=flavor, vm_state=states.ACTIVE, hostname=name.rstrip("!"),
                reservation_id="r-bench000", image_ref=str(uuid.uuid4())))


def _worst_placement_latency(base: str, stop: threading.Event, worst: list[float]) -> None:
    with httpx.Client(base_url=f"{base}/placement", headers={"x-auth-token": "admin"},
                      timeout=3600) as client:
        while not stop.is_set():
            started = time.perf_counter()
            client.get("/resource_providers").raise_for_status()
            worst.append(time.perf_counter() - started)


def _listing(base: str, client: httpx.Client, pattern: str) -> tuple[float, float, int]:
    stop, seen = threading.Event(), [0.0]
    watcher = threading.Thread(target=_worst_placement_latency, args=(base, stop, seen))
    watcher.start()
    time.sleep(0.05)
    started = time.perf_counter()
    resp = client.get("/servers", params={"name": pattern, "limit": "1000"})
    took = time.perf_counter() - started
    stop.set()
    watcher.join()
    if resp.status_code != 200:
        raise RuntimeError(f"{pattern}: {resp.status_code} {resp.text[:300]}")
    return took, max(seen), len(resp.json()["servers"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--servers", type=int, default=1000)
    parser.add_argument("--backend", default="sqlite",
                        choices=("sqlite", "postgresql", "mysql"))
    args = parser.parse_args()
    with serving(args.backend) as live:
        base, db = live.url, live.db
        _servers(db, args.servers)
        with httpx.Client(base_url=f"{base}/compute/v2.1", headers=MEMBER,
                          timeout=3600) as client:
            print(f"backend {args.backend}, {args.servers} servers named a{{20..40}}!")
            print(f"{'pattern':<16}{'list s':>9}{'worst placement s':>19}{'matched':>9}")
            for pattern in PATTERNS:
                took, worst, matched = _listing(base, client, pattern)
                print(f"{pattern:<16}{took:>9.3f}{worst:>19.3f}{matched:>9}", flush=True)


if __name__ == "__main__":
    main()
