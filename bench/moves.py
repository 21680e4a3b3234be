"""Benchmark the move operations: boot N servers on M simulated hosts, then
resize+confirm, migrate+revert, live-migrate, shelve+unshelve every one of
them, then resize+confirm pairs, then evacuate a dead host.

    python bench/moves.py [--servers 50] [--hosts 10] [--clients 4] [--rounds 2]
        [--backend sqlite|postgresql] [--json FILE] [--no-counts]

A real `stowage serve --sim-hosts M` process on a loopback port and a fresh
database; `--clients` threads each issue an operation and poll
`GET /servers/{id}` every 20 ms until the server settles (ACTIVE /
VERIFY_RESIZE). With one client the latency is the operation's own; with
several, operations queue on the one process (and on SQLite's one writer).
Prints, per operation, the median and 90th percentile latency (request to
settled state), the throughput (operations per second of wall time), and the
CPU the server process spent per operation (its status polls included),
which other load on the machine disturbs less than the throughput, and the
status polls per operation; after the phases it measures what one poll
costs the server, so the operation's own CPU can be read without them.

The `resize+confirm` phase is what a user pays for a resize: each client
resizes a server, waits for VERIFY_RESIZE, confirms, waits for ACTIVE; it
runs `--rounds` times over every server (between two flavors of the same
disk) and reports pairs per second. Shelve runs with the default
`shelved_offload_time` of 0, so it settles SHELVED_OFFLOADED holding
nothing, and unshelve schedules each server again from scratch.

The `evacuate` phase forces the busiest host's compute service down and
evacuates its servers; their evacuation migrations keep the dead host's
allocations until its agent comes back, so the process is then restarted on
the same database (the agents start again and clean up) before the audit
checks that no allocation leaked. Unless `--no-counts`, it also counts the
SQL statements and transactions of one resize+confirm per phase in this
process (`move_counts.py`). Asserts nothing.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

import move_counts  # noqa: E402
import servers  # noqa: E402

# Seconds between status polls: short enough to time an operation to ~this
# much, long enough that the pollers do not become the server's main load.
POLL = 0.02
# Status polls sent so far (next() on a count is atomic under the GIL): each
# phase's report shows how many it took per operation.
_POLLS = itertools.count()
_polls_reported = 0
HEADERS = {"x-auth-token": "admin", "openstack-api-version": "compute 2.80",
           "accept": "application/json"}


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--servers", type=int, default=50)
    p.add_argument("--hosts", type=int, default=10)
    p.add_argument("--clients", type=int, default=4, help="concurrent API clients")
    p.add_argument("--rounds", type=int, default=2,
                   help="resize+confirm pairs per server in the pair phase")
    p.add_argument("--backend", default="sqlite", help="sqlite|postgresql")
    p.add_argument("--no-counts", action="store_true",
                   help="skip counting SQL statements in this process")
    p.add_argument("--json", help="write raw numbers to this file")
    return p.parse_args(argv)


def _wait(client: httpx.Client, server_id: str, want: str, timeout: float = 120) -> str:
    """Poll until the server rests in `want`; ERROR ends the bench.

    Other resting states are polled through: a shelved server rests SHELVED
    for a moment before its offload starts.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        view = client.get(f"/servers/{server_id}").json()["server"]
        next(_POLLS)
        if view["OS-EXT-STS:task_state"] is None:
            if view["status"] == want:
                return want
            if view["status"] == "ERROR":
                raise SystemExit(f"bench: {server_id} ended ERROR, wanted {want}: "
                                 f"{view.get('fault')}")
        time.sleep(POLL)
    raise SystemExit(f"bench: {server_id} did not reach {want} in {timeout} s")


def _timed(client: httpx.Client, method: str, path: str, body: Any, server_id: str,
           want: str, expect: int) -> float:
    start = time.perf_counter()
    resp = client.request(method, path, json=body)
    if resp.status_code != expect:
        raise SystemExit(f"bench: {method} {path} -> {resp.status_code} {resp.text}")
    _wait(client, server_id or resp.json()["server"]["id"], want)
    return time.perf_counter() - start


