"""100,000 providers in one worker: memory, cold start, candidates and claims (issue 31, target 4).

    PYTHONPATH=src python3 bench/hundredk.py [--providers 100000] [--topologies flat,nested]
        [--targets stowage,upstream] [--clients 4] [--seconds 15] [--upstream-limit 120]

Why not `bench/topologies.py` over HTTP: writing 100,000 providers through
the API is 400,000 requests, most of an hour per target. The same topology
(same names, uuids, inventories, traits and aggregate as topologies.py) is
written as rows of upstream Placement 16.0.0's schema into a SQLite file;
stowage gets it through its own `manage placement import` path
(`import_database`), upstream Placement serves a copy of the file as it is.
Both therefore serve identical data, and neither was built with the other's
code.

Per target and topology, on SQLite, one worker process:

- cold start: from spawning the server until the first
  `GET /allocation_candidates?...&limit=50` is answered (stowage loads every
  provider into memory on that first request; upstream reads SQL per
  request), and the server's CPU seconds until then;
- RSS of the worker (/proc/<pid>/status) after that first answer and after
  the load phase, minus the RSS of the same server on an empty database
  after the same request, per provider;
- the scheduler's loop (bench/schedule.py) with `--clients` client processes
  and limit=50: GET and PUT medians and p95, claims, conflicts; then the
  audit (project usage equals what was claimed, no provider over capacity),
  and the claims are deleted.

Upstream is given `--upstream-limit` seconds for its first answer; if it
takes longer, its loop is skipped and the table says so. Prints figures;
exits non-zero only when an audit fails.
"""

from __future__ import annotations

import argparse
import datetime
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import os_resource_classes as orc
import os_traits
import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import schedule  # noqa: E402
import servers  # noqa: E402
import topologies  # noqa: E402
import upstream_venv  # noqa: E402
from client import HEADERS  # noqa: E402

from stowage.db import Database  # noqa: E402
from stowage.placement.adopt import import_database  # noqa: E402
from stowage.placement.adopt import upstream_schema as us  # noqa: E402

NOW = datetime.datetime(2026, 1, 1)
FOO = 100_000  # CUSTOM_FOO's trait id, above every standard one
_CLASS_IDS = {name: i for i, name in enumerate(orc.STANDARDS)}
_TRAITS = sorted(os_traits.get_traits())
_TRAIT_IDS = {name: i + 1 for i, name in enumerate(_TRAITS)} | {"CUSTOM_FOO": FOO}
AGG_ID = 1
TREE = 7  # providers per nested tree


def _uuid(name: str) -> str:
    return str(uuid.uuid5(topologies._NS, name))


class _Rows:
    """Row batches per upstream table, in the order parents come first."""

    def __init__(self) -> None:
        self.next_id = 0
        self.tables: dict[str, list[dict[str, Any]]] = {name: [] for name in us.TABLES}

    def provider(self, name: str, parent: int | None, root: int | None,
                 inventories: dict[str, int], traits: list[str], in_agg: bool) -> int:
        self.next_id += 1
        rp = self.next_id
        self.tables["resource_providers"].append(
            {"id": rp, "uuid": _uuid(name), "name": name, "generation": 4,
             "root_provider_id": root or rp, "parent_provider_id": parent})
        for rc, total in inventories.items():
            self.tables["inventories"].append(
                {"resource_provider_id": rp, "resource_class_id": _CLASS_IDS[rc],
                 "total": total, "reserved": 0, "min_unit": 1, "max_unit": total,
                 "step_size": 1, "allocation_ratio": 1.0})
        for trait in traits:
            self.tables["resource_provider_traits"].append(
                {"resource_provider_id": rp, "trait_id": _TRAIT_IDS[trait]})
        if in_agg:
            self.tables["resource_provider_aggregates"].append(
                {"resource_provider_id": rp, "aggregate_id": AGG_ID})
        return rp


def _flat(rows: _Rows, i: int) -> None:
    rows.provider(f"cn-{i}", None, None, {"VCPU": 32, "MEMORY_MB": 131072, "DISK_GB": 2048},
                  ["HW_CPU_X86_AVX2"], True)


def _nested(rows: _Rows, i: int) -> None:
    root = rows.provider(f"cn-{i}", None, None, {"DISK_GB": 2048},
                         ["COMPUTE_VOLUME_MULTI_ATTACH"], False)
    for n in range(2):
        numa = rows.provider(f"cn-{i}-numa{n}", root, root,
                             {"VCPU": 16, "MEMORY_MB": 65536}, ["CUSTOM_FOO"], False)
        for f in range(2):
            rows.provider(f"cn-{i}-numa{n}-fpga{f}", numa, root, {"FPGA": 1}, [], False)


