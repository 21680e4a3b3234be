"""CPU per scheduling decision: stowage's scheduler against Nova 34.0.0's, same answer.

    python bench/scheduler.py [--hosts 1000,10000] [--candidates 1000]
        [--repeats 15] [--targets stowage,nova] [--json FILE]

One decision is one instance, from the scheduler's request to the chosen host
and its alternates. stowage is measured two ways: `in-process`, the way
`stowage serve` runs it (Placement in the same process: the decision
includes Placement's candidates work, the snapshot refresh and the search,
read as objects), and `JSON`, as against a remote Placement (from the
answer's bytes, decoded by the scheduler). Nova gets the same answer's bytes.
For each cloud size both schedulers get the same cloud -- N hosts, each a
nova-compute service and one compute node, 2% of them forced down and 3%
disabled -- and the same answer: Placement's first C candidates (by
provider), with the provider summaries (capacity, usage and ~70 traits each,
as a real answer carries) of microversion 1.39.

- stowage: `Scheduler.select_destinations` in this process, on a SQLite
  database that also holds a real Placement (`placement.app.build_app`)
  with one provider per host (inventories, ~70 traits, usage held by one
  consumer per provider). The answer both sides get is that Placement's
  answer to the scheduler's own query. In-process, the scheduler reads the
  candidates engine; as JSON, its real `PlacementClient` over a transport
  double hands out the answer's bytes. Either way claims are taken by a
  double (claims are not part of a decision; bench/ops.py measures them).
- Nova: `nova.scheduler.manager.SchedulerManager.select_destinations` with its
  `HostManager`, default filters and all weighers, driven by
  `bench/scheduler_nova.py` in the side venv `.venv-nova` (tests/nova/environment.py
  makes it) inside Nova's own test fixtures (in-memory SQLite databases, one
  cell); its report client is a double that parses the same bytes and takes
  every claim.

CPU is `time.process_time()` of the process around each decision, after two
warm-up decisions; the median of `--repeats` is printed with the ratio, and
stowage's breakdown (candidates: the engine's work in-process, the decoding
as JSON; reading the candidates' services and compute nodes, host states,
filters, weighers). The two ways of stowage must choose the same hosts.
Each side checks its own selections: the chosen host is a candidate, up and
enabled, and its allocation request one the answer offered (the bench's
audit: nothing is claimed for real).
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
from stowage.compute.scheduler.host_state import build_host_states, candidate_roots  # noqa: E402
from stowage.compute.scheduler.manager import Scheduler  # noqa: E402
from stowage.compute.scheduler.request import SchedulingRequest, candidate_query  # noqa: E402
from stowage.compute.scheduler.weighers import weigh, weighers_for  # noqa: E402
from stowage.config import ComputeSettings  # noqa: E402
from stowage.db import Database, schema  # noqa: E402
from stowage.placement.app import build_app  # noqa: E402
from stowage.placement.client import Holding, PlacementClient  # noqa: E402
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


def placement(db: Database, hosts: Sequence[dict[str, Any]]) -> PlacementClient:
    """A real Placement on `db` with one provider per host, through its API in-process."""
    from stowage.config import Settings

    client = PlacementClient.local(build_app(Settings(), db))
    usage: dict[str, Holding] = {}
    for h in hosts:
        client.ensure_provider(h["uuid"], h["host"])
        client.set_inventories(h["uuid"], {
            "VCPU": {"total": h["vcpus"], "allocation_ratio": 16.0},
            "MEMORY_MB": {"total": h["memory_mb"], "allocation_ratio": 1.5},
            "DISK_GB": {"total": h["local_gb"], "allocation_ratio": 1.0}})
        client.set_traits(h["uuid"], TRAITS)
        usage[str(uuidlib.uuid5(uuidlib.NAMESPACE_OID, "used-" + h["uuid"]))] = Holding(
            {h["uuid"]: {rc: n for rc, n in h["used"].items() if n}}, None, PROJECT, USER,
            "INSTANCE")
    items = list(usage.items())
    for start in range(0, len(items), 1000):
        client.write_many(dict(items[start:start + 1000]))
    return client


class NoClaims:
    """The real Placement client for everything but claims, which it takes without
    writing (claims are not part of a decision): every decision sees the same state."""

    def __init__(self, real: PlacementClient) -> None:
        self.real = real
        self.claims = 0

    def served_app(self) -> Any:
        return self.real.served_app()

    def allocation_candidates_body(self, params: Sequence[tuple[str, str]]) -> bytes:
        return self.real.allocation_candidates_body(params)

    def claim(self, *args: Any, **kw: Any) -> None:
        self.claims += 1


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


def breakdown(sched: Scheduler, query: Sequence[tuple[str, str]]) -> dict[str, float]:
    """CPU ms of each stage of one decision, run one after the other as the manager does."""
    req = SchedulingRequest.from_spec(spec(str(uuidlib.uuid4())), [str(uuidlib.uuid4())])
    got, offer = _cpu(lambda: sched.offer(query))
    roots = candidate_roots(offer)
    read, nodes = _cpu(lambda: sched._nodes(
        req, lambda conn: node_reader.rows_by_uuid(conn, roots)))
    states_ms, states = _cpu(lambda: build_host_states(nodes, offer))
    rejections: list[Any] = []
    filt, passed = _cpu(lambda: sched_filters.run_filters(
        states, req, rejections, sched_filters.filters_for(sched.settings.enabled_filters)))
    weigh_ms, _ = _cpu(lambda: weigh(passed, req, weighers_for(sched.settings.weigher)))
    return {"candidates": got, "read services+nodes": read, "host states": states_ms,
            "filters": filt, "weighers": weigh_ms}


def decisions(sched: Scheduler, hosts: list[dict[str, Any]], body: bytes | None,
              repeats: int) -> tuple[list[float], list[list[dict[str, Any]]]]:
    """CPU ms of `repeats` decisions after two warm-ups, each checked; the last selections."""
    samples: list[float] = []
    selections: list[list[dict[str, Any]]] = []
    for i in range(repeats + 2):
        instance = str(uuidlib.uuid4())
        ms, selections = _cpu(lambda i=instance: sched.select_destinations(spec(i), [i]))
        if body is not None:
            check(selections, hosts, body)
        if i >= 2:
            samples.append(ms)
    return samples, selections


def _figures(samples: list[float], selections: list[list[dict[str, Any]]],
             parts: list[dict[str, float]]) -> dict[str, Any]:
    return {"median_ms": statistics.median(samples), "min_ms": min(samples),
            "samples": samples, "chosen": [s["host"] for s in selections[0]],
            "breakdown": {k: statistics.median(p[k] for p in parts) for k in parts[0]}}


def run_stowage(db: Database, real: PlacementClient, hosts: list[dict[str, Any]],
                candidates: int, repeats: int) -> tuple[dict[str, Any], bytes]:
    """Both ways of stowage over the same Placement; and the JSON answer Nova is fed."""
    # No heartbeat runs here: a long run (10,000 candidates on a busy machine) would
    # outlive service_down_time and see every host go down (Nova's half does the same).
    settings = dataclasses.replace(ComputeSettings(), service_down_time=86400.0,
                                   max_placement_results=candidates)
    local = NoClaims(real)
    sched = Scheduler(settings, db, local)
    assert sched._local is not None, "the bench's Placement is not read in-process"
    instance = str(uuidlib.uuid4())
    query = candidate_query(SchedulingRequest.from_spec(spec(instance), [instance]),
                            candidates, None, [])
    body = real.allocation_candidates_body(query)
    over_json = Scheduler(settings, db, PlacementClient(send=AnswerTransport(body)),
                          read_in_process=False)
    found: dict[str, Any] = {}
    for name, which in (("in-process", sched), ("JSON", over_json)):
        samples, selections = decisions(which, hosts, body, repeats)
        parts = [breakdown(which, query) for _ in range(repeats)]
        found[name] = _figures(samples, selections, parts)
    if found["in-process"]["chosen"] != found["JSON"]["chosen"]:
        raise AssertionError(f"in-process and JSON chose differently: {found}")
    return found, body


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
        with tempfile.TemporaryDirectory() as tmp:
            db = Database(f"sqlite:///{tmp}/bench.db")
            schema.upgrade(db)
            populate(db, hosts)
            real = placement(db, hosts)
            for c in (int(x) for x in args.candidates.split(",")):
                if c > n:
                    continue
                stowage, body = run_stowage(db, real, hosts, c, args.repeats)
                row: dict[str, Any] = {"hosts": n, "candidates": c, "answer_bytes": len(body)}
                if "stowage" in targets:
                    row["stowage"] = stowage
                if "nova" in targets:
                    row["nova"] = run_nova(hosts, body, args.repeats)
                rows.append(row)
                _print(row)
            db.engine.dispose()
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


def _print(row: dict[str, Any]) -> None:
    s, nv = row.get("stowage"), row.get("nova")
    head = (f"hosts={row['hosts']} candidates={row['candidates']} "
            f"answer={row['answer_bytes'] / 1e6:.2f} MB")
    figures = []
    if s:
        figures += [f"stowage in-process {s['in-process']['median_ms']:.1f} ms",
                    f"stowage JSON {s['JSON']['median_ms']:.1f} ms"]
    if nv:
        figures.append(f"nova {nv['median_ms']:.1f} ms")
    if s and nv:
        figures.append(f"ratio nova/stowage in-process "
                       f"{nv['median_ms'] / s['in-process']['median_ms']:.1f}x, "
                       f"JSON {nv['median_ms'] / s['JSON']['median_ms']:.1f}x")
    print(f"{head}: " + ", ".join(figures) + "  (CPU per decision, median)")
    if s:
        for way in ("in-process", "JSON"):
            print(f"  stowage {way} (min {s[way]['min_ms']:.1f}) breakdown: " + ", ".join(
                f"{k} {v:.2f}" for k, v in s[way]["breakdown"].items()) + " ms")
        print(f"  stowage chose {s['JSON']['chosen'][0]}, alternates {s['JSON']['chosen'][1:]}")
    if nv:
        print("  nova breakdown: " + ", ".join(
            f"{k} {v:.2f}" for k, v in nv.get("breakdown", {}).items()) + " ms")
        print(f"  nova chose {nv['chosen'][0]}, alternates {nv['chosen'][1:]}")
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
