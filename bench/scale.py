"""Measure the scale-out deployment (API, conductor, scheduler, agents over RabbitMQ, on
PostgreSQL): what N hosts cost at rest, and how fast servers boot and move.

Why: the split into processes is there so that a deployment can grow past what
one process serves. This script puts numbers on it: how long N simulated hosts
take to register from a cold start, what they cost every second once they idle
(API requests, CPU of each kind of process, database transactions), and the
throughput and latency of boots and moves with more API workers and conductors.
From the per-host figures one can estimate a larger deployment, and see which
process saturates first. It asserts nothing.

    PYTHONPATH=src python3 bench/scale.py [--phases steady,throughput]
        [--hosts 1000,10000] [--agents 4] [--api-workers 1] [--window 60] [--settle 10]
        [--register-timeout 900] [--move-hosts 1000] [--configs 1x1,2x2,4x4,inproc]
        [--clients 8] [--servers 100] [--poll 0.05] [--json FILE] [--workdir DIR]

Phase `steady`, for each N of `--hosts`, on a fresh database and broker namespace
(`control_exchange`): one API process (`stowage serve --services
placement,compute,image,network`), one conductor, one scheduler and `--agents`
agent processes, each with its own N/agents hosts (a hosts file), all with the
default `report_interval` (10 s) and `update_resources_interval` (60 s).

- Registration: seconds from launching the API (it upgrades the schema) until
  every host has a resource provider with inventory and its nova-compute
  service is up (heard from within `service_down_time`), read in the database
  every 2 s. If that does not happen within `--register-timeout`, the counts
  reached and the CPU each kind used are reported instead.
- Steady state: after `--settle` s, a window of `--window` s (one tracker
  period by default; longer averages better). Requests are the API's access
  log lines (uvicorn's, on with `--log-level debug`) in the window, by route.
  CPU is utime+stime from /proc/<pid>/stat of each process and its children
  (reaped children included), in CPU seconds per second: 1.0 is one core
  busy. `postgres` is the backends of the run's database plus the server's
  own background processes (shared with anything else on the machine);
  `rabbitmq` is the broker's Erlang VM (likewise shared). `DB xact/s` is
  pg_stat_database's commits+rollbacks of the run's database. `heartbeat age`
  and `tracker age` are the oldest `last_seen_up` and compute node
  `updated_at` at the window's end: above `report_interval` (10 s) and
  `update_resources_interval` (60 s) by much, the agents fall behind their
  periodic work. The processes' threads, memory, broker and database
  connections, and the rows per table, are counted after registration.

Phase `throughput`, on `--move-hosts` hosts: for each of `--configs`, `AxC`
is A API worker processes (`serve --workers A`) and C conductors (the agents
and one scheduler stay up between configs on one database), and `inproc` is
`stowage serve --sim-hosts N` on its own PostgreSQL database, no broker, the
whole control plane in one process. Each config boots `--servers` servers,
then resizes+confirms, cold migrates+confirms and live migrates each of them,
with `--clients` concurrent clients, then deletes them. Latency is request to
settled state (polling GET /servers/{id} every `--poll` s; for the pairs, the
resize request to ACTIVE after the confirm); ops/s is completed operations per
second of wall time. `CPU ms/op` is what each kind of process spent per
operation (status polls included).

How to read it: CPU s/s per kind divided by N is the per-host cost that grows
linearly; the first kind whose CPU nears one core per process (or the
machine's cores in total) is the one that saturates. On this 2-core machine
the processes share the cores, so the throughput figures compare configs, not
what separate machines would do.

Every process is killed, every database dropped and the run's RabbitMQ queues
deleted at the end, also on errors and Ctrl-C (or SIGTERM). Progress goes to
stderr; the tables to stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import datetime
import json
import math
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))

import servers  # noqa: E402

BROKER = "rabbit://guest:guest@127.0.0.1:5672/"
HEADERS = {"x-auth-token": "admin", "openstack-api-version": "compute 2.80",
           "accept": "application/json"}
STARTED = ": started (roles"  # what compute/worker.py logs once a role serves
SERVICE_DOWN_TIME = 60.0  # config.ComputeSettings' default: "up" means heard from since
STOP_WAIT = 20.0
CLK_TCK = os.sysconf("SC_CLK_TCK")
UUID_RE = re.compile(r"[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}")
ACCESS_RE = re.compile(r'"(GET|POST|PUT|DELETE|PATCH|HEAD) (\S+) HTTP/[\d.]+" (\d{3})')
KINDS = ("api", "conductor", "scheduler", "agent", "inproc", "postgres", "rabbitmq")


def say(message: str) -> None:
    """A progress line on stderr."""
    print(f"[scale {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# --- processes ---------------------------------------------------------------------------

def _die_with_parent() -> None:
    """In the child before exec: SIGTERM it when the bench dies (PR_SET_PDEATHSIG)."""
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)


@dataclass
class Proc:
    """One stowage command we started, in its own process group."""

    name: str
    kind: str
    popen: subprocess.Popen[bytes]
    log: Path

    def alive(self) -> bool:
        return self.popen.poll() is None

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def tail(self, lines: int = 15) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])


def launch(name: str, kind: str, args: Sequence[str], workdir: Path) -> Proc:
    env = dict(os.environ, PYTHONPATH=str(servers.REPO_ROOT / "src"))
    for var in ("STOWAGE_DATABASE", "STOWAGE_TRANSPORT_URL"):
        env.pop(var, None)
    log = workdir / f"{name}.log"
    with open(log, "ab") as out:
        popen = subprocess.Popen([sys.executable, "-m", "stowage", *args], env=env,
                                 cwd=workdir, stdin=subprocess.DEVNULL, stdout=out,
                                 stderr=subprocess.STDOUT, start_new_session=True,
                                 preexec_fn=_die_with_parent)
    return Proc(name, kind, popen, log)


def stop_all(procs: Sequence[Proc]) -> None:
    """SIGTERM every process group at once, SIGKILL what is left after STOP_WAIT s."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for proc in procs:
            if proc.alive():
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.popen.pid, sig)
        deadline = time.monotonic() + STOP_WAIT
        for proc in procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.popen.wait(max(deadline - time.monotonic(), 0.1))
        lingering = [proc.name for proc in procs if proc.alive()]
        if not lingering:
            return
        if sig == signal.SIGTERM:
            say(f"not stopped {STOP_WAIT:g} s after SIGTERM, killed: {', '.join(lingering)}")


