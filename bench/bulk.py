"""Server CPU per consumer of `POST /allocations`, stowage against upstream Placement 16.0.0.

    python bench/bulk.py [--backend sqlite|postgresql] [--consumers 1000,10000]
        [--upstream-consumers 1000] [--aggregates 10000] [--upstream-aggregates 1000]
        [--repeats 3] [--targets stowage,upstream] [--stowage-tree DIR] [--json FILE]

Each target runs as a real server process (one worker) on a fresh database
of the backend, as `bench/servers.py` starts them. For each size N, repeated
`--repeats` times:

- `new`: one `POST /allocations` of N new consumers, one VCPU each, on one
  provider (the shape of a bulk import or a move's hand-over, times N);
- `replace`: the same N consumers again at their generation, two VCPU each
  (existing consumers: generation checks, old rows deleted);
- `PUT aggregates` with N new aggregate uuids on a provider (`--aggregates`).

CPU is utime+stime from /proc/<pid>/stat of the server's processes (the
gunicorn master and worker for upstream) and, on PostgreSQL, of the
backends of the run's database, read before and after each request; the
figure printed is the median per consumer (per aggregate). Wall-clock on a
shared machine is printed too, as a hint only.

Upstream's sizes are smaller by default (`--upstream-consumers`): it writes
each consumer with its own statements, and 10,000 would take minutes; its
per-consumer figure is flat in N, so the ratio stands.

Before the audit, two bodies that must change nothing are sent: one whose
last consumer names an unknown provider (400), one with a stale consumer
generation (409). The audit then checks, over HTTP on both targets, that the
provider's usage is the sum of what was written, that it lists exactly the
consumers written with their amounts, and that each consumer's generation is
what the writes made it. It prints `audit clean` or the first problems.

`--stowage-tree DIR` serves stowage from another checkout's `src` (e.g. a
`git archive` of the commit before a change) for before/after figures.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

import servers  # noqa: E402
import upstream_venv  # noqa: E402
from client import HEADERS  # noqa: E402

CLK_TCK = os.sysconf("SC_CLK_TCK")
JSON = {"content-type": "application/json"}


def _ticks(pid: int) -> int:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    return int(fields[11]) + int(fields[12])  # utime stime


def _group(pgid: int) -> list[int]:
    """The processes of the server's process group (it runs in a session of its own)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid:
                found.append(int(entry))
    return found


def _pg_backends(db_url: str) -> list[int]:
    import psycopg

    name = db_url.rsplit("/", 1)[1]
    with psycopg.connect(servers.PG_ADMIN_DSN, autocommit=True) as conn:
        rows = conn.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s",
                            (name,)).fetchall()
    return [int(r[0]) for r in rows]


class Meter:
    """CPU seconds of the server's processes and of its database backends."""

    def __init__(self, server: servers.Server, db_url: str) -> None:
        self.pgid = server.process.pid
        self.db_url = db_url

    def snapshot(self) -> tuple[dict[int, int], dict[int, int]]:
        backends = _pg_backends(self.db_url) if self.db_url.startswith("postgresql") else []
        return ({p: _ticks(p) for p in _group(self.pgid)}, {p: _ticks(p) for p in backends})

    @staticmethod
    def delta(before: tuple[dict[int, int], dict[int, int]],
              after: tuple[dict[int, int], dict[int, int]]) -> tuple[float, float]:
        return tuple(  # type: ignore[return-value]
            sum(ticks - b.get(pid, 0) for pid, ticks in a.items()) / CLK_TCK
            for b, a in zip(before, after, strict=True))


@contextmanager
def measured(meter: Meter, out: dict[str, list[float]]) -> Iterator[None]:
    before, started = meter.snapshot(), time.perf_counter()
    yield
    wall = time.perf_counter() - started
    # Backends that were idle before the request still show in `after`.
    server, db = Meter.delta(before, meter.snapshot())
    out["server"].append(server)
    out["db"].append(db)
    out["wall"].append(wall)


def _send(client: httpx.Client, method: str, path: str, body: Any,
          *expect: int) -> httpx.Response:
    resp = client.request(method, path, content=json.dumps(body).encode(), headers=JSON)
    if resp.status_code not in expect:
        raise RuntimeError(f"{method} {path}: {resp.status_code} {resp.text[:500]}")
    return resp


