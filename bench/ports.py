"""Benchmark the scheduling of a boot with 2 QoS ports against a boot without ports.

    python bench/ports.py [--hosts 100] [--boots 30] [--backend sqlite|postgresql]
        [--json FILE]

A real `stowage serve --sim-hosts N` process with `[compute] sim_network_devices
= true` (each host has br-physnet0 on physnet0, 10 Gbit/s each way) on a fresh
database. One client boots `--boots` servers with `networks: none`, then as
many with two ports each on a flat physnet0 network whose QoS policy asks
1000 kbps egress and 2000 kbps ingress (the ports are made beforehand, not
timed), alternating so both sets see the same fill.

Per boot it reports two latencies: *scheduling*, the conductor's
`conductor_schedule_and_build_instances` event (the scheduler's allocation
candidates query, filters, weighers and claim: the ports add two suffixed
groups to the query and two device providers to each candidate), and
*boot*, POST /servers to ACTIVE as the client polls it (the ports add the
reads of their requests, the VF-less binding of each port and the network
info). Prints the median and 90th percentile of each; asserts nothing.
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

import moves  # noqa: E402
import servers  # noqa: E402

SETTINGS = "[compute]\nsim_network_devices = true\nupdate_resources_interval = 3600\n"


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--hosts", type=int, default=100)
    p.add_argument("--boots", type=int, default=30, help="boots of each kind")
    p.add_argument("--backend", default="sqlite", help="sqlite|postgresql")
    p.add_argument("--json", help="write raw numbers to this file")
    return p.parse_args(argv)


def _network(url: str, ports: int) -> list[str]:
    """A flat physnet0 network with a subnet, a QoS policy, and `ports` ports using it."""
    with httpx.Client(base_url=f"{url}/network/v2.0", timeout=60,
                      headers={"x-auth-token": "admin"}) as net:
        network = net.post("/networks", json={"network": {
            "name": "net0", "provider:network_type": "flat",
            "provider:physical_network": "physnet0"}}).json()["network"]["id"]
        net.post("/subnets", json={"subnet": {"network_id": network, "cidr": "10.8.0.0/16",
                                              "ip_version": 4}})
        policy = net.post("/qos/policies", json={"policy": {"name": "qp"}}).json()["policy"]
        for direction, kbps in (("egress", 1000), ("ingress", 2000)):
            net.post(f"/qos/policies/{policy['id']}/minimum_bandwidth_rules", json={
                "minimum_bandwidth_rule": {"min_kbps": kbps, "direction": direction}})
        return [net.post("/ports", json={"port": {
            "network_id": network, "qos_policy_id": policy["id"]}}).json()["port"]["id"]
            for _ in range(ports)]


def _stamp(value: str) -> datetime.datetime:
    return datetime.datetime.strptime(value, "%Y-%m-%dT%H:%M:%S.%f")


def _scheduling_ms(client: httpx.Client, server_id: str) -> float:
    """How long the conductor's scheduling event of the server's create lasted."""
    [create] = client.get(f"/servers/{server_id}/os-instance-actions").json()["instanceActions"]
    action = client.get(f"/servers/{server_id}/os-instance-actions/{create['request_id']}"
                        ).json()["instanceAction"]
    [event] = [e for e in action["events"]
               if e["event"] == "conductor_schedule_and_build_instances"]
    return (_stamp(event["finish_time"]) - _stamp(event["start_time"])).total_seconds() * 1000


def _boot(client: httpx.Client, image: str, networks: Any) -> tuple[float, float]:
    start = time.perf_counter()
    resp = client.post("/servers", json={"server": {
        "name": "vm", "flavorRef": "small", "imageRef": image, "networks": networks}})
    if resp.status_code != 202:
        raise SystemExit(f"bench: POST /servers -> {resp.status_code} {resp.text}")
    server_id = resp.json()["server"]["id"]
    moves._wait(client, server_id, "ACTIVE")
    boot_ms = (time.perf_counter() - start) * 1000
    return _scheduling_ms(client, server_id), boot_ms


def _summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"median": statistics.median(ordered),
            "p90": ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]}


def run(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {"hosts": args.hosts, "boots": args.boots,
                               "backend": args.backend}
    with tempfile.TemporaryDirectory() as tmp, \
            servers.database(args.backend, Path(tmp), "ports") as db_url, \
            servers.serve_all(db_url, Path(tmp), args.hosts, SETTINGS) as server:
        compute = f"{server.url}/compute/v2.1"
        with httpx.Client(base_url=compute, headers=moves.HEADERS, timeout=120) as client:
            _, _, image = moves.setup(client, f"{server.url}/image")
            ports = _network(server.url, 2 * args.boots)
            timed: dict[str, list[tuple[float, float]]] = {"none": [], "2 QoS ports": []}
            for i in range(args.boots):
                timed["none"].append(_boot(client, image, "none"))
                pair = [{"port": p} for p in ports[2 * i:2 * i + 2]]
                timed["2 QoS ports"].append(_boot(client, image, pair))
        for kind, pairs in timed.items():
            results[kind] = {"scheduling_ms": _summary([s for s, _ in pairs]),
                             "boot_ms": _summary([b for _, b in pairs])}
    return results


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    results = run(args)
    print(f"{args.hosts} hosts with br-physnet0, {args.boots} boots of each kind, "
          f"{args.backend}:")
    print(f"{'networks':>14}  {'scheduling ms (median / p90)':>30}  {'boot ms (median / p90)':>26}")
    for kind in ("none", "2 QoS ports"):
        s, b = results[kind]["scheduling_ms"], results[kind]["boot_ms"]
        print(f"{kind:>14}  {s['median']:>14.1f} / {s['p90']:<13.1f}  "
              f"{b['median']:>10.1f} / {b['p90']:<13.1f}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