def wait_for(what: str, check: Callable[[], bool], procs: Sequence[Proc],
             timeout: float = 180.0) -> None:
    """Poll `check` until true; fail early (with the log tail) if one of `procs` died."""
    deadline = time.monotonic() + timeout
    while not check():
        dead = [p for p in procs if not p.alive()]
        if dead:
            raise RuntimeError(f"{dead[0].name} exited ({dead[0].popen.returncode}) "
                               f"before {what}:\n{dead[0].tail(30)}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"not {what} in {timeout:g} s")
        time.sleep(0.2)


def answers(url: str) -> Callable[[], bool]:
    def check() -> bool:
        try:
            httpx.get(url, timeout=2.0)
        except httpx.TransportError:
            return False
        return True
    return check


# --- a deployment: its database, broker namespace, config and processes -----------------

@dataclass
class Cluster:
    workdir: Path
    db_url: str
    namespace: str
    port: int
    hosts: list[str]
    procs: list[Proc] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def dsn(self) -> str:
        name = self.db_url.rsplit("/", 1)[1]
        return f"host=127.0.0.1 port=5432 user=postgres dbname={name}"

    @property
    def config(self) -> Path:
        return self.workdir / "stowage.toml"

    def of(self, *kinds: str) -> list[Proc]:
        return [p for p in self.procs if p.kind in kinds]

    def common(self) -> list[str]:
        return ["--config", str(self.config), "--database", self.db_url,
                "--transport-url", BROKER]

    def stop(self, *kinds: str) -> None:
        gone = self.of(*kinds)
        stop_all(gone)
        self.procs = [p for p in self.procs if p not in gone]


def write_config(cluster: Cluster, broker: bool) -> None:
    """Default intervals; unlimited quota (the bench boots many servers as admin)."""
    text = f'control_exchange = "{cluster.namespace}"\n' if broker else ""
    text += "[compute]\n"
    if broker:
        text += f'placement_url = "{cluster.url}/placement"\n'
    text += "[quota]\ninstances = -1\ncores = -1\nram = -1\n"
    cluster.config.write_text(text)


@contextlib.contextmanager
def cluster(workdir: Path, label: str, hosts: list[str], broker: bool = True
            ) -> Iterator[Cluster]:
    """A fresh database (and broker namespace); everything stopped and removed on exit."""
    tdir = workdir / label
    tdir.mkdir(parents=True, exist_ok=True)
    with servers.database("postgresql", tdir, label) as db_url:
        made = Cluster(tdir, db_url, f"scale{uuid.uuid4().hex[:10]}", servers._free_port(),
                       hosts)
        write_config(made, broker)
        try:
            yield made
        except Exception:
            for proc in made.procs:
                say(f"--- {proc.name} ({'alive' if proc.alive() else 'exited'}) ---\n"
                    f"{proc.tail()}")
            raise
        finally:
            say(f"{label}: stopping {len(made.procs)} processes")
            stop_all(made.procs)
            if broker:
                delete_queues(made.namespace, hosts)


def delete_queues(namespace: str, hosts: list[str]) -> None:
    """The target queues outlive their consumers: delete them (and any other of the run)."""
    from kombu.connection import Connection

    from stowage.messaging.amqp_wire import Names, kombu_url

    names = Names(namespace)
    wanted = {names.queue(t) for t in ("conductor", "scheduler",
                                       *(f"compute.{h}" for h in hosts))}
    wanted |= set(leftover_queues(namespace))
    with Connection(kombu_url(BROKER)) as conn:
        channel = conn.channel()
        for name in sorted(wanted):
            channel.queue_delete(name)
    left = leftover_queues(namespace)
    say(f"deleted {len(wanted)} queues of {namespace}" + (f"; {len(left)} left" if left
                                                          else ""))


def leftover_queues(namespace: str) -> list[str]:
    """The broker's queues of this namespace, per rabbitmqctl (none if it is not usable)."""
    try:
        out = subprocess.run(["rabbitmqctl", "-q", "list_queues", "name"], capture_output=True,
                             text=True, timeout=120, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [line.strip() for line in out.splitlines()
            if line.strip().startswith(namespace + ".")]


def start_api(c: Cluster, workers: int, access_log: bool) -> None:
    args = ["serve", "--services", "placement,compute,image,network", "--workers",
            str(workers), "--bind", f"127.0.0.1:{c.port}", *c.common(),
            "--log-level", "debug" if access_log else "warning"]
    api = launch("api", "api", args, c.workdir)
    c.procs.append(api)
    wait_for("API answering", answers(f"{c.url}/compute/v2.1"), [api])


def start_workers(c: Cluster, kind: str, count: int, wait: bool = True) -> None:
    started = []
    for i in range(count):
        proc = launch(f"{kind}-{i + 1}", kind, [kind, *c.common()], c.workdir)
        c.procs.append(proc)
        started.append(proc)
    for proc in started if wait else []:
        wait_for(f"{proc.name} started", _logged(proc, STARTED), [proc])


def _logged(proc: Proc, text: str) -> Callable[[], bool]:
    return lambda: text in proc.log_text()


def start_agents(c: Cluster, agents: int) -> None:
    """`agents` processes, each with its own contiguous share of the hosts (a hosts file)."""
    share = math.ceil(len(c.hosts) / agents)
    for i in range(agents):
        names = c.hosts[i * share:(i + 1) * share]
        if not names:
            break
        hosts_file = c.workdir / f"hosts-{i + 1}.toml"
        hosts_file.write_text("".join(f'[[hosts]]\nname = "{n}"\n' for n in names))
        args = ["agent", *c.common(), "--hosts-file", str(hosts_file)]
        c.procs.append(launch(f"agent-{i + 1}", "agent", args, c.workdir))


def start_inproc(c: Cluster, hosts: int) -> None:
    args = ["serve", "--bind", f"127.0.0.1:{c.port}", "--database", c.db_url, "--config",
            str(c.config), "--sim-hosts", str(hosts), "--log-level", "warning"]
    proc = launch("inproc", "inproc", args, c.workdir)
    c.procs.append(proc)
    wait_for("in-process server answering", answers(f"{c.url}/compute/v2.1"), [proc],
             timeout=3600)


# --- what /proc says: CPU, threads, memory, sockets ----------------------------------------

@dataclass(frozen=True)
class Stat:
    ppid: int
    cpu: float  # own + reaped children, seconds
    threads: int
    rss_mb: float


def proc_stats() -> dict[int, Stat]:
    """Every process's /proc/<pid>/stat, in one scan."""
    page_mb = os.sysconf("SC_PAGE_SIZE") / 2**20
    found: dict[int, Stat] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks = sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
        found[int(entry)] = Stat(int(fields[1]), ticks / CLK_TCK, int(fields[17]),
                                 int(fields[21]) * page_mb)
    return found


def tree(stats: dict[int, Stat], root: int) -> list[int]:
    """`root` and its descendants (alive ones)."""
    children: dict[int, list[int]] = {}
    for pid, st in stats.items():
        children.setdefault(st.ppid, []).append(pid)
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        if pid in stats:
            found.append(pid)
            todo.extend(children.get(pid, []))
    return found


def rabbit_pid() -> int | None:
    for entry in os.listdir("/proc"):
        with contextlib.suppress(OSError):
            if entry.isdigit() and Path(f"/proc/{entry}/comm").read_text().strip() == "beam.smp":
                return int(entry)
    return None


def postgres_pids(c: Cluster) -> list[int]:
    """Backends of the run's database (not ours) and the server's background processes."""
    with psycopg.connect(c.dsn, autocommit=True) as conn:
        rows = conn.execute("SELECT pid FROM pg_stat_activity WHERE pid <> pg_backend_pid() "
                            "AND (datname = current_database() OR datname IS NULL)").fetchall()
    return [int(r[0]) for r in rows]


def roots(c: Cluster) -> dict[str, list[int]]:
    """Kind -> the pids whose trees make it up."""
    found: dict[str, list[int]] = {k: [] for k in KINDS}
    for proc in c.procs:
        found[proc.kind].append(proc.popen.pid)
    found["postgres"] = postgres_pids(c)
    rabbit = rabbit_pid()
    found["rabbitmq"] = [rabbit] if rabbit else []
    return {k: v for k, v in found.items() if v}


CpuSnap = dict[str, dict[int, float]]


def cpu_snapshot(c: Cluster) -> CpuSnap:
    """Kind -> root pid -> CPU seconds of its tree so far."""
    stats = proc_stats()
    return {kind: {pid: sum(stats[p].cpu for p in tree(stats, pid)) for pid in pids}
            for kind, pids in roots(c).items()}


def cpu_delta(before: CpuSnap, after: CpuSnap) -> dict[str, float]:
    """CPU seconds per kind between two snapshots (a process new since counts whole)."""
    return {kind: sum(v - before.get(kind, {}).get(pid, 0.0) for pid, v in pids.items())
            for kind, pids in after.items()}


def sockets_to(port: int) -> set[str]:
    """Inodes of established TCP sockets whose remote port is `port`."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                cols = line.split()
                if cols[3] == "01" and int(cols[2].rsplit(":", 1)[1], 16) == port:
                    found.add(cols[9])
    return found


def socket_count(pids: Sequence[int], inodes: set[str]) -> int:
    count = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{pid}/fd"):
                with contextlib.suppress(OSError):
                    link = os.readlink(f"/proc/{pid}/fd/{fd}")
                    count += link.startswith("socket:[") and link[8:-1] in inodes
    return count


def footprint(c: Cluster) -> dict[str, dict[str, float]]:
    """Per kind of our processes: count, threads, RSS, AMQP and DB connections."""
    stats, amqp, pg = proc_stats(), sockets_to(5672), sockets_to(5432)
    result = {}
    for kind in ("api", "conductor", "scheduler", "agent", "inproc"):
        pids = [p for proc in c.of(kind) for p in tree(stats, proc.popen.pid)]
        if pids:
            result[kind] = {"processes": len(c.of(kind)),
                            "threads": sum(stats[p].threads for p in pids),
                            "rss_mb": sum(stats[p].rss_mb for p in pids),
                            "amqp_conns": socket_count(pids, amqp),
                            "db_conns": socket_count(pids, pg)}
    return result


# --- what the database says --------------------------------------------------------------

def utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC).replace(tzinfo=None)  # as stowage stores it


def registered(c: Cluster) -> tuple[int, int]:
    """(providers with inventory, nova-compute services up)."""
    since = utcnow() - datetime.timedelta(seconds=SERVICE_DOWN_TIME)
    with psycopg.connect(c.dsn, autocommit=True) as conn:
        providers = conn.execute(
            "SELECT count(DISTINCT resource_provider_id) FROM inventories").fetchone()
        up = conn.execute(
            "SELECT count(*) FROM services WHERE \"binary\" = 'nova-compute' AND deleted = 0 "
            "AND NOT forced_down AND last_seen_up >= %s", (since,)).fetchone()
    return int(providers[0] if providers else 0), int(up[0] if up else 0)


def ages(c: Cluster) -> dict[str, float]:
    """Seconds since the oldest compute heartbeat and the oldest resource tracker run."""
    now = utcnow()
    with psycopg.connect(c.dsn, autocommit=True) as conn:
        beat = conn.execute("SELECT min(last_seen_up) FROM services WHERE \"binary\" = "
                            "'nova-compute' AND deleted = 0").fetchone()
        node = conn.execute("SELECT min(updated_at) FROM compute_nodes "
                            "WHERE deleted = 0").fetchone()
    return {"heartbeat_age_s": (now - beat[0]).total_seconds() if beat and beat[0] else -1.0,
            "tracker_age_s": (now - node[0]).total_seconds() if node and node[0] else -1.0}


def db_counters(c: Cluster) -> dict[str, int]:
    with psycopg.connect(c.dsn, autocommit=True) as conn:
        row = conn.execute("SELECT xact_commit + xact_rollback, tup_inserted + tup_updated + "
                           "tup_deleted, tup_fetched FROM pg_stat_database "
                           "WHERE datname = current_database()").fetchone()
    assert row is not None
    return {"xact": int(row[0]), "written": int(row[1]), "fetched": int(row[2])}


def row_counts(c: Cluster) -> dict[str, int]:
    """Rows per non-empty table, and the database's size (key `_size_mb`)."""
    with psycopg.connect(c.dsn, autocommit=True) as conn:
        tables = [r[0] for r in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' "
            "AND table_type = 'BASE TABLE' ORDER BY table_name")]
        counts = {t: int(conn.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0])  # type: ignore[index]
                  for t in tables}
        size = conn.execute("SELECT pg_database_size(current_database())").fetchone()
    counts = {t: n for t, n in counts.items() if n}
    counts["_size_mb"] = int(size[0]) // 2**20 if size else 0
    return counts