def _phase(url: str, clients: int, jobs: list[tuple[str, str, Any, str, str, int]]
           ) -> tuple[list[float], float, list[str]]:
    """Run jobs on `clients` threads; returns latencies, wall time and created ids."""
    created: list[str] = []

    def run(job: tuple[str, str, Any, str, str, int]) -> float:
        method, path, body, server_id, want, expect = job
        with httpx.Client(base_url=url, headers=HEADERS, timeout=120) as client:
            if server_id:
                return _timed(client, method, path, body, server_id, want, expect)
            start = time.perf_counter()
            resp = client.post(path, json=body)
            if resp.status_code != expect:
                raise SystemExit(f"bench: POST {path} -> {resp.status_code} {resp.text}")
            new_id = resp.json()["server"]["id"]
            created.append(new_id)
            _wait(client, new_id, want)
            return time.perf_counter() - start

    start = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        latencies = list(pool.map(run, jobs))
    return latencies, time.perf_counter() - start, created


def setup(client: httpx.Client, image_url: str) -> tuple[str, str, str]:
    # "large2" differs from "large" by its memory only, so pairs can go back and forth.
    for name, vcpus, ram, disk in (("small", 1, 512, 5), ("large", 2, 1024, 10),
                                   ("large2", 2, 1536, 10)):
        client.post("/flavors", json={"flavor": {"name": name, "vcpus": vcpus, "ram": ram,
                                                 "disk": disk, "id": name}})
    with httpx.Client(base_url=image_url, headers={"x-auth-token": "admin"}) as img:
        image_id = img.post("/v2/images", json={"name": "cirros", "disk_format": "qcow2",
                                                "container_format": "bare"}).json()["id"]
        img.put(f"/v2/images/{image_id}/file", content=b"x",
                headers={"content-type": "application/octet-stream"})
    return "small", "large", image_id


def _pairs(url: str, clients: int, ids: list[str], flavors: list[str]
           ) -> tuple[list[float], float]:
    """Each server: resize to the next flavor, wait, confirm, wait; latency per pair."""
    def run(job: tuple[str, str]) -> float:
        server_id, flavor = job
        path = f"/servers/{server_id}/action"
        with httpx.Client(base_url=url, headers=HEADERS, timeout=120) as client:
            start = time.perf_counter()
            _timed(client, "POST", path, {"resize": {"flavorRef": flavor}}, server_id,
                   "VERIFY_RESIZE", 202)
            _timed(client, "POST", path, {"confirmResize": None}, server_id, "ACTIVE", 204)
            return time.perf_counter() - start

    jobs = [(i, flavor) for flavor in flavors for i in ids]
    start = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        latencies = list(pool.map(run, jobs))
    return latencies, time.perf_counter() - start