def _provider(client: httpx.Client, name: str, vcpus: int = 0) -> str:
    rp = str(uuid.uuid4())
    _send(client, "POST", "/resource_providers", {"name": name, "uuid": rp}, 200, 201)
    if vcpus:
        _send(client, "PUT", f"/resource_providers/{rp}/inventories",
              {"resource_provider_generation": 0,
               "inventories": {"VCPU": {"total": vcpus, "max_unit": vcpus}}}, 200)
    return rp


def _consumers_body(rp: str, consumers: list[str], vcpus: int,
                    generation: int | None) -> dict[str, Any]:
    project, user = str(uuid.uuid5(uuid.NAMESPACE_OID, "p")), str(uuid.uuid5(
        uuid.NAMESPACE_OID, "u"))
    return {c: {"allocations": {rp: {"resources": {"VCPU": vcpus}}}, "project_id": project,
                "user_id": user, "consumer_generation": generation,
                "consumer_type": "INSTANCE"} for c in consumers}


class Ledger:
    """What the writes should have left: consumer -> (VCPU, generation)."""

    def __init__(self, rp: str) -> None:
        self.rp = rp
        self.held: dict[str, tuple[int, int]] = {}


def allocations(client: httpx.Client, meter: Meter, ledger: Ledger, size: int,
                repeats: int) -> dict[str, dict[str, list[float]]]:
    figures = {phase: {"server": [], "db": [], "wall": []} for phase in ("new", "replace")}
    for _ in range(repeats):
        consumers = [str(uuid.uuid4()) for _ in range(size)]
        with measured(meter, figures["new"]):
            _send(client, "POST", "/allocations",
                  _consumers_body(ledger.rp, consumers, 1, None), 204)
        ledger.held.update((c, (1, 1)) for c in consumers)
        with measured(meter, figures["replace"]):
            _send(client, "POST", "/allocations",
                  _consumers_body(ledger.rp, consumers, 2, 1), 204)
        ledger.held.update((c, (2, 2)) for c in consumers)
    return figures


def aggregates(client: httpx.Client, meter: Meter, size: int,
               repeats: int) -> dict[str, list[float]]:
    figures: dict[str, list[float]] = {"server": [], "db": [], "wall": []}
    for _ in range(repeats):
        rp = _provider(client, f"agg-{uuid.uuid4().hex[:8]}")
        with measured(meter, figures):
            _send(client, "PUT", f"/resource_providers/{rp}/aggregates",
                  {"aggregates": [str(uuid.uuid4()) for _ in range(size)],
                   "resource_provider_generation": 0}, 200)
    return figures


def refused_writes_change_nothing(client: httpx.Client, ledger: Ledger) -> None:
    """All or nothing: a bad last consumer, or a stale generation, writes nobody."""
    fresh = [str(uuid.uuid4()) for _ in range(50)]
    body = _consumers_body(ledger.rp, fresh, 1, None)
    body[fresh[-1]]["allocations"] = {str(uuid.uuid4()): {"resources": {"VCPU": 1}}}
    _send(client, "POST", "/allocations", body, 400)
    if ledger.held:
        stale = _consumers_body(ledger.rp, fresh[:10], 1, None)
        old = next(iter(ledger.held))
        stale.update(_consumers_body(ledger.rp, [old], 3, 0))
        _send(client, "POST", "/allocations", stale, 409)


def audit(client: httpx.Client, ledger: Ledger) -> list[str]:
    problems = []
    usages = client.get(f"/resource_providers/{ledger.rp}/usages").json()["usages"]
    expected = sum(v for v, _ in ledger.held.values())
    if usages.get("VCPU", 0) != expected:
        problems.append(f"usage VCPU {usages.get('VCPU')} != {expected} written")
    listed = client.get(f"/resource_providers/{ledger.rp}/allocations").json()["allocations"]
    if set(listed) != set(ledger.held):
        problems.append(f"{len(set(listed) ^ set(ledger.held))} consumers differ between "
                        "the provider's allocations and what was written")
    for consumer, (vcpus, generation) in ledger.held.items():
        got = listed.get(consumer)
        if got is None:
            continue
        if got["resources"] != {"VCPU": vcpus} or got.get("consumer_generation") != generation:
            problems.append(f"consumer {consumer}: {got} != VCPU {vcpus} gen {generation}")
            if len(problems) > 5:
                break
    return problems