# --- phase 1: N hosts at rest ----------------------------------------------------------------

def cpu_rates(c: Cluster, before: CpuSnap, seconds: float) -> dict[str, float]:
    return {k: v / seconds for k, v in cpu_delta(before, cpu_snapshot(c)).items()}


def fmt_cpu(rates: dict[str, float]) -> str:
    return " ".join(f"{k} {v:.2f}" for k, v in rates.items())


@dataclass
class Progress:
    """A line every `every` s: counts, API requests/s and CPU s/s per kind since the last."""

    c: Cluster
    started: float
    every: float = 15.0
    lines: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._mark()

    def _mark(self) -> None:
        self.snap, self.since = cpu_snapshot(self.c), time.monotonic()
        self.offset = self._log_size()

    def _log_size(self) -> int:
        api = self.c.of("api")
        return api[0].log.stat().st_size if api else 0

    def maybe(self, providers: int, up: int) -> None:
        now = time.monotonic()
        if now - self.since < self.every:
            return
        seconds = now - self.since
        api = self.c.of("api")
        reqs = sum(requests_between(api[0], self.offset, self._log_size()).values()) \
            if api else 0
        line: dict[str, Any] = {
            "t": now - self.started, "providers": providers, "up": up,
            "api_req_per_s": reqs / seconds, **ages(self.c),
            "cpu_per_s": cpu_rates(self.c, self.snap, seconds)}
        self.lines.append(line)
        say(f"{len(self.c.hosts)} hosts, {line['t']:.0f} s: {providers} providers with "
            f"inventory, {up} up (oldest heartbeat {line['heartbeat_age_s']:.0f} s); API "
            f"{line['api_req_per_s']:.0f} req/s; CPU s/s {fmt_cpu(line['cpu_per_s'])}")
        self._mark()