def _cpu_seconds(pid: int) -> float:
    """User + system CPU the server process used so far (Linux; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _report(name: str, latencies: list[float], wall: float,
            unit: str = "ops/s", cpu: float = 0.0) -> dict[str, float]:
    global _polls_reported
    polls = next(_POLLS)  # one past the last poll: counted once more per report
    ordered = sorted(latencies)
    row = {"median_ms": statistics.median(ordered) * 1000,
           # nearest rank: the smallest value at or above 90% of the samples
           "p90_ms": ordered[math.ceil(len(ordered) * 0.9) - 1] * 1000,
           "ops_per_s": len(ordered) / wall, "server_cpu_ms": cpu * 1000 / len(ordered),
           "polls": (polls - _polls_reported) / len(ordered)}
    _polls_reported = polls + 1
    print(f"{name:<16} n={len(ordered):<5} median {row['median_ms']:8.1f} ms   "
          f"p90 {row['p90_ms']:8.1f} ms   {row['ops_per_s']:7.1f} {unit}   "
          f"server CPU {row['server_cpu_ms']:6.1f} ms each, {row['polls']:4.1f} polls",
          flush=True)
    return row


def _poll_cost(url: str, pid: int, server_id: str, n: int = 300) -> float:
    """Server CPU of one status poll (ms), to read the per-operation CPU without them."""
    with httpx.Client(base_url=url, headers=HEADERS, timeout=60) as client:
        client.get(f"/servers/{server_id}")
        cpu = _cpu_seconds(pid)
        for _ in range(n):
            client.get(f"/servers/{server_id}")
        return (_cpu_seconds(pid) - cpu) * 1000 / n


def _usage_total(url: str) -> dict[str, int]:
    headers = {"x-auth-token": "admin", "openstack-api-version": "placement 1.39"}
    with httpx.Client(base_url=url, headers=headers) as client:
        total: dict[str, int] = {}
        for rp in client.get("/resource_providers").json()["resource_providers"]:
            usages = client.get(f"/resource_providers/{rp['uuid']}/usages").json()["usages"]
            for rc, n in usages.items():
                total[rc] = total.get(rc, 0) + n
    return total


def _operations(url: str, args: argparse.Namespace, pid: int, large: str, boot: Any,
                results: dict[str, Any]) -> list[str]:
    """Boot, then resize, confirm, migrate and revert every server; returns their ids."""
    cpu = _cpu_seconds(pid)
    lat, wall, ids = _phase(url, args.clients, [("POST", "/servers", boot, "", "ACTIVE", 202)]
                            * args.servers)
    results["boot"] = _report("boot", lat, wall, cpu=_cpu_seconds(pid) - cpu)
    plan = [("resize", {"resize": {"flavorRef": large}}, "VERIFY_RESIZE", 202),
            ("confirm", {"confirmResize": None}, "ACTIVE", 204),
            ("migrate", {"migrate": None}, "VERIFY_RESIZE", 202),
            ("revert", {"revertResize": None}, "ACTIVE", 202),
            ("live-migrate", {"os-migrateLive": {"host": None, "block_migration": "auto"}},
             "ACTIVE", 202),
            ("shelve", {"shelve": None}, "SHELVED_OFFLOADED", 202),
            ("unshelve", {"unshelve": None}, "ACTIVE", 202)]
    for name, body, want, expect in plan:
        jobs = [("POST", f"/servers/{i}/action", body, i, want, expect) for i in ids]
        cpu = _cpu_seconds(pid)
        lat, wall, _ = _phase(url, args.clients, jobs)
        results[name] = _report(name, lat, wall, cpu=_cpu_seconds(pid) - cpu)
    return ids


def _evacuate(url: str, clients: int, pid: int, results: dict[str, Any]) -> str:
    """Force the busiest host down and evacuate its servers; returns that host."""
    with httpx.Client(base_url=url, headers=HEADERS, timeout=60) as client:
        found = client.get("/servers/detail", params={"all_tenants": 1}).json()["servers"]
        hosts = Counter(s["OS-EXT-SRV-ATTR:host"] for s in found)
        host = hosts.most_common(1)[0][0]
        _force_down(client, host, True)
    jobs = [("POST", f"/servers/{s['id']}/action", {"evacuate": {}}, s["id"], "ACTIVE", 200)
            for s in found if s["OS-EXT-SRV-ATTR:host"] == host]
    cpu = _cpu_seconds(pid)
    lat, wall, _ = _phase(url, clients, jobs)
    results["evacuate"] = _report("evacuate", lat, wall, cpu=_cpu_seconds(pid) - cpu)
    return str(host)


def _force_down(client: httpx.Client, host: str, down: bool) -> None:
    services = client.get("/os-services", params={"host": host, "binary": "nova-compute"})
    service_id = services.json()["services"][0]["id"]
    resp = client.put(f"/os-services/{service_id}", json={"forced_down": down})
    if resp.status_code != 200:
        raise SystemExit(f"bench: force down {host} -> {resp.status_code} {resp.text}")


def _source_back(url: str, host: str, results: dict[str, Any]) -> None:
    """The dead host's agent started again: wait until it released every evacuation."""
    with httpx.Client(base_url=url, headers=HEADERS, timeout=60) as client:
        _force_down(client, host, False)
        start = time.perf_counter()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            migs = client.get("/os-migrations", params={"migration_type": "evacuation"}).json()
            if all(m["status"] == "completed" for m in migs["migrations"]):
                break
            time.sleep(POLL)
        else:
            raise SystemExit(f"bench: {host} did not clean up its evacuations in 120 s")
    results["evacuated_source_cleanup_s"] = time.perf_counter() - start
    print(f"{host} back: {len(migs['migrations'])} evacuations released", flush=True)


