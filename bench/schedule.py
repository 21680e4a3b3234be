"""Benchmark the scheduler's real loop: ask for candidates, claim one, ask again.

    python bench/schedule.py [--backend sqlite,postgresql] [--sizes 1000,10000]
        [--targets stowage,upstream] [--topologies flat,nested]
        [--clients 1,4,10] [--limits none,50] [--seconds 10] [--workers 1]
        [--quick] [--json FILE]

Each client is a process of its own (as schedulers are) and runs, on one
kept-alive connection, the loop a scheduler runs: GET
/allocation_candidates for a flavor picked at random from four, then PUT
/allocations/{new consumer} with one of the first candidates. A 409 (someone
else took the room first) counts as a conflict and the loop goes on. Every
target gets a fresh database and topology per backend, topology and size;
the phases (clients x limit) then run one after another on it.

After each phase the claims are audited -- the project's usage must equal
the sum of what was claimed with a 204, and no provider that was claimed
against may hold more than its capacity -- and then deleted, so every phase
starts on an empty cloud. Prints figures; asserts nothing (absolute numbers
on a shared 2-core machine are noisy) except the audit, which makes the run
exit non-zero when a target lost or overcommitted.
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import random
import statistics
import sys
import time
import uuid
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))

import phase_cpu  # noqa: E402
import servers  # noqa: E402
import sweep  # noqa: E402
import topologies  # noqa: E402
from client import HEADERS, call, new_client, thread_client  # noqa: E402

PROJECT = str(uuid.uuid5(uuid.NAMESPACE_OID, "schedule-bench-project"))
USER = str(uuid.uuid5(uuid.NAMESPACE_OID, "schedule-bench-user"))
# (VCPU, MEMORY_MB, DISK_GB): four flavors, as a cloud offers.
FLAVORS = ((1, 512, 1), (2, 2048, 20), (4, 4096, 40), (8, 16384, 80))
# "One of the first candidates": a scheduler weighs a few and takes the best.
FIRST = 5
_PUT_HEADERS = dict(HEADERS, **{"Content-Type": "application/json"})


def _query(topo: str, flavor: tuple[int, int, int]) -> str:
    vcpu, ram, disk = flavor
    if topo == "flat":
        return (f"resources=VCPU:{vcpu},MEMORY_MB:{ram},DISK_GB:{disk}"
                f"&member_of={topologies.AGGREGATE}&required=HW_CPU_X86_AVX2")
    return (f"resources=DISK_GB:{disk}&required=COMPUTE_VOLUME_MULTI_ATTACH"
            f"&resources_COMPUTE=VCPU:{vcpu},MEMORY_MB:{ram}&required_COMPUTE=CUSTOM_FOO"
            "&resources_FPGA=FPGA:1&group_policy=none&same_subtree=_COMPUTE,_FPGA")


@dataclass
class Tally:
    """What one client measured, and what it claimed (for the audit); plain data."""

    get_ms: list[float] = field(default_factory=list)
    put_ms: list[float] = field(default_factory=list)
    claims: int = 0
    gets: int = 0  # GET-only phases (--split)
    conflicts: int = 0
    empty: int = 0
    errors: list[str] = field(default_factory=list)
    # provider uuid -> class -> amount claimed with a 204
    claimed: dict[str, dict[str, int]] = field(default_factory=dict)
    consumers: list[str] = field(default_factory=list)

    def add(self, other: Tally) -> None:
        self.get_ms += other.get_ms
        self.put_ms += other.put_ms
        self.claims += other.claims
        self.gets += other.gets
        self.conflicts += other.conflicts
        self.empty += other.empty
        self.errors += other.errors
        self.consumers += other.consumers
        _merge(self.claimed, other.claimed)


def _one_loop(conn: http.client.HTTPConnection, prefix: str, topo: str,
              limit: int | None, rng: random.Random, tally: Tally, timed: bool,
              claim: bool = True) -> None:
    """GET candidates, PUT one of the first (unless not `claim`); every claim is tallied,
    times only if `timed`."""
    path = f"{prefix}/allocation_candidates?{_query(topo, rng.choice(FLAVORS))}"
    if limit:
        path += f"&limit={limit}"
    t0 = time.perf_counter()
    conn.request("GET", path, headers=HEADERS)
    resp = conn.getresponse()
    raw = resp.read()
    t1 = time.perf_counter()
    if resp.status != 200:
        raise RuntimeError(f"GET {path} -> {resp.status}: {raw[:300]!r}")
    requests = json.loads(raw)["allocation_requests"]
    if not claim:
        tally.gets += timed
        return
    if not requests:
        tally.empty += timed
        return
    pick = rng.choice(requests[:FIRST])["allocations"]
    body = json.dumps({"allocations": pick, "project_id": PROJECT, "user_id": USER,
                       "consumer_generation": None, "consumer_type": "INSTANCE"})
    consumer = str(uuid.uuid4())
    t2 = time.perf_counter()
    conn.request("PUT", f"{prefix}/allocations/{consumer}", body=body,
                 headers=_PUT_HEADERS)
    resp = conn.getresponse()
    answer = resp.read()
    t3 = time.perf_counter()
    if resp.status == 204:
        tally.consumers.append(consumer)
        _merge(tally.claimed, {rp: e["resources"] for rp, e in pick.items()})
    if not timed:
        return
    tally.get_ms.append((t1 - t0) * 1000)
    if resp.status == 204:
        tally.put_ms.append((t3 - t2) * 1000)
        tally.claims += 1
    elif resp.status == 409:
        tally.conflicts += 1
    else:
        tally.errors.append(f"PUT -> {resp.status}: {answer[:300]!r}")


# Every client and the parent meet here twice: after the warm-up (the parent
# then reads the CPU counters) and before the timed loop. Inherited by fork.
_START: Any = None


def _client(base: str, topo: str, limit: int | None, seed: int,
            seconds: float, warmup: int, claim: bool) -> Tally:
    """One client process: warm up, wait for the common start, loop until the end."""
    parts = urlsplit(base)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port or 80,
                                      timeout=600)
    rng, tally, prefix = random.Random(seed), Tally(), parts.path.rstrip("/")
    try:
        for _ in range(warmup):
            _one_loop(conn, prefix, topo, limit, rng, tally, False, claim)
        _START.wait()
        _START.wait()
        stop_at = time.time() + seconds
        while time.time() < stop_at and len(tally.errors) < 5:
            _one_loop(conn, prefix, topo, limit, rng, tally, True, claim)
    finally:
        conn.close()
    return tally


def _phase(srv: servers.Server, db_url: str, topo: str, clients: int, limit: int | None,
           seconds: float, seed: int, warmup: int = 3,
           claim: bool = True) -> tuple[dict[str, Any], Tally]:
    """`clients` processes (a scheduler each: no shared GIL) run the loop at once.

    With `claim` false they only ask (GET), and the CPU figures are per GET.

    The server's and the database's CPU counters are read after every client
    has warmed up and once the last one has finished its timed loop.
    """
    global _START
    tally = Tally()
    ctx = multiprocessing.get_context("fork")
    _START = ctx.Barrier(clients + 1, timeout=900)
    with ProcessPoolExecutor(clients, mp_context=ctx) as pool:
        futures = [pool.submit(_client, srv.url, topo, limit, seed * 1000 + i,
                               seconds, warmup, claim) for i in range(clients)]
        _START.wait()
        before = phase_cpu.snapshot(srv.process.pid, db_url)
        _START.wait()
        for f in futures:
            tally.add(f.result())
        after = phase_cpu.snapshot(srv.process.pid, db_url)
    figures = _figures(tally, seconds)
    server_s, db_s = phase_cpu.spent(before, after)
    done = tally.claims if claim else tally.gets
    per = 1000 / done if done else float("nan")
    figures.update(server_cpu_ms=server_s * per, db_cpu_ms=db_s * per,
                   cpu_ms_per_claim=(server_s + db_s) * per)
    return figures, tally


def _median(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


def _p95(xs: list[float]) -> float | None:
    if not xs:
        return None
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(0.95 * len(s)) - 1))]


def _figures(tally: Tally, elapsed: float) -> dict[str, Any]:
    return {"get_median_ms": _median(tally.get_ms), "get_p95_ms": _p95(tally.get_ms),
            "put_median_ms": _median(tally.put_ms), "put_p95_ms": _p95(tally.put_ms),
            "claims": tally.claims, "conflicts": tally.conflicts, "empty": tally.empty,
            "errors": len(tally.errors), "seconds": elapsed,
            "claims_per_s": tally.claims / elapsed if elapsed else 0.0}


def _merge(into: dict[str, dict[str, int]], claimed: dict[str, dict[str, int]]) -> None:
    for rp, classes in claimed.items():
        mine = into.setdefault(rp, {})
        for rc, n in classes.items():
            mine[rc] = mine.get(rc, 0) + n


def audit(base: str, claimed: dict[str, dict[str, int]]) -> list[str]:
    """Problems found: project usage != claimed, or a provider over capacity."""
    problems = []
    totals: dict[str, int] = defaultdict(int)
    for classes in claimed.values():
        for rc, n in classes.items():
            totals[rc] += n
    with new_client(base) as c:
        # 1.9: usages not yet split by consumer type (1.38)
        c.headers["OpenStack-API-Version"] = "placement 1.9"
        usage = call(c, "GET", f"/usages?project_id={PROJECT}").json()["usages"]
        if {k: v for k, v in usage.items() if v} != dict(totals):
            problems.append(f"project usage {usage} != claimed {dict(totals)}")

        def check(rp: str) -> str | None:
            inv = call(c, "GET", f"/resource_providers/{rp}/inventories").json()["inventories"]
            used = call(c, "GET", f"/resource_providers/{rp}/usages").json()["usages"]
            for rc, n in used.items():
                cap = (inv[rc]["total"] - inv[rc]["reserved"]) * inv[rc]["allocation_ratio"]
                if n > cap:
                    return f"provider {rp} {rc}: used {n} > capacity {cap}"
            return None

        with ThreadPoolExecutor(4) as pool:
            problems += [p for p in pool.map(check, sorted(claimed)) if p]
    return problems


def _phases(args: argparse.Namespace) -> list[tuple[int, int | None]]:
    limits = [None if x == "none" else int(x) for x in args.limits.split(",")]
    return [(int(c), lim) for c in args.clients.split(",") for lim in limits]


def _label(clients: int, limit: int | None) -> str:
    return f"{clients} client{'s' if clients > 1 else ''}, limit={limit or 'none'}"


def run_target(target: str, backend: str, topo: str, size: int, args: argparse.Namespace,
               workdir: Path, venv: Path | None) -> dict[str, Any]:
    out: dict[str, Any] = {"phases": {}}
    tdir = workdir / f"{backend}-{topo}-{size}"
    with servers.database(backend, tdir, target) as url, \
            servers.serve(target, url, args.workers, tdir, venv) as srv:
        print(f"[{target}] serving at {srv.url}, log {srv.log}", flush=True)
        built = topologies.build(srv.url, topo, size, args.threads, f"[{target}]")
        print(f"[{target}] built {topo} N={size} in {built.seconds:.1f} s", flush=True)
        out["audit"] = []
        for i, (clients, limit) in enumerate(_phases(args)):
            figures, tally = _phase(srv, url, topo, clients, limit, args.seconds,
                                    args.seed + i)
            out["phases"][_label(clients, limit)] = figures
            print(f"[{target}] {backend} {topo} N={size} {_label(clients, limit)}: "
                  f"{_line(figures)}", flush=True)
            for err in tally.errors[:3]:
                print(f"[{target}]   error: {err}", flush=True)
            out["audit"] += _audit_and_clean(target, srv.url, tally)
            if args.split:
                _split(target, srv, url, topo, clients, limit, args, figures)
    return out


def _split(target: str, srv: servers.Server, url: str, topo: str, clients: int,
           limit: int | None, args: argparse.Namespace, figures: dict[str, Any]) -> None:
    """The same clients only asking: CPU per GET, and the claim's share of the loop.

    The share includes what a claim makes every worker's next GET pay (the
    provider's usage reloaded; answers the memo would otherwise serve again
    rendered afresh), which a GET-only phase on an unchanging cloud does not.
    """
    gets, _ = _phase(srv, url, topo, clients, limit, args.seconds, args.seed, claim=False)
    figures["get_cpu_ms"] = gets["cpu_ms_per_claim"]
    figures["put_cpu_ms"] = figures["cpu_ms_per_claim"] - gets["cpu_ms_per_claim"]
    print(f"[{target}]   GET only: server {gets['server_cpu_ms']:.2f} ms + database "
          f"{gets['db_cpu_ms']:.2f} ms = {gets['cpu_ms_per_claim']:.2f} ms per GET; the claim's "
          f"share of the loop: {figures['put_cpu_ms']:.2f} ms", flush=True)


def _audit_and_clean(target: str, base: str, tally: Tally) -> list[str]:
    """Audit the phase's claims, then delete them: each phase starts on an empty cloud."""
    t0 = time.monotonic()
    problems = audit(base, tally.claimed)
    verdict = "; ".join(problems) if problems else "OK"
    print(f"[{target}]   audit of {len(tally.consumers)} consumers on {len(tally.claimed)} "
          f"providers in {time.monotonic() - t0:.1f} s: {verdict}", flush=True)

    def delete(consumer: str) -> None:
        call(thread_client(base), "DELETE", f"/allocations/{consumer}", ok=(204,))

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(delete, tally.consumers))
    return problems