def register(c: Cluster, started: float, timeout: float) -> dict[str, Any]:
    """Poll the database until every host is registered and up (or `timeout` s passed)."""
    n, first = len(c.hosts), cpu_snapshot(c)
    result: dict[str, Any] = {"complete": False}
    progress = Progress(c, started)
    while time.monotonic() - started < timeout:
        providers, up = registered(c)
        now = time.monotonic()
        for key, count in (("providers_s", providers), ("services_up_s", up)):
            if count >= n and key not in result:
                result[key] = now - started
        if providers >= n and up >= n:
            result.update(complete=True, all_s=now - started)
            break
        progress.maybe(providers, up)
        dead = [p for p in c.procs if not p.alive()]
        if dead:
            raise RuntimeError(f"{dead[0].name} exited during registration:\n{dead[0].tail()}")
        time.sleep(2.0)
    result["elapsed_s"] = time.monotonic() - started
    result["providers"], result["services_up"] = registered(c)
    result["cpu_s"] = cpu_delta(first, cpu_snapshot(c))
    result["progress"] = progress.lines
    return result


def route(path: str) -> str:
    path = UUID_RE.sub("{id}", path.split("?", 1)[0])
    return re.sub(r"/\d+(?=/|$)", "/{n}", path)


def requests_between(proc: Proc, start: int, end: int) -> Counter[str]:
    with open(proc.log, "rb") as log:
        log.seek(start)
        text = log.read(end - start).decode(errors="replace")
    found: Counter[str] = Counter()
    for match in ACCESS_RE.finditer(text):
        found[f"{match.group(1)} {route(match.group(2))}"] += 1
    return found


