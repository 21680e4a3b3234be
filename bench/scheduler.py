"""CPU per scheduling decision: stowage's scheduler against Nova 34.0.0's, same answer.

    python bench/scheduler.py [--hosts 1000,10000] [--candidates 1000]
        [--repeats 15] [--targets stowage,nova] [--json FILE]

One decision is one instance: from Placement's allocation candidates answer
(the JSON bytes, parsed by the scheduler as it would parse the response) to
the chosen host and its alternates. For each cloud size both schedulers get
the same cloud -- N hosts, each a nova-compute service and one compute node,
2% of them forced down and 3% disabled -- and the same answer: C candidates
picked at random among the hosts, with the provider summaries (capacity,
usage and ~70 traits each, as a real answer carries) Placement 1.36+ sends.

- stowage: `Scheduler.select_destinations` in this process, on a SQLite
  database; its Placement is a double that hands out the answer's bytes and
  takes every claim (claims are not part of a decision).
- Nova: `nova.scheduler.manager.SchedulerManager.select_destinations` with its
  `HostManager`, default filters and all weighers, driven by
  `bench/scheduler_nova.py` in the side venv `.venv-nova` (tests/nova/environment.py
  makes it) inside Nova's own test fixtures (in-memory SQLite databases, one
  cell); its report client is a double that parses the same bytes and takes
  every claim.

CPU is `time.process_time()` of the process around each decision, after two
warm-up decisions; the median of `--repeats` is printed with the ratio, and
stowage's breakdown (parse, reading the candidates' services and compute
nodes, host states, filters, weighers). Each side checks its own selections:
the chosen host is a candidate, up and enabled, and its allocation request
one the answer offered (the bench's audit: nothing is claimed for real).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid as uuidlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO))

import os_traits  # noqa: E402
import sqlalchemy as sa  # noqa: E402

from stowage.compute import tables as t  # noqa: E402
from stowage.compute.scheduler import filters as sched_filters  # noqa: E402
from stowage.compute.scheduler import node_reader  # noqa: E402
from stowage.compute.scheduler.answer import decode as answer_decode  # noqa: E402
from stowage.compute.scheduler.host_state import build_host_states, candidate_roots  # noqa: E402
from stowage.compute.scheduler.manager import Scheduler  # noqa: E402
from stowage.compute.scheduler.request import SchedulingRequest  # noqa: E402
from stowage.compute.scheduler.weighers import weigh, weighers_for  # noqa: E402
from stowage.config import ComputeSettings  # noqa: E402
from stowage.db import Database, schema  # noqa: E402
from stowage.placement.client import PlacementClient  # noqa: E402
from stowage.timeutil import utcnow  # noqa: E402
from stowage.web.service_client import Answer  # noqa: E402

PROJECT, USER = "bench-project", "bench-user"
FLAVOR = {"id": 1, "flavorid": "1", "name": "m1.small", "vcpus": 1, "memory_mb": 512,
          "root_gb": 1, "ephemeral_gb": 0, "swap": 0, "extra_specs": {}}
TRAITS = sorted(t for t in os_traits.get_traits() if t.startswith(("HW_CPU_X86", "COMPUTE_")))[:70]
FORCED_DOWN, DISABLED = 0.02, 0.03


def node_uuid(i: int) -> str:
    return str(uuidlib.uuid5(uuidlib.NAMESPACE_OID, f"scheduler-bench-node-{i}"))


def cloud(hosts: int, seed: int = 7) -> list[dict[str, Any]]:
    """The hosts both schedulers see: name, node uuid, state, capacity."""
    rng = random.Random(seed)
    found = []
    for i in range(hosts):
        roll = rng.random()
        found.append({"host": f"host{i:05d}", "uuid": node_uuid(i), "id": i + 1,
                      "forced_down": roll < FORCED_DOWN,
                      "disabled": FORCED_DOWN <= roll < FORCED_DOWN + DISABLED,
                      "vcpus": 64, "memory_mb": 262144, "local_gb": 4000,
                      "used": {"VCPU": rng.randrange(0, 60),
                               "MEMORY_MB": rng.randrange(0, 250000),
                               "DISK_GB": rng.randrange(0, 3900)}})
    return found


def answer(hosts: Sequence[dict[str, Any]], candidates: int, seed: int = 11) -> bytes:
    """Placement's JSON answer for FLAVOR with `candidates` of the hosts (microversion 1.36)."""
    rng = random.Random(seed)
    chosen = rng.sample(list(hosts), min(candidates, len(hosts)))
    wanted = {"VCPU": FLAVOR["vcpus"], "MEMORY_MB": FLAVOR["memory_mb"],
              "DISK_GB": FLAVOR["root_gb"]}
    requests, summaries = [], {}
    for h in chosen:
        requests.append({"allocations": {h["uuid"]: {"resources": dict(wanted)}},
                         "mappings": {"": [h["uuid"]]}})
        capacity = {"VCPU": h["vcpus"] * 16, "MEMORY_MB": int(h["memory_mb"] * 1.5),
                    "DISK_GB": h["local_gb"]}
        summaries[h["uuid"]] = {
            "resources": {rc: {"capacity": capacity[rc], "used": h["used"][rc]}
                          for rc in wanted},
            "traits": TRAITS, "parent_provider_uuid": None, "root_provider_uuid": h["uuid"]}
    return json.dumps({"allocation_requests": requests, "provider_summaries": summaries}
                      ).encode()