def _fmt(v: float | None, spec: str = ".1f") -> str:
    return "-" if v is None else format(v, spec)


def _line(f: dict[str, Any]) -> str:
    return (f"GET {_fmt(f['get_median_ms'])} ms (p95 {_fmt(f['get_p95_ms'])}), "
            f"PUT {_fmt(f['put_median_ms'])} ms (p95 {_fmt(f['put_p95_ms'])}), "
            f"{f['claims_per_s']:.1f} claims/s, {f['claims']} claims, "
            f"{f['conflicts']} conflicts, {f['empty']} empty answers, {f['errors']} errors; "
            f"CPU per claim: server {f['server_cpu_ms']:.2f} ms + database "
            f"{f['db_cpu_ms']:.2f} ms = {f['cpu_ms_per_claim']:.2f} ms")


def table(title: str, res: dict[str, Any]) -> str:
    """Per phase and target: latencies, rate, CPU per claim, and upstream's CPU / ours."""
    lines = [f"== {title} ==",
             f"{'phase':<26}{'target':<10}{'GET ms':>8}{'PUT ms':>8}{'claims/s':>10}"
             f"{'409s':>6}{'srv ms':>8}{'db ms':>8}{'CPU ms':>8}{'rate x':>8}{'CPU x':>8}"]
    phases = next(iter(res.values()))["phases"]
    for phase in phases:
        up = res.get("upstream", {}).get("phases", {}).get(phase)
        for target, r in res.items():
            f = r["phases"][phase]
            rate = cpu = ""
            if target == "stowage" and up and up["claims_per_s"]:
                rate = f"{f['claims_per_s'] / up['claims_per_s']:.1f}x"
            if target == "stowage" and up and f["cpu_ms_per_claim"] > 0:
                cpu = f"{up['cpu_ms_per_claim'] / f['cpu_ms_per_claim']:.1f}x"
            lines.append(f"{phase:<26}{target:<10}{_fmt(f['get_median_ms']):>8}"
                         f"{_fmt(f['put_median_ms']):>8}{f['claims_per_s']:>10.1f}"
                         f"{f['conflicts']:>6}{f['server_cpu_ms']:>8.2f}{f['db_cpu_ms']:>8.2f}"
                         f"{f['cpu_ms_per_claim']:>8.2f}{rate:>8}{cpu:>8}")
    return "\n".join(lines)