def window(c: Cluster, seconds: float) -> dict[str, Any]:
    """Requests, CPU and database work over `seconds` of steady state."""
    api = c.of("api")[0]
    say(f"{len(c.hosts)} hosts: steady-state window of {seconds:g} s")
    snap, db0, off0, t0 = cpu_snapshot(c), db_counters(c), api.log.stat().st_size, time.time()
    time.sleep(seconds)
    cpu, db1, off1 = cpu_snapshot(c), db_counters(c), api.log.stat().st_size
    elapsed = time.time() - t0
    reqs = requests_between(api, off0, off1)
    result: dict[str, Any] = {
        "seconds": elapsed, "requests": dict(reqs.most_common()),
        "requests_per_s": sum(reqs.values()) / elapsed,
        "cpu_per_s": {k: v / elapsed for k, v in cpu_delta(snap, cpu).items()},
        "db_per_s": {k: (db1[k] - db0[k]) / elapsed for k in db0}}
    result.update(ages(c))
    result["providers"], result["services_up"] = registered(c)
    return result


def api_view(c: Cluster) -> dict[str, int]:
    """What the APIs say (once, outside the window): providers, compute services up."""
    placement = {"x-auth-token": "admin", "openstack-api-version": "placement 1.39"}
    with httpx.Client(base_url=c.url, timeout=300) as client:
        rps = client.get("/placement/resource_providers", headers=placement).json()
        found = client.get("/compute/v2.1/os-services", params={"binary": "nova-compute"},
                           headers=HEADERS).json()
    return {"providers": len(rps["resource_providers"]),
            "services_up": sum(s["state"] == "up" for s in found["services"])}


def steady(args: argparse.Namespace, workdir: Path, n: int) -> dict[str, Any]:
    hosts = [f"host{i:05d}" for i in range(1, n + 1)]
    with cluster(workdir, f"steady-{n}", hosts) as c:
        say(f"steady: {n} hosts on {args.agents} agents; starting the API")
        started = time.monotonic()
        start_api(c, args.api_workers, access_log=True)
        result: dict[str, Any] = {"hosts": n, "agents": args.agents,
                                  "api_workers": args.api_workers,
                                  "api_ready_s": time.monotonic() - started}
        start_workers(c, "conductor", 1, wait=False)
        start_workers(c, "scheduler", 1, wait=False)
        start_agents(c, args.agents)
        result["registration"] = reg = register(c, started, args.register_timeout)
        say(f"{n} hosts: registration {'done' if reg['complete'] else 'NOT done'} after "
            f"{reg['elapsed_s']:.0f} s ({reg['providers']} providers, {reg['services_up']} up)")
        result["footprint"] = footprint(c)
        result["rows"] = row_counts(c)
        result["api_view"] = api_view(c)
        if reg["complete"] or args.window_anyway:
            time.sleep(args.settle)
            result["window"] = window(c, args.window)
        return result