def populate(db: Database, hosts: Sequence[dict[str, Any]]) -> None:
    now = utcnow()
    old = now.replace(year=now.year - 1)
    with db.write() as conn:
        conn.execute(sa.insert(t.services), [
            {"id": h["id"], "uuid": str(uuidlib.uuid5(uuidlib.NAMESPACE_OID, h["host"])),
             "host": h["host"], "binary": "nova-compute", "topic": "compute",
             "availability_zone": None, "report_count": 1, "disabled": h["disabled"],
             "disabled_reason": "bench" if h["disabled"] else None,
             "forced_down": h["forced_down"], "last_seen_up": old if h["forced_down"] else now,
             "version": 66, "created_at": now, "deleted": 0} for h in hosts])
        conn.execute(sa.insert(t.compute_nodes), [
            {"id": h["id"], "uuid": h["uuid"], "service_id": h["id"], "host": h["host"],
             "hypervisor_hostname": h["host"], "hypervisor_type": "fake",
             "hypervisor_version": 1000, "vcpus": h["vcpus"], "memory_mb": h["memory_mb"],
             "local_gb": h["local_gb"], "vcpus_used": h["used"]["VCPU"],
             "memory_mb_used": h["used"]["MEMORY_MB"], "local_gb_used": h["used"]["DISK_GB"],
             "running_vms": 0, "cpu_allocation_ratio": 16.0, "ram_allocation_ratio": 1.5,
             "disk_allocation_ratio": 1.0, "pci_stats": {}, "created_at": now, "deleted": 0}
            for h in hosts])


class AnswerTransport:
    """The wire under the real `PlacementClient`: the same answer's bytes for every
    GET /allocation_candidates (parsed per decision by the client, as a response is),
    204 for every claim (claims are not part of a decision)."""

    def __init__(self, body: bytes) -> None:
        self.body = body
        self.claims = 0

    def __call__(self, method: str, path: str, content: bytes | None,
                 params: Sequence[tuple[str, str]] | None) -> Answer:
        if method == "GET" and path == "/allocation_candidates":
            return Answer(200, self.body)
        if method == "PUT" and path.startswith("/allocations/"):
            self.claims += 1
            return Answer(204, b"")
        raise AssertionError(f"the bench does not answer {method} {path}")


def spec(instance: str) -> dict[str, Any]:
    return {"instance_uuid": instance, "project_id": PROJECT, "user_id": USER,
            "flavor": dict(FLAVOR), "is_volume_backed": False, "image": None,
            "availability_zone": None, "scheduler_hints": {}, "instance_group": None,
            "ignore_hosts": [], "requested_destination": None, "num_instances": 1,
            "move": False}