def _audit(placement_url: str, servers_count: int, last_flavor: str,
           results: dict[str, Any]) -> None:
    """Every server holds its flavor once, and nothing else holds anything."""
    results["usage_total"] = _usage_total(placement_url)
    ram = {"large": 1024, "large2": 1536}[last_flavor]
    expected = {"DISK_GB": 10 * servers_count, "MEMORY_MB": ram * servers_count,
                "VCPU": 2 * servers_count}
    leaked = results["usage_total"] != expected
    print(f"placement usage after all moves: {results['usage_total']} "
          f"(expected {expected}){' LEAKED' if leaked else ''}", flush=True)


def run(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {"servers": args.servers, "hosts": args.hosts,
                               "clients": args.clients, "backend": args.backend}
    with tempfile.TemporaryDirectory() as tmp, \
            servers.database(args.backend, Path(tmp), "moves") as db_url:
        with servers.serve_all(db_url, Path(tmp), sim_hosts=args.hosts) as server:
            last_flavor, dead = _moves(server, args, results)
        # The dead host's agent comes back: the same process starts again on this database.
        with servers.serve_all(db_url, Path(tmp), sim_hosts=args.hosts) as server:
            _source_back(f"{server.url}/compute/v2.1", dead, results)
            _audit(f"{server.url}/placement", args.servers, last_flavor, results)
        if not args.no_counts:
            with servers.database(args.backend, Path(tmp), "counts") as count_url:
                results["sql"] = move_counts.report(
                    move_counts.count_resize_confirm(count_url, setup))
    return results


def _moves(server: servers.Server, args: argparse.Namespace,
           results: dict[str, Any]) -> tuple[str, str]:
    """Every phase on one running process; returns the last flavor and the evacuated host."""
    url = f"{server.url}/compute/v2.1"
    with httpx.Client(base_url=url, headers=HEADERS, timeout=60) as client:
        small, large, image_id = setup(client, f"{server.url}/image")
    boot = {"server": {"name": "vm", "flavorRef": small, "imageRef": image_id,
                       "networks": "none"}}
    print(f"moves: {args.servers} servers on {args.hosts} simulated hosts, "
          f"{args.clients} clients, {args.backend}", flush=True)
    pid = server.process.pid
    ids = _operations(url, args, pid, large, boot, results)
    flavors = [("large2", "large")[r % 2] for r in range(args.rounds)]
    cpu = _cpu_seconds(pid)
    lat, wall = _pairs(url, args.clients, ids, flavors)
    results["resize+confirm"] = _report("resize+confirm", lat, wall, unit="pairs/s",
                                        cpu=_cpu_seconds(pid) - cpu)
    dead = _evacuate(url, args.clients, pid, results)
    results["poll_cpu_ms"] = _poll_cost(url, pid, ids[0])
    print(f"one status poll (GET /servers/{{id}}): {results['poll_cpu_ms']:.2f} ms of server "
          "CPU", flush=True)
    return (flavors[-1] if flavors else large), dead


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    results = run(args)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