# --- phase 2: boots and moves ----------------------------------------------------------

class OpFailed(Exception):
    """An operation that did not settle as expected (ERROR, an HTTP error, a timeout)."""


@dataclass
class Ops:
    """The clients' side: send, then poll GET /servers/{id} until the server settles."""

    url: str  # the Compute API's base
    poll: float
    clients: int
    timeout: float = 600.0
    _local: threading.local = field(default_factory=threading.local)
    _made: list[httpx.Client] = field(default_factory=list)

    def client(self) -> httpx.Client:
        made: httpx.Client | None = getattr(self._local, "client", None)
        if made is None:
            made = self._local.client = httpx.Client(base_url=self.url, headers=HEADERS,
                                                     timeout=120)
            self._made.append(made)
        return made

    def close(self) -> None:
        for made in self._made:
            made.close()

    def settle(self, server_id: str, want: str) -> None:
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            resp = self.client().get(f"/servers/{server_id}")
            if want == "DELETED" and resp.status_code == 404:
                return
            view = resp.json()["server"]
            if view["OS-EXT-STS:task_state"] is None:
                if view["status"] == want:
                    return
                if view["status"] == "ERROR":
                    raise OpFailed(f"ERROR: {(view.get('fault') or {}).get('message')}")
            time.sleep(self.poll)
        raise OpFailed(f"not {want} in {self.timeout:g} s")

    def send(self, method: str, path: str, body: Any, expect: int) -> httpx.Response:
        resp = self.client().request(method, path, json=body)
        if resp.status_code != expect:
            raise OpFailed(f"{method} {route(path)} -> {resp.status_code}")
        return resp

    def boot(self, body: dict[str, Any]) -> str:
        server_id = str(self.send("POST", "/servers", body, 202).json()["server"]["id"])
        self.settle(server_id, "ACTIVE")
        return server_id

    def act(self, server_id: str, body: dict[str, Any], want: str, expect: int = 202) -> None:
        self.send("POST", f"/servers/{server_id}/action", body, expect)
        self.settle(server_id, want)

    def pair(self, server_id: str, move: dict[str, Any], confirm: dict[str, Any]) -> None:
        """A cold move to VERIFY_RESIZE, then its confirmation to ACTIVE."""
        self.act(server_id, move, "VERIFY_RESIZE")
        self.act(server_id, confirm, "ACTIVE", 204)

    def delete(self, server_id: str) -> None:
        self.send("DELETE", f"/servers/{server_id}", None, 204)
        self.settle(server_id, "DELETED")


def timed(ops: Ops, items: Sequence[Any], op: Callable[[Any], Any]
          ) -> tuple[list[float], list[Any], Counter[str], float]:
    """Run `op` on every item with `ops.clients` threads: latencies, results, failures, wall."""
    failures: Counter[str] = Counter()

    def one(item: Any) -> tuple[float | None, Any]:
        start = time.perf_counter()
        try:
            value = op(item)
        except (OpFailed, httpx.HTTPError, KeyError, ValueError) as exc:
            failures[str(exc)[:120]] += 1
            return None, None
        return time.perf_counter() - start, value

    start = time.perf_counter()
    with ThreadPoolExecutor(ops.clients) as pool:
        done = list(pool.map(one, items))
    wall = time.perf_counter() - start
    return [lat for lat, _ in done if lat is not None], [v for _, v in done], failures, wall


def stats(latencies: list[float], failures: Counter[str], wall: float,
          cpu: dict[str, float]) -> dict[str, Any]:
    ordered = sorted(latencies)
    done = len(ordered)
    return {"n": done, "failed": sum(failures.values()), "failures": dict(failures),
            "ops_per_s": done / wall if wall else 0.0, "wall_s": wall,
            "median_ms": statistics.median(ordered) * 1000 if ordered else None,
            # nearest rank: the smallest value at or above 95% of the samples
            "p95_ms": ordered[math.ceil(done * 0.95) - 1] * 1000 if ordered else None,
            "cpu_ms_per_op": {k: v * 1000 / max(done, 1) for k, v in cpu.items()}}


def setup_compute(c: Cluster) -> dict[str, Any]:
    """Two flavors and an image; the boot request's body."""
    import moves

    with httpx.Client(base_url=f"{c.url}/compute/v2.1", headers=HEADERS, timeout=60) as client:
        small, large, image = moves.setup(client, f"{c.url}/image")
    return {"large": large, "boot": {"server": {"name": "vm", "flavorRef": small,
                                                "imageRef": image, "networks": "none"}}}