def build_upstream(path: Path, topo: str, providers: int) -> int:
    """An upstream-schema SQLite file holding `topo`; returns how many providers."""
    engine = sa.create_engine(f"sqlite:///{path}")
    rows = _Rows()
    count = providers if topo == "flat" else providers // TREE
    one = _flat if topo == "flat" else _nested
    with engine.begin() as conn:
        us.metadata.create_all(conn)
        conn.execute(us.alembic_version.insert().values(version_num=us.HEAD))
        catalogue = {
            "resource_classes": [{"id": i, "name": n} for n, i in _CLASS_IDS.items()],
            "traits": [{"id": i, "name": n} for n, i in _TRAIT_IDS.items()],
            "placement_aggregates": [{"id": AGG_ID, "uuid": topologies.AGGREGATE}],
        }
        for name, table_rows in catalogue.items():
            conn.execute(us.metadata.tables[name].insert(),
                         [{**r, "created_at": NOW} for r in table_rows])
        for i in range(count):
            one(rows, i)
        for name in us.TABLES:
            if rows.tables[name]:
                conn.execute(us.metadata.tables[name].insert(),
                             [{**r, "created_at": NOW} for r in rows.tables[name]])
    engine.dispose()
    return rows.next_id


def build_stowage(upstream: Path, target: Path) -> None:
    """Stowage's database, through its own import of an upstream database."""
    db = Database(f"sqlite:///{target}")
    try:
        import_database(f"sqlite:///{upstream}", db)
    finally:
        db.dispose()


# --- processes ---------------------------------------------------------------------------

def _children(pid: int) -> list[int]:
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        out += [int(x) for x in text]
    return out


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of `pid` (fields 14 and 15 of /proc/<pid>/stat)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Running:
    url: str
    proc: subprocess.Popen[bytes]
    log: Path

    def worker(self) -> int:
        """The process answering requests: the server itself, or gunicorn's one worker."""
        kids = _children(self.proc.pid)
        return kids[0] if kids else self.proc.pid


def _spawn(target: str, db_url: str, workdir: Path, venv: Path | None) -> Running:
    port = servers._free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    if target == "stowage":
        argv, env = servers._stowage_argv(port, db_url, 1, workdir)
    else:
        assert venv is not None
        argv, env = servers._upstream_argv(port, db_url, 1, workdir, venv)
    log = workdir / "server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, env=env, cwd=workdir, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    return Running(f"http://127.0.0.1:{port}", proc, log)


@dataclass
class Cold:
    listening_s: float
    first_answer_s: float
    first_request_ms: float
    cpu_s: float
    candidates: int


def _first_answer(run: Running, path: str, limit_s: float) -> Cold:
    """Wait for the server, then time its first candidates answer."""
    started = time.monotonic()
    deadline = started + limit_s
    listening = None
    while time.monotonic() < deadline:
        if run.proc.poll() is not None:
            raise RuntimeError(f"server exited; log tail:\n{run.log.read_text()[-2000:]}")
        try:
            if listening is None:
                if httpx.get(run.url + "/", timeout=2.0).status_code != 200:
                    raise httpx.TransportError("not yet")
                listening = time.monotonic() - started
            t0 = time.monotonic()
            resp = httpx.get(run.url + path, headers=HEADERS,
                             timeout=max(1.0, deadline - time.monotonic()))
            ms = (time.monotonic() - t0) * 1000
            resp.raise_for_status()
            found = len(resp.json()["allocation_requests"])
            return Cold(listening, time.monotonic() - started, ms,
                        _cpu_s(run.worker()), found)
        except (httpx.TransportError, httpx.TimeoutException):
            time.sleep(0.05)
    raise TimeoutError(f"no answer within {limit_s:.0f} s")


def _stop(run: Running) -> None:
    servers._stop(run.proc)


# --- one target --------------------------------------------------------------------------

@dataclass
class Result:
    target: str
    topo: str
    providers: int
    cold: Cold | None = None
    rss_empty_kb: int = 0
    rss_cold_kb: int = 0
    rss_after_kb: int = 0
    figures: dict[str, Any] = field(default_factory=dict)
    audit: list[str] = field(default_factory=list)
    note: str = ""
    cpu_per_op_ms: float | None = None
    # Stowage: CPU per GET alone, and the claim's share per PUT (_split).
    get_cpu_ms: float | None = None
    put_cpu_ms: float | None = None


def _path(topo: str) -> str:
    return f"/allocation_candidates?{schedule._query(topo, schedule.FLAVORS[0])}&limit=50"


