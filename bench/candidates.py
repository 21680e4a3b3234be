"""Benchmark GET /allocation_candidates: stowage against upstream Placement 16.0.0.

    python bench/candidates.py [--backend sqlite|postgresql] [--sizes 1000,10000]
        [--targets stowage,upstream] [--topologies flat,nested] [--runs 20]
        [--workers 2] [--quick] [--json FILE]

For each backend, topology and size, each target in turn gets a fresh
database and a real server on a loopback port; the topology is built over
HTTP, the candidate sets are compared between targets, then latency (no
limit, limit=1, limit=50), latency again after claiming 10% of the trees,
and throughput with 10 concurrent clients are measured. It prints figures
and asserts nothing: numbers on a shared 2-core machine are noisy.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import measure  # noqa: E402
import report  # noqa: E402
import servers  # noqa: E402
import sweep  # noqa: E402
import topologies  # noqa: E402

LIMITS: tuple[tuple[str, int | None], ...] = (("none", None), ("1", 1), ("50", 50))


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", default="sqlite", help="sqlite|postgresql (comma list ok)")
    p.add_argument("--sizes", default="1000", help="comma-separated N")
    p.add_argument("--targets", default="stowage,upstream")
    p.add_argument("--topologies", default="flat,nested")
    p.add_argument("--runs", type=int, default=20, help="timed runs per query")
    p.add_argument("--workers", type=int, default=2, help="server workers, both targets")
    p.add_argument("--requests", type=int, default=500, help="throughput requests")
    p.add_argument("--claim", type=float, default=0.10, help="fraction of trees to claim")
    p.add_argument("--threads", type=int, default=8, help="builder threads")
    p.add_argument("--quick", action="store_true", help="N=50, 5 runs, 100 requests")
    p.add_argument("--json", help="write raw numbers to this file")
    args = p.parse_args(argv)
    if args.quick:
        args.sizes, args.runs, args.requests = "50", 5, 100
    return args


def _fingerprint(body: dict[str, Any]) -> tuple[int, str]:
    """Count and a digest of the candidate set, independent of order.

    Provider uuids are derived from names, so equal sets hash equal across targets.
    """
    reqs = sorted(json.dumps(r["allocations"], sort_keys=True)
                  for r in body["allocation_requests"])
    return len(reqs), hashlib.sha256("\n".join(reqs).encode()).hexdigest()[:12]


def _measure_phase(base: str, query: str, runs: int, label: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, limit in LIMITS:
        out[key] = measure.latency(base, query, limit, runs)
        print(f"  {label} {key:>4}: median {out[key]['median_ms']:.1f} ms, "
              f"p95 {out[key]['p95_ms']:.1f} ms", flush=True)
    return out


def _run_target(target: str, backend: str, topo: str, size: int,
                args: argparse.Namespace, workdir: Path, venv: Path | None) -> dict[str, Any]:
    query = topologies.QUERIES[topo]
    res: dict[str, Any] = {"count": {}, "digest": {}, "latency": {}, "throughput": {}}
    tdir = workdir / f"{backend}-{topo}-{size}"
    label = f"[{target}]"
    with servers.database(backend, tdir, target) as url, \
            servers.serve(target, url, args.workers, tdir, venv) as srv:
        print(f"{label} serving at {srv.url}, log {srv.log}", flush=True)
        built = topologies.build(srv.url, topo, size, args.threads, label)
        res["build_s"], res["build_retries"] = built.seconds, built.retried
        print(f"{label} built in {built.seconds:.1f} s "
              f"({built.retried} requests retried after a 5xx)", flush=True)
        for phase in ("fresh", "claimed"):
            if phase == "claimed":
                t0 = time.monotonic()
                res["claimed_consumers"] = measure.claim(srv.url, query, built.tree_of,
                                                         args.claim)
                print(f"{label} claimed {res['claimed_consumers']} consumers in "
                      f"{time.monotonic() - t0:.1f} s", flush=True)
            count, digest = _fingerprint(measure.candidates(srv.url, query))
            res["count"][phase], res["digest"][phase] = count, digest
            print(f"{label} {phase}: {count} allocation requests (set {digest})", flush=True)
            res["latency"][phase] = _measure_phase(srv.url, query, args.runs,
                                                   f"{label} {phase}")
        for key, limit, total in (("50", 50, args.requests),
                                  ("none", None, max(50, args.requests // 5))):
            res["throughput"][key] = tp = measure.throughput(srv.url, query, limit, total)
            print(f"{label} throughput {key}: {tp['rps']:.1f} req/s "
                  f"({tp['requests']:.0f} in {tp['seconds']:.1f} s, "
                  f"{tp['errors']:.0f} errors)", flush=True)
    return res


def _compare(res: dict[str, Any], topo: str) -> list[str]:
    """Loud warnings when the targets disagree on the candidates."""
    warnings = []
    if "stowage" not in res or "upstream" not in res:
        return warnings
    for phase in ("fresh", "claimed"):
        s, u = res["stowage"], res["upstream"]
        if s["count"][phase] != u["count"][phase]:
            warnings.append(f"!!! MISMATCH {topo} {phase}: stowage returned "
                            f"{s['count'][phase]} allocation requests, upstream "
                            f"{u['count'][phase]} for ?{topologies.QUERIES[topo]}")
        elif phase == "fresh" and s["digest"][phase] != u["digest"][phase]:
            warnings.append(f"!!! MISMATCH {topo} fresh: same count but different "
                            f"candidate sets for ?{topologies.QUERIES[topo]}")
    return warnings


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)

    def describe(title: str, res: dict[str, Any], topo: str) -> str:
        return "\n".join([report.table(title, res), *_compare(res, topo)])

    results = sweep.run(args, "bench", "", _run_target, describe)
    if results is None:
        return 130
    print("\n" + report.summary(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