def run_ops(c: Cluster, setup: dict[str, Any], args: argparse.Namespace,
            label: str) -> dict[str, Any]:
    """Boot `--servers`, resize+confirm, migrate+confirm, live-migrate each, delete them."""
    ops = Ops(f"{c.url}/compute/v2.1", args.poll, args.clients)
    result: dict[str, Any] = {}
    live = {"os-migrateLive": {"host": None, "block_migration": "auto"}}
    confirm = {"confirmResize": None}
    resize = {"resize": {"flavorRef": setup["large"]}}
    phases: list[tuple[str, Callable[[Any], Any]]] = [
        ("resize+confirm", lambda i: ops.pair(i, resize, confirm)),
        ("migrate+confirm", lambda i: ops.pair(i, {"migrate": None}, confirm)),
        ("live-migrate", lambda i: ops.act(i, live, "ACTIVE"))]
    try:
        ids = phase(c, ops, label, "boot", [setup["boot"]] * args.servers, ops.boot, result)
        ids = [i for i in ids if i]
        for name, op in phases:
            phase(c, ops, label, name, ids, op, result)
        phase(c, ops, label, "delete", ids, ops.delete, {})
    finally:
        ops.close()
    return result


def phase(c: Cluster, ops: Ops, label: str, name: str, items: Sequence[Any],
          op: Callable[[Any], Any], result: dict[str, Any]) -> list[Any]:
    before = cpu_snapshot(c)
    latencies, values, failures, wall = timed(ops, items, op)
    result[name] = row = stats(latencies, failures, wall, cpu_delta(before, cpu_snapshot(c)))
    say(f"{label} {name}: {row['n']} done, {row['failed']} failed, {row['ops_per_s']:.2f} "
        f"ops/s, median {row['median_ms'] or 0:.0f} ms, p95 {row['p95_ms'] or 0:.0f} ms"
        + (f"; failures {dict(failures)}" if failures else ""))
    return values


def parse_config(text: str) -> tuple[int, int]:
    workers, _, conductors = text.lower().partition("x")
    if not (workers.isdigit() and conductors.isdigit()):
        raise SystemExit(f"scale: a config is AxC (API workers x conductors) or inproc, "
                         f"not {text!r}")
    return int(workers), int(conductors)


def scaled_out(args: argparse.Namespace, workdir: Path, configs: list[str]
               ) -> dict[str, Any]:
    """The AxC configs on one database; agents and scheduler stay up between them."""
    hosts = [f"host{i:05d}" for i in range(1, args.move_hosts + 1)]
    results: dict[str, Any] = {}
    with cluster(workdir, "moves", hosts) as c:
        setup: dict[str, Any] = {}
        for config in configs:
            workers, conductors = parse_config(config)
            c.stop("api", "conductor")
            say(f"throughput {config}: {workers} API workers, {conductors} conductors")
            started = time.monotonic()
            start_api(c, workers, access_log=False)
            start_workers(c, "conductor", conductors)
            if not setup:
                start_workers(c, "scheduler", 1)
                start_agents(c, args.agents)
                reg = register(c, started, args.register_timeout)
                if not reg["complete"]:
                    raise RuntimeError(f"{len(hosts)} hosts did not register: {reg}")
                setup = setup_compute(c)
            results[config] = run_ops(c, setup, args, config)
    return results