def _empty_rss(target: str, topo: str, db: Path, workdir: Path, venv: Path | None) -> int:
    """RSS of the same server on an empty database after the same first request."""
    url = f"sqlite:///{db}"
    run = _spawn(target, url, workdir, venv)
    try:
        _first_answer(run, _path(topo), 120)
        return _rss_kb(run.worker())
    finally:
        _stop(run)


def run_target(target: str, topo: str, providers: int, dbs: dict[str, Path],
               args: argparse.Namespace, workdir: Path, venv: Path | None) -> Result:
    res = Result(target, topo, providers)
    res.rss_empty_kb = _empty_rss(target, topo, dbs["empty-" + target], workdir / "empty",
                                  venv)
    copy = workdir / f"{target}.db"
    shutil.copyfile(dbs[target], copy)
    limit = args.upstream_limit if target == "upstream" else 600
    run = _spawn(target, f"sqlite:///{copy}", workdir / target, venv)
    try:
        try:
            res.cold = _first_answer(run, _path(topo), limit)
        except TimeoutError as exc:
            res.note = str(exc)
            return res
        res.rss_cold_kb = _rss_kb(run.worker())
        srv = servers.Server(target, run.url, run.log, run.proc)
        db_url = f"sqlite:///{copy}"
        figures, tally = schedule._phase(srv, db_url, topo, args.clients, 50, args.seconds,
                                         args.seed, warmup=2)
        ops = len(tally.get_ms) + len(tally.put_ms)
        cpu_s = figures["server_cpu_ms"] * tally.claims / 1000
        res.cpu_per_op_ms = cpu_s * 1000 / ops if ops else None
        res.figures = figures
        res.rss_after_kb = _rss_kb(run.worker())
        res.audit = schedule._audit_and_clean(target, run.url, tally)
        if target == "stowage":
            _split(res, srv, db_url, topo, args, tally, cpu_s)
    finally:
        _stop(run)
    return res


def _split(res: Result, srv: servers.Server, db_url: str, topo: str,
           args: argparse.Namespace, tally: schedule.Tally, loop_cpu_s: float) -> None:
    """Where a PUT's time goes: the same clients only asking (GET), for CPU per GET.

    The loop's CPU less its GETs' at that rate, per PUT answered, is the
    claim's share: the PUT itself and what it makes the next GETs redo.
    """
    gets, _ = schedule._phase(srv, db_url, topo, args.clients, 50, args.seconds, args.seed,
                              warmup=2, claim=False)
    res.get_cpu_ms = gets["server_cpu_ms"]
    puts = len(tally.put_ms) + tally.conflicts
    if puts:
        res.put_cpu_ms = (loop_cpu_s * 1000 - len(tally.get_ms) * res.get_cpu_ms) / puts
    print(f"[stowage]   {topo}: GET only {res.get_cpu_ms:.2f} ms of server CPU per GET; "
          f"the claim's share of the loop {_f(res.put_cpu_ms, '.2f')} ms per PUT", flush=True)


# --- report ------------------------------------------------------------------------------

def _f(value: float | None, spec: str = ".1f") -> str:
    return "-" if value is None else format(value, spec)


def _per_provider(res: Result, rss: int) -> str:
    if not rss:
        return "-"
    return f"{(rss - res.rss_empty_kb) * 1024 / res.providers:,.0f} B"