def _per_item(values: list[float], size: int) -> float:
    return statistics.median(values) / size * 1e6


def run_target(target: str, args: argparse.Namespace, workdir: Path,
               venv: Path | None) -> dict[str, Any]:
    sizes = args.consumers if target == "stowage" else args.upstream_consumers
    agg_sizes = args.aggregates if target == "stowage" else args.upstream_aggregates
    res: dict[str, Any] = {"allocations": {}, "aggregates": {}}
    tdir = workdir / target
    with servers.database(args.backend, tdir, target) as url, \
            servers.serve(target, url, 1, tdir, venv) as srv, \
            httpx.Client(base_url=srv.url, headers=HEADERS, timeout=3600) as client:
        meter = Meter(srv, url)
        ledger = Ledger(_provider(client, "bulk", vcpus=10**9))
        for size in sizes:
            figures = allocations(client, meter, ledger, size, args.repeats)
            res["allocations"][size] = figures
            for phase, f in figures.items():
                print(f"[{target}] POST /allocations {phase:<8} N={size:>6}: server "
                      f"{_per_item(f['server'], size):7.1f} us/consumer, db "
                      f"{_per_item(f['db'], size):6.1f}, wall "
                      f"{_per_item(f['wall'], size):7.1f}", flush=True)
        for size in agg_sizes:
            f = res["aggregates"][size] = aggregates(client, meter, size, args.repeats)
            print(f"[{target}] PUT aggregates          N={size:>6}: server "
                  f"{_per_item(f['server'], size):7.1f} us/aggregate, db "
                  f"{_per_item(f['db'], size):6.1f}, wall {_per_item(f['wall'], size):7.1f}",
                  flush=True)
        refused_writes_change_nothing(client, ledger)
        res["audit"] = audit(client, ledger)
        print(f"[{target}] audit {'clean' if not res['audit'] else 'FAILED'} "
              f"({len(ledger.held)} consumers)", *res["audit"][:6], sep="\n  ", flush=True)
    return res


def _summary(results: dict[str, dict[str, Any]], backend: str) -> None:
    print(f"\nbackend {backend}: median CPU per consumer (us), server [+ database]")
    rows: list[tuple[str, Callable[[dict[str, Any]], float | None]]] = []
    for phase in ("new", "replace"):
        for kind in ("server", "db"):
            def pick(res: dict[str, Any], phase: str = phase, kind: str = kind) -> float | None:
                sizes = sorted(res["allocations"])
                if not sizes:
                    return None
                return _per_item(res["allocations"][sizes[-1]][phase][kind], sizes[-1])
            rows.append((f"POST /allocations {phase} ({kind})", pick))
    print(f"{'':<36}{'stowage':>10}{'upstream':>10}{'ratio':>8}")
    for label, pick in rows:
        s = pick(results["stowage"]) if "stowage" in results else None
        u = pick(results["upstream"]) if "upstream" in results else None
        ratio = f"{u / s:.1f}x" if s and u else "-"
        print(f"{label:<36}{s if s is not None else float('nan'):>10.1f}"
              f"{u if u is not None else float('nan'):>10.1f}{ratio:>8}")


def _sizes(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", default="sqlite", choices=("sqlite", "postgresql"))
    parser.add_argument("--consumers", type=_sizes, default=_sizes("1000,10000"))
    parser.add_argument("--upstream-consumers", type=_sizes, default=_sizes("1000"))
    parser.add_argument("--aggregates", type=_sizes, default=_sizes("10000"))
    parser.add_argument("--upstream-aggregates", type=_sizes, default=_sizes("1000"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--targets", default="stowage,upstream")
    parser.add_argument("--stowage-tree", type=Path,
                        help="serve stowage from DIR/src instead of this checkout")
    parser.add_argument("--json", type=Path, help="write the raw figures here")
    args = parser.parse_args()
    if args.stowage_tree:
        servers.REPO_ROOT = args.stowage_tree.resolve()
    targets = [t for t in args.targets.split(",") if t]
    venv = upstream_venv.ensure() if "upstream" in targets else None
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-bulk-") as tmp:
        for target in targets:
            results[target] = run_target(target, args, Path(tmp), venv)
    _summary(results, args.backend)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, default=str))
    return 1 if any(r["audit"] for r in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