def in_process(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    hosts = [f"host{i}" for i in range(1, args.move_hosts + 1)]
    with cluster(workdir, "inproc", hosts, broker=False) as c:
        say(f"throughput inproc: serve --sim-hosts {args.move_hosts}")
        started = time.monotonic()
        start_inproc(c, args.move_hosts)
        reg = register(c, started, args.register_timeout)
        if not reg["complete"]:
            raise RuntimeError(f"in-process: {len(hosts)} hosts did not register: {reg}")
        return run_ops(c, setup_compute(c), args, "inproc")


def throughput(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    results = scaled_out(args, workdir, [c for c in configs if c != "inproc"]) \
        if any(c != "inproc" for c in configs) else {}
    if "inproc" in configs:
        results["inproc"] = in_process(args, workdir)
    return results


# --- tables --------------------------------------------------------------------------------

def table(title: str, headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    cells = [[str(h) for h in headers]] + [[_cell(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    print(f"\n{title}")
    for i, row in enumerate(cells):
        print("  ".join(v.rjust(w) if j else v.ljust(w) for j, (v, w) in
                        enumerate(zip(row, widths, strict=True))))
        if i == 0:
            print("  ".join("-" * w for w in widths))


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 10 else f"{value:.1f}"
    return str(value)


def print_steady(runs: list[dict[str, Any]]) -> None:
    table("Registration from a cold start (s since the API was launched)",
          ["hosts", "agents", "API workers", "API up", "providers", "services up", "all",
           "registered", "per the APIs"],
          [[r["hosts"], r["agents"], r.get("api_workers", 1), r["api_ready_s"],
            r["registration"].get("providers_s"),
            r["registration"].get("services_up_s"), r["registration"].get("all_s"),
            f"{r['registration']['providers']}/{r['registration']['services_up']}",
            f"{r['api_view']['providers']}/{r['api_view']['services_up']}"]
           for r in runs])
    with_window = [r for r in runs if "window" in r]
    table("Steady state", ["hosts", "window s", "API req/s", "req/host/min", "DB xact/s",
                           "heartbeat age s", "tracker age s", "up"],
          [[r["hosts"], r["window"]["seconds"], r["window"]["requests_per_s"],
            r["window"]["requests_per_s"] * 60 / r["hosts"], r["window"]["db_per_s"]["xact"],
            r["window"]["heartbeat_age_s"], r["window"]["tracker_age_s"],
            r["window"]["services_up"]] for r in with_window])
    for r in runs:
        print_run_details(r)


def print_run_details(r: dict[str, Any]) -> None:
    n, win = r["hosts"], r.get("window", {})
    cpu, reg_cpu = win.get("cpu_per_s", {}), r["registration"]["cpu_s"]
    fp = r["footprint"]
    table(f"{n} hosts: CPU and footprint per kind of process (CPU s/s: 1.0 = one core)",
          ["kind", "procs", "CPU s/s", "CPU ms/host/min", "registration CPU s", "threads",
           "RSS MB", "AMQP conns", "DB conns"],
          [[k, fp.get(k, {}).get("processes"), cpu.get(k), cpu[k] * 60000 / n if k in cpu
            else None, reg_cpu.get(k), fp.get(k, {}).get("threads"), fp.get(k, {}).get("rss_mb"),
            fp.get(k, {}).get("amqp_conns"), fp.get(k, {}).get("db_conns")]
           for k in KINDS if k in cpu or k in reg_cpu])
    if win:
        secs = win["seconds"]
        table(f"{n} hosts: API requests in the window, by route", ["route", "req/s",
                                                                   "per host per min"],
              [[k, v / secs, v * 60 / secs / n] for k, v in win["requests"].items()])
    rows = r["rows"]
    table(f"{n} hosts: database rows ({rows.get('_size_mb')} MB)", ["table", "rows",
                                                                     "per host"],
          [[t, v, v / n] for t, v in rows.items() if not t.startswith("_")])


def print_throughput(results: dict[str, Any]) -> None:
    kinds = ["api", "conductor", "scheduler", "agent", "inproc", "postgres"]
    rows = []
    for config, phases in results.items():
        for name, row in phases.items():
            cpu = row["cpu_ms_per_op"]
            rows.append([config, name, row["n"], row["failed"], row["ops_per_s"],
                         row["median_ms"], row["p95_ms"], *[cpu.get(k) for k in kinds]])
    table("Throughput (latency: request to settled state; CPU ms per operation)",
          ["config", "operation", "n", "failed", "ops/s", "median ms", "p95 ms",
           *[f"{k} ms" for k in kinds]], rows)


# --- main ----------------------------------------------------------------------------------

def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--phases", default="steady,throughput", help="steady,throughput")
    p.add_argument("--hosts", default="1000", help="comma-separated host counts (steady)")
    p.add_argument("--agents", type=int, default=4, help="agent processes sharing the hosts")
    p.add_argument("--api-workers", type=int, default=1,
                   help="API worker processes (serve --workers) in the steady phase")
    p.add_argument("--window", type=float, default=60.0, help="steady-state window, s")
    p.add_argument("--settle", type=float, default=10.0, help="s between registration and "
                   "the window")
    p.add_argument("--window-anyway", action="store_true",
                   help="measure the window even if registration did not complete")
    p.add_argument("--register-timeout", type=float, default=900.0)
    p.add_argument("--move-hosts", type=int, default=1000, help="hosts (throughput)")
    p.add_argument("--configs", default="1x1,2x2,4x4,inproc",
                   help="API workers x conductors, comma-separated; inproc: serve --sim-hosts")
    p.add_argument("--clients", type=int, default=8, help="concurrent clients")
    p.add_argument("--servers", type=int, default=100, help="servers per config")
    p.add_argument("--poll", type=float, default=0.05, help="status poll period, s")
    p.add_argument("--json", help="write the raw numbers to this file")
    p.add_argument("--workdir", help="keep logs and hosts files here (default: a temp dir)")
    return p.parse_args(argv)


def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    phases = set(args.phases.split(","))
    results: dict[str, Any] = {"args": vars(args)}
    if "steady" in phases:
        results["steady"] = []
        for n in (int(h) for h in args.hosts.split(",")):
            results["steady"].append(steady(args, workdir, n))
        print_steady(results["steady"])
    if "throughput" in phases:
        results["throughput"] = throughput(args, workdir)
        print_throughput(results["throughput"])
    return results


def _interrupted(signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    # Also SIGINT: a shell starting us in the background would have it ignored.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, _interrupted)
    with contextlib.ExitStack() as stack:
        if args.workdir:
            workdir = Path(args.workdir)
            workdir.mkdir(parents=True, exist_ok=True)
        else:
            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="scale-")))
        try:
            results = run(args, workdir)
        except KeyboardInterrupt as exc:
            say(f"interrupted ({exc}); everything was stopped and removed")
            return 130
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
