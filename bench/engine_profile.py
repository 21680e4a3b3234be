"""Time the in-memory allocation-candidates engine (search + render + JSON), no database.

    python bench/engine_profile.py [--repeat N] [--mode cold|warm|churn|schedule]
        [--profile WORKLOAD]

Snapshots are built directly, the way the per-process snapshot cache will
hand them to the engine, so the figures isolate what search.py and render.py
cost per request. Workloads:

    flat-N     N providers, each VCPU 32 / MEMORY_MB 131072 / DISK_GB 2048,
               all in one aggregate, trait HW_CPU_X86_AVX2
    nested-N   N trees of 7 providers::

                        root  DISK_GB, COMPUTE_VOLUME_MULTI_ATTACH
                       /    \\
                 numa0        numa1     VCPU, MEMORY_MB, CUSTOM_FOO
                 /  \\        /  \\
              fpga  fpga   fpga  fpga   FPGA
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import gc
import json
import pstats
import random
import statistics
import time
from collections.abc import Callable

from stowage.placement.candidates import loading, query, render, search
from stowage.placement.candidates.memo import Memo
from stowage.placement.candidates.snapshot import Inventory, Provider, Snapshot
from stowage.web.http import Request
from stowage.web.microversion import Version

AGG = "7a1e9d2c-3b4f-4e5a-8c6d-0f1a2b3c4d5e"
FLAT_QS = (f"resources=VCPU:1,DISK_GB:10,MEMORY_MB:256&member_of={AGG}"
           "&required=HW_CPU_X86_AVX2")
NESTED_QS = ("resources=DISK_GB:10&required=COMPUTE_VOLUME_MULTI_ATTACH"
             "&resources_COMPUTE=VCPU:1,MEMORY_MB:256&required_COMPUTE=CUSTOM_FOO"
             "&resources_FPGA=FPGA:1&group_policy=none&same_subtree=_COMPUTE,_FPGA")
TRAIT_IDS = {"HW_CPU_X86_AVX2": 1, "COMPUTE_VOLUME_MULTI_ATTACH": 2, "CUSTOM_FOO": 3}


def _inv(total: int) -> Inventory:
    return Inventory(total, 0, 1, total, 1, float(total))


def _uuid(pid: int) -> str:
    return f"00000000-0000-4000-8000-{pid:012d}"


def flat(n: int) -> Snapshot:
    providers = {}
    for pid in range(1, n + 1):
        providers[pid] = Provider(
            pid, _uuid(pid), None, pid,
            {"VCPU": _inv(32), "MEMORY_MB": _inv(131072), "DISK_GB": _inv(2048)},
            frozenset({"HW_CPU_X86_AVX2"}), frozenset({AGG}))
    return Snapshot(providers, {"VCPU", "MEMORY_MB", "DISK_GB"}, {"HW_CPU_X86_AVX2"},
                    dict(TRAIT_IDS))


def nested(n: int) -> Snapshot:
    providers: dict[int, Provider] = {}

    def add(pid: int, parent: int | None, root: int, traits: set[str],
            **invs: int) -> None:
        providers[pid] = Provider(pid, _uuid(pid), parent, root,
                                  {rc: _inv(v) for rc, v in invs.items()}, frozenset(traits))

    for tree in range(n):
        root = tree * 7 + 1
        add(root, None, root, {"COMPUTE_VOLUME_MULTI_ATTACH"}, DISK_GB=2048)
        for numa in (root + 1, root + 4):
            add(numa, root, root, {"CUSTOM_FOO"}, VCPU=16, MEMORY_MB=65536)
            add(numa + 1, numa, root, set(), FPGA=1)
            add(numa + 2, numa, root, set(), FPGA=1)
    return Snapshot(providers, {"DISK_GB", "VCPU", "MEMORY_MB", "FPGA"},
                    {"COMPUTE_VOLUME_MULTI_ATTACH", "CUSTOM_FOO"}, dict(TRAIT_IDS))


def parse(qs: str, minor: int) -> query.CandidateRequest:
    req = Request(method="GET", path="/allocation_candidates", query_string=qs,
                  headers={}, body=b"", base_url="", version=Version(1, minor))
    return query.parse_request(req)


def one_request(snap: Snapshot, qs: str, minor: int, memo: Memo | None = None) -> bytes:
    """What the handler does after loading the snapshot."""
    req = parse(qs, minor)
    result = search.search(snap, req, -1, None, memo)
    return render.render_json(snap, req, result, memo)


def churn(snap: Snapshot) -> Snapshot:
    """What a claim does to a worker's snapshot: a successor where one provider's usage grew.

    As in the server, the successor has a new version for that provider's
    tree only, and a new structural index built on first use.
    """
    pid = random.choice(list(snap.providers))
    old = snap.providers[pid]
    invs = {rc: dataclasses.replace(inv, used=inv.used + 1)
            for rc, inv in old.inventories.items()}
    new = snap.with_changes({pid: dataclasses.replace(old, inventories=invs)})
    new.known_classes, new.known_traits = snap.known_classes, snap.known_traits
    return new


# bench/schedule.py's flavors: (VCPU, MEMORY_MB, DISK_GB)
FLAVORS = ((1, 512, 1), (2, 2048, 20), (4, 4096, 40), (8, 16384, 80))


def flavored(qs: str, flavor: tuple[int, int, int]) -> str:
    vcpu, ram, disk = flavor
    return (qs.replace("VCPU:1", f"VCPU:{vcpu}").replace("MEMORY_MB:256", f"MEMORY_MB:{ram}")
            .replace("DISK_GB:10", f"DISK_GB:{disk}"))


def pick(snap: Snapshot, body: bytes, rng: random.Random) -> dict[int, Provider]:
    """The scheduler's claim on one of the first five candidates, as the cache sees it.

    Returns the claimed providers with their usage grown (as cache.py
    reloads them); `snap.with_changes` of that is the snapshot after the claim.
    """
    requests = json.loads(body)["allocation_requests"]
    if not requests or not isinstance(requests[0]["allocations"], dict):
        return {}
    usage: dict[int, dict[str, int]] = {}
    for uuid, entry in rng.choice(requests[:5])["allocations"].items():
        pid = snap.by_uuid[uuid]
        usage[pid] = {rc: inv.used + entry["resources"].get(rc, 0)
                      for rc, inv in snap.providers[pid].inventories.items()}
    return loading.with_usage(snap.providers, usage, usage)


def cases() -> list[tuple[str, Callable[[], Snapshot], str, int]]:
    out: list[tuple[str, Callable[[], Snapshot], str, int]] = []
    for n in (1000, 10_000):
        for suffix, extra in (("", ""), (" limit=1", "&limit=1"), (" limit=50", "&limit=50")):
            out.append((f"flat-{n}{suffix}", lambda n=n: flat(n), FLAT_QS + extra, 39))
    out.append(("flat-1000 1.10", lambda: flat(1000), FLAT_QS.split("&member_of")[0], 10))
    out.append(("flat-1000 1.12", lambda: flat(1000), FLAT_QS.split("&member_of")[0], 12))
    out.append(("flat-1000 1.28", lambda: flat(1000), FLAT_QS, 28))
    for n in (1000, 10_000):
        for suffix, extra in (("", ""), (" limit=50", "&limit=50")):
            out.append((f"nested-{n}{suffix}", lambda n=n: nested(n), NESTED_QS + extra, 39))
    return out


def timeit(snap: Snapshot, qs: str, minor: int, repeat: int,
           mode: str) -> tuple[float, float, int]:
    """Median and best wall-clock ms; the best is the steadier figure on a busy machine.

    mode "cold": no memo, every request computes everything; "warm": the
    worker's memo and an unchanged snapshot; "churn": the memo, with one
    provider changed (as by a claim) before every request; "schedule": the
    scheduler's loop (bench/schedule.py), a flavor picked at random from four
    per request and a claim on one of the first candidates after it, the
    claim's successor snapshot timed with the request.
    """
    memo = None if mode == "cold" else Memo()
    body = one_request(snap, qs, minor, memo)  # warm up (and build the snapshot's index)
    times = []
    rng = random.Random(1)
    for _ in range(repeat):
        if mode == "churn":
            snap = churn(snap)
        claimed = pick(snap, body, rng) if mode == "schedule" else {}
        start = time.perf_counter()
        if mode == "schedule":
            known = snap.known_classes, snap.known_traits
            snap = snap.with_changes(claimed, in_place=True)  # as the cache does
            snap.known_classes, snap.known_traits = known
            body = one_request(snap, flavored(qs, rng.choice(FLAVORS)), minor, memo)
        else:
            one_request(snap, qs, minor, memo)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), min(times), len(json.loads(body)["allocation_requests"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--profile", help="workload name to run under cProfile")
    parser.add_argument("--mode", choices=("cold", "warm", "churn", "schedule"), default="cold",
                        help="memo use, see timeit()")
    parser.add_argument("--no-freeze", action="store_true",
                        help="leave snapshots to the cyclic GC (the server freezes them)")
    opts = parser.parse_args()
    random.seed(0)
    wanted = [c for c in cases() if not opts.profile or c[0] == opts.profile]
    snaps = {name.split(" ")[0]: build() for name, build, _, _ in wanted}
    if not opts.no_freeze:
        gc.freeze()  # as SnapshotCache does after publishing
    for name, _, qs, minor in wanted:
        snap = snaps[name.split(" ")[0]]
        if opts.profile:
            prof = cProfile.Profile()
            prof.enable()
            for _ in range(opts.repeat):
                one_request(snap, qs, minor)
            prof.disable()
            pstats.Stats(prof).sort_stats("cumulative").print_stats(30)
            return
        median, best, count = timeit(snap, qs, minor, opts.repeat, opts.mode)
        print(f"{name:<24} median {median:8.2f} ms  best {best:8.2f} ms  ({count} candidates)")


if __name__ == "__main__":
    main()