def table(results: list[Result]) -> str:
    head = ("| target | topology | providers | cold start: listening / first answer (s) "
            "| first request (ms) | server CPU to first answer (s) | RSS empty (MB) "
            "| RSS over empty per provider: cold / after loop | GET median / p95 (ms) "
            "| PUT median / p95 (ms) | claims/s | conflicts | server CPU per request (ms) "
            "| CPU per GET alone / claim's share per PUT (ms) | audit |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in results:
        c = r.cold
        fig = r.figures
        lines.append(
            f"| {r.target} | {r.topo} | {r.providers:,} | "
            f"{_f(c.listening_s if c else None)} / {_f(c.first_answer_s if c else None)} | "
            f"{_f(c.first_request_ms if c else None, '.0f')} | {_f(c.cpu_s if c else None)} | "
            f"{r.rss_empty_kb / 1024:.0f} | {_per_provider(r, r.rss_cold_kb)} / "
            f"{_per_provider(r, r.rss_after_kb)} | "
            f"{_f(fig.get('get_median_ms'))} / {_f(fig.get('get_p95_ms'))} | "
            f"{_f(fig.get('put_median_ms'))} / {_f(fig.get('put_p95_ms'))} | "
            f"{_f(fig.get('claims_per_s'))} | {fig.get('conflicts', '-')} | "
            f"{_f(r.cpu_per_op_ms)} | {_f(r.get_cpu_ms, '.2f')} / {_f(r.put_cpu_ms, '.2f')} | "
            f"{'; '.join(r.audit) or ('OK' if fig else r.note or '-')} |")
    return "\n".join(lines)


def ratios(results: list[Result]) -> str:
    out = []
    by = {(r.target, r.topo): r for r in results}
    for topo in sorted({r.topo for r in results}):
        s, u = by.get(("stowage", topo)), by.get(("upstream", topo))
        if not (s and u):
            continue
        if u.cold is None:
            out.append(f"{topo}: upstream gave no first answer ({u.note}); stowage answered "
                       f"its first in {_f(s.cold.first_answer_s if s.cold else None)} s")
            continue
        pairs = []
        for key in ("get_median_ms", "put_median_ms"):
            a, b = s.figures.get(key), u.figures.get(key)
            if a and b:
                pairs.append(f"{key}: upstream/stowage = {b / a:.1f}x")
        if s.cpu_per_op_ms and u.cpu_per_op_ms:
            pairs.append(f"server CPU per request: {u.cpu_per_op_ms / s.cpu_per_op_ms:.1f}x")
        if s.cold and u.cold:
            pairs.append(f"first answer: {u.cold.first_answer_s:.1f} s vs "
                         f"{s.cold.first_answer_s:.1f} s")
        out.append(f"{topo}: " + ", ".join(pairs))
    return "\n".join(out)


def targets(results: list[Result]) -> str:
    out = []
    for r in results:
        if r.target != "stowage" or r.cold is None:
            continue
        per = (r.rss_after_kb - r.rss_empty_kb) * 1024 / r.providers
        checks = [("RSS per provider <= 2 KB", per <= 2048, f"{per:,.0f} B"),
                  ("cold start <= 10 s", r.cold.first_answer_s <= 10,
                   f"{r.cold.first_answer_s:.1f} s"),
                  ("GET median <= 20 ms", (r.figures.get("get_median_ms") or 1e9) <= 20,
                   f"{_f(r.figures.get('get_median_ms'))} ms"),
                  ("PUT median <= 5 ms", (r.figures.get("put_median_ms") or 1e9) <= 5,
                   f"{_f(r.figures.get('put_median_ms'))} ms")]
        for label, ok, value in checks:
            out.append(f"{r.topo}: {label}: {value} {'met' if ok else 'NOT met'}")
    return "\n".join(out)


def _databases(topo: str, providers: int, workdir: Path, names: list[str]) -> tuple[
        dict[str, Path], int]:
    dbs: dict[str, Path] = {}
    t0 = time.monotonic()
    made = build_upstream(workdir / f"upstream-{topo}.db", topo, providers)
    dbs["upstream"] = workdir / f"upstream-{topo}.db"
    build_upstream(workdir / f"empty-upstream-{topo}.db", topo, 0)
    dbs["empty-upstream"] = workdir / f"empty-upstream-{topo}.db"
    print(f"built upstream {topo}: {made:,} providers in {time.monotonic() - t0:.1f} s",
          flush=True)
    if "stowage" in names:
        t0 = time.monotonic()
        build_stowage(dbs["upstream"], workdir / f"stowage-{topo}.db")
        build_stowage(dbs["empty-upstream"], workdir / f"empty-stowage-{topo}.db")
        dbs["stowage"] = workdir / f"stowage-{topo}.db"
        dbs["empty-stowage"] = workdir / f"empty-stowage-{topo}.db"
        print(f"imported into stowage in {time.monotonic() - t0:.1f} s", flush=True)
    return dbs, made


def _results(args: argparse.Namespace, workdir: Path) -> Iterator[Result]:
    names = args.targets.split(",")
    venv = upstream_venv.ensure() if "upstream" in names else None
    for topo in args.topologies.split(","):
        dbs, made = _databases(topo, args.providers, workdir, names)
        for target in names:
            res = run_target(target, topo, made, dbs, args, workdir / f"{topo}-{target}", venv)
            print(table([res]).splitlines()[-1], flush=True)
            yield res


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--providers", type=int, default=100_000)
    parser.add_argument("--topologies", default="flat,nested")
    parser.add_argument("--targets", default="stowage,upstream")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--seed", type=int, default=31)
    parser.add_argument("--upstream-limit", type=float, default=120.0,
                        help="seconds upstream gets for its first answer")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="hundredk-"))
    try:
        results = list(_results(args, workdir))
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    print()
    print(table(results))
    print()
    print(ratios(results))
    print(targets(results))
    return 1 if any(r.audit for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