def _get(results: dict[Any, Any], key: tuple[str, str, int], target: str,
         phase: str, stat: str) -> float | None:
    value = results.get(key, {}).get(target, {}).get("phases", {}).get(phase, {}).get(stat)
    return None if value is None else float(value)


def _check(label: str, value: float | None, ok: bool, unit: str) -> str:
    if value is None:
        return f"  {label}: not measured"
    return f"  {label}: {value:.1f}{unit}  {'PASS' if ok else 'FAIL'}"


def summary(results: dict[tuple[str, str, int], dict[str, Any]]) -> str:
    """The issue's targets, checked on whatever this run measured."""
    out = ["== targets =="]
    one_none, one_50 = _label(1, None), _label(1, 50)
    for topo in ("flat", "nested"):
        key = ("sqlite", topo, 1000)
        put = _get(results, key, "stowage", one_none, "put_median_ms")
        get = _get(results, key, "stowage", one_none, "get_median_ms")
        get50 = _get(results, key, "stowage", one_50, "get_median_ms")
        out.append(_check(f"sqlite {topo} N=1000 PUT median <= 3 ms", put,
                          put is not None and put <= 3, " ms"))
        out.append(_check(f"sqlite {topo} N=1000 GET median <= 5 ms (no limit)", get,
                          get is not None and get <= 5, " ms"))
        out.append(_check(f"sqlite {topo} N=1000 GET median <= 3 ms (limit=50)", get50,
                          get50 is not None and get50 <= 3, " ms"))
    for (backend, topo, size), res in sorted(results.items()):
        for phase in res.get("stowage", {}).get("phases", {}):
            if not phase.startswith("4 clients"):
                continue
            s = _get(results, (backend, topo, size), "stowage", phase, "claims_per_s")
            u = _get(results, (backend, topo, size), "upstream", phase, "claims_per_s")
            r = s / u if s and u else None
            out.append(_check(f"{backend} {topo} N={size} {phase}: claims/s vs upstream",
                              r, r is not None and r >= 50, "x"))
            s = _get(results, (backend, topo, size), "stowage", phase, "cpu_ms_per_claim")
            u = _get(results, (backend, topo, size), "upstream", phase, "cpu_ms_per_claim")
            r = u / s if s and u else None
            out.append(_check(f"{backend} {topo} N={size} {phase}: upstream CPU per claim "
                              "/ stowage's (server + database) >= 30", r,
                              r is not None and r >= 30, "x"))
    for backend in sorted({k[0] for k in results}):
        for topo in ("flat", "nested"):
            for phase in (one_none, one_50):
                a = _get(results, (backend, topo, 1000), "stowage", phase, "get_median_ms")
                b = _get(results, (backend, topo, 10000), "stowage", phase, "get_median_ms")
                r = b / a if a and b else None
                out.append(_check(f"{backend} {topo} {phase}: GET N=10000 / N=1000", r,
                                  r is not None and r <= 3, "x"))
    return "\n".join(out)


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", default="sqlite", help="sqlite|postgresql (comma list ok)")
    p.add_argument("--sizes", default="1000", help="comma-separated N")
    p.add_argument("--targets", default="stowage,upstream")
    p.add_argument("--topologies", default="flat,nested")
    p.add_argument("--clients", default="1,4,10", help="comma-separated client counts")
    p.add_argument("--limits", default="none,50", help="comma list of none|N")
    p.add_argument("--seconds", type=float, default=10.0, help="per phase")
    p.add_argument("--workers", type=int, default=1, help="server workers, both targets")
    p.add_argument("--threads", type=int, default=8, help="builder threads")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--split", action="store_true",
                   help="after each phase, a GET-only one: CPU per GET and the claim's share")
    p.add_argument("--quick", action="store_true", help="N=50, 2 s phases")
    p.add_argument("--json", help="write raw numbers to this file")
    args = p.parse_args(argv)
    if args.quick:
        args.sizes, args.seconds = "50", 2.0
    return args


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    results = sweep.run(args, "schedule", f"{args.seconds:.0f} s per phase; ", run_target,
                        lambda title, res, _topo: table(title, res))
    if results is None:
        return 130
    print("\n" + summary(results))
    failed = any(r["audit"] for res in results.values() for r in res.values())
    if failed:
        print("schedule: AUDIT FAILED (see above)", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