def _cpu(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.process_time()
    result = fn()
    return (time.process_time() - start) * 1000, result


def check(selections: list[list[dict[str, Any]]], hosts: Sequence[dict[str, Any]],
          body: bytes) -> None:
    """The bench's audit: the chosen host is a candidate, up and enabled, with an offered
    allocation request."""
    offered = {next(iter(ar["allocations"])): ar["allocations"]
               for ar in json.loads(body)["allocation_requests"]}
    by_uuid = {h["uuid"]: h for h in hosts}
    for sel in selections[0]:
        h = by_uuid[sel["compute_node_uuid"]]
        assert not (h["forced_down"] or h["disabled"]), f"{h['host']} is not usable"
        assert sel["allocation_request"]["allocations"] == offered[h["uuid"]]


def breakdown(sched: Scheduler, placement: PlacementClient) -> dict[str, float]:
    """CPU ms of each stage of one decision, run one after the other as the manager does."""
    req = SchedulingRequest.from_spec(spec(str(uuidlib.uuid4())), [str(uuidlib.uuid4())])
    parse, candidates = _cpu(lambda: answer_decode(placement.allocation_candidates_body([])))
    roots = candidate_roots(candidates)
    read, nodes = _cpu(lambda: sched._nodes(
        req, lambda conn: node_reader.rows_by_uuid(conn, roots)))
    states_ms, states = _cpu(lambda: build_host_states(nodes, candidates))
    rejections: list[Any] = []
    filt, passed = _cpu(lambda: sched_filters.run_filters(
        states, req, rejections, sched_filters.filters_for(sched.settings.enabled_filters)))
    weigh_ms, _ = _cpu(lambda: weigh(passed, req, weighers_for(sched.settings.weigher)))
    return {"parse": parse, "read services+nodes": read, "host states": states_ms,
            "filters": filt, "weighers": weigh_ms}


def run_stowage(hosts: list[dict[str, Any]], body: bytes, repeats: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        db = Database(f"sqlite:///{tmp}/bench.db")
        schema.upgrade(db)
        populate(db, hosts)
        placement = PlacementClient(send=AnswerTransport(body))
        # No heartbeat runs here: a long run (10,000 candidates on a busy machine) would
        # outlive service_down_time and see every host go down (Nova's half does the same).
        settings = dataclasses.replace(ComputeSettings(), service_down_time=86400.0)
        sched = Scheduler(settings, db, placement)
        samples = []
        for i in range(repeats + 2):
            instance = str(uuidlib.uuid4())
            ms, selections = _cpu(lambda i=instance: sched.select_destinations(spec(i), [i]))
            check(selections, hosts, body)
            if i >= 2:
                samples.append(ms)
        parts = [breakdown(sched, placement) for _ in range(repeats)]
        db.engine.dispose()
    return {"median_ms": statistics.median(samples), "samples": samples,
            "chosen": [s["host"] for s in selections[0]],
            "breakdown": {k: statistics.median(p[k] for p in parts) for k in parts[0]}}


def run_nova(hosts: list[dict[str, Any]], body: bytes, repeats: int) -> dict[str, Any]:
    from tests.nova.environment import ensure_environment

    python = ensure_environment()
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "cloud.json").write_text(json.dumps(hosts))
        (Path(tmp) / "answer.json").write_bytes(body)
        out = Path(tmp) / "result.json"
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        subprocess.run([str(python), str(REPO / "bench" / "scheduler_nova.py"),
                        "--cloud", str(Path(tmp) / "cloud.json"),
                        "--answer", str(Path(tmp) / "answer.json"),
                        "--repeats", str(repeats), "--out", str(out)],
                       check=True, env=env, cwd=tmp)
        return dict(json.loads(out.read_text()))


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--hosts", default="1000,10000", help="comma-separated cloud sizes")
    p.add_argument("--candidates", default="1000", help="comma-separated candidate counts")
    p.add_argument("--repeats", type=int, default=15)
    p.add_argument("--targets", default="stowage,nova")
    p.add_argument("--json", help="also write the figures here")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    targets = set(args.targets.split(","))
    rows = []
    for n in (int(x) for x in args.hosts.split(",")):
        hosts = cloud(n)
        for c in (int(x) for x in args.candidates.split(",")):
            if c > n:
                continue
            body = answer(hosts, c)
            row: dict[str, Any] = {"hosts": n, "candidates": c, "answer_bytes": len(body)}
            if "stowage" in targets:
                row["stowage"] = run_stowage(hosts, body, args.repeats)
            if "nova" in targets:
                row["nova"] = run_nova(hosts, body, args.repeats)
            rows.append(row)
            _print(row)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


def _print(row: dict[str, Any]) -> None:
    s, nv = row.get("stowage"), row.get("nova")
    head = (f"hosts={row['hosts']} candidates={row['candidates']} "
            f"answer={row['answer_bytes'] / 1e6:.2f} MB")
    figures = []
    if s:
        figures.append(f"stowage {s['median_ms']:.1f} ms")
    if nv:
        figures.append(f"nova {nv['median_ms']:.1f} ms")
    if s and nv:
        figures.append(f"ratio nova/stowage {nv['median_ms'] / s['median_ms']:.1f}x")
    print(f"{head}: " + ", ".join(figures) + "  (CPU per decision, median)")
    if s:
        print("  stowage breakdown: " + ", ".join(
            f"{k} {v:.2f}" for k, v in s["breakdown"].items()) + " ms")
        print(f"  stowage chose {s['chosen'][0]}, alternates {s['chosen'][1:]}")
    if nv:
        print("  nova breakdown: " + ", ".join(
            f"{k} {v:.2f}" for k, v in nv.get("breakdown", {}).items()) + " ms")
        print(f"  nova chose {nv['chosen'][0]}, alternates {nv['chosen'][1:]}")
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
