"""The dashboard's server CPU per request with 1,000 hosts and 10,000 servers.

    python3 bench/dashboard.py [--hosts 1000] [--servers 10000] [--moves 20]
                               [--backend sqlite|postgresql] [--repeat 15]

Why in-process and per thread: the figure asked for is what one request
costs the stowage process, not the network or the client. The world is
written straight into a fresh database (services, compute nodes and host
mappings in the cell; providers, inventories and allocations through the
Placement API in-process; a tenth of the hosts with a child provider for a
NIC's bandwidth; `--moves` servers in the middle of a resize, the migration
holding the source and the instance the destination), then each route is
asked `--repeat` times through the dashboard app's own `respond` and the
CPU time of the answering thread (`time.thread_time`) is taken. On
PostgreSQL the database server's own CPU is not in the figure (another
process); on SQLite everything is. The audit, which a page never waits for
(it runs in the background), is timed on its own, and so is the capacity
report (background too: the page's refresh reads its latest result). The
drain plan of one host (`--drain-host`, its servers given request specs and
every service a fresh heartbeat, so the scheduler sees the hosts up) is
asked as the page and as JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from servers import database  # noqa: E402  (bench/servers.py, beside this file)

from stowage import config  # noqa: E402
from stowage.cli import build_asgi  # noqa: E402
from stowage.compute import cells as cell_records  # noqa: E402
from stowage.compute import flavors, instances, migrations, services  # noqa: E402
from stowage.db import Database, schema  # noqa: E402
from stowage.placement.client import Holding, PlacementClient  # noqa: E402
from stowage.web.http import Request  # noqa: E402

FLAVOR = {"name": "m1.small", "flavorid": "2", "vcpus": 1, "memory_mb": 2048, "root_gb": 20,
          "ephemeral_gb": 0, "swap": 0, "extra_specs": {}}
AMOUNTS = {"VCPU": 1, "MEMORY_MB": 2048, "DISK_GB": 20}
INVENTORY = {"VCPU": {"total": 64, "allocation_ratio": 4.0},
             "MEMORY_MB": {"total": 262144, "reserved": 4096, "allocation_ratio": 1.0},
             "DISK_GB": {"total": 4000, "allocation_ratio": 1.0}}


def _hosts(cells: Any, placement: PlacementClient, count: int) -> list[str]:
    """`count` hosts host0001.. in cell1, each a provider tree; returns the node uuids."""
    cell = cells.by_name(cell_records.CELL1)
    cell_db, nodes = cells.database(cell), []
    with cell_db.write() as conn:
        for n in range(1, count + 1):
            host, node = f"host{n:04d}", str(uuid.uuid4())
            service = services.ensure_service(conn, host, "nova-compute")
            services.ensure_compute_node(conn, node, host, service.id,
                                         {"vcpus": 64, "memory_mb": 262144, "local_gb": 4000,
                                          "cpu_allocation_ratio": 4.0, "ram_allocation_ratio": 1.0,
                                          "disk_allocation_ratio": 1.0})
            nodes.append(node)
    with cells.api.write() as api:  # the mappings: a transaction of the API database's
        for n in range(1, count + 1):
            cell_records.map_host(api, f"host{n:04d}", cell)
    for n, node in enumerate(nodes, start=1):
        placement.ensure_provider(node, f"host{n:04d}")
        placement.set_inventories(node, INVENTORY)
        if n % 10 == 0:
            nic = str(uuid.uuid4())
            placement.ensure_provider(nic, f"host{n:04d}:ens1", parent_uuid=node)
            placement.set_inventories(nic, {"NET_BW_EGR_KILOBIT_PER_SEC": {"total": 10_000_000}})
    return nodes


def _servers(cells: Any, placement: PlacementClient, nodes: list[str], count: int
             ) -> list[tuple[str, int]]:
    """`count` active servers spread over the hosts; returns (uuid, host index)."""
    cell_db = cells.database(cells.by_name(cell_records.CELL1))
    made: list[tuple[str, int]] = []
    with cell_db.write() as conn:
        for n in range(count):
            where = n % len(nodes)
            inst = instances.Instance(
                uuid=str(uuid.uuid4()), project_id=f"project{n % 50}", user_id="bench",
                display_name=f"server-{n:05d}", flavor=dict(FLAVOR), vm_state="active",
                power_state=1, host=f"host{where + 1:04d}", node=f"host{where + 1:04d}")
            instances.create(conn, inst)
            made.append((inst.uuid, where))
    cell = cells.by_name(cell_records.CELL1)
    with cells.api.write() as api:
        for server, _ in made:
            cell_records.map_instance(api, server, cell, "bench", "bench")
    for start in range(0, len(made), 500):
        placement.write_many({uuid_: Holding({nodes[where]: dict(AMOUNTS)}, None, "p", "bench")
                              for uuid_, where in made[start:start + 500]})
    return made


def _moves(cells: Any, placement: PlacementClient, nodes: list[str],
           made: list[tuple[str, int]], count: int) -> None:
    """The first `count` servers in VERIFY_RESIZE: the migration holds the source."""
    cell_db = cells.database(cells.by_name(cell_records.CELL1))
    for server, where in made[:count]:
        dest = (where + 1) % len(nodes)
        mig = str(uuid.uuid4())
        with cell_db.write() as conn:
            migrations.create(conn, migrations.Migration(
                uuid=mig, instance_uuid=server, migration_type="resize", status="finished",
                source_compute=f"host{where + 1:04d}", dest_compute=f"host{dest + 1:04d}"))
            instances.update(conn, server, vm_state="resized", host=f"host{dest + 1:04d}")
        held = placement.holding(server)
        placement.write_many({
            mig: Holding({nodes[where]: dict(AMOUNTS)}, None, "p", "bench", "MIGRATION"),
            server: Holding({nodes[dest]: dict(AMOUNTS)}, held.generation, "p", "bench")})


def _plannable(cells: Any, made: list[tuple[str, int]], host: str) -> None:
    """Flavors to count, each service up, and request specs for `host`'s servers."""
    with cells.api.write() as api:
        for name, vcpus, ram, disk in (("m1.small", 1, 2048, 20), ("m1.medium", 2, 4096, 40),
                                       ("m1.large", 4, 8192, 80)):
            flavors.create(api, flavors.NewFlavor(name=name, vcpus=vcpus, memory_mb=ram,
                                                  root_gb=disk))
        mine = [server for server, where in made if f"host{where + 1:04d}" == host]
        for server in mine:
            instances.save_request_spec(api, server, {
                "instance_uuid": server, "flavor": dict(FLAVOR), "image": {},
                "project_id": "bench", "user_id": "bench"})
    _heartbeat(cells)


def _heartbeat(cells: Any) -> None:
    cell_db = cells.database(cells.by_name(cell_records.CELL1))
    with cell_db.write() as conn:
        hosts = [s.host for s in services.list_services(conn, binary="nova-compute")]
        services.heartbeat_many(conn, hosts, "nova-compute")


def _ask(dashboard: Any, path: str, query: str = "") -> tuple[float, float, int, int]:
    req = _request(path, query)
    wall, cpu = time.perf_counter(), time.thread_time()
    resp = dashboard.respond(req)
    return (time.thread_time() - cpu) * 1000, (time.perf_counter() - wall) * 1000, \
        resp.status, len(resp.body)


def _request(path: str, query: str) -> Request:
    return Request(method="GET", path=path, query_string=query, headers={"accept": "text/html"},
                   body=b"", base_url="http://127.0.0.1", remote_addr="127.0.0.1")


ROUTES = [
    ("page /", "/", ""),
    ("page / (hosts page 40, servers page 400)", "/", "hosts_page=40&servers_page=400"),
    ("api hosts page 1", "/dashboard/api/hosts", ""),
    ("api hosts page 50", "/dashboard/api/hosts", "page=50"),
    ("api hosts q=host09", "/dashboard/api/hosts", "q=host09"),
    ("api hosts state=disabled", "/dashboard/api/hosts", "state=disabled"),
    ("api servers page 1", "/dashboard/api/servers", ""),
    ("api servers page 500", "/dashboard/api/servers", "page=500"),
    ("api servers host=host0500", "/dashboard/api/servers", "host=host0500"),
    ("api servers status=VERIFY_RESIZE", "/dashboard/api/servers", "status=VERIFY_RESIZE"),
    ("api servers q=server-0999", "/dashboard/api/servers", "q=server-0999"),
    ("api moves", "/dashboard/api/moves", ""),
    ("part hosts (live refresh)", "/dashboard/part/hosts", ""),
    ("part servers (live refresh)", "/dashboard/part/servers", ""),
    ("part moves (live refresh)", "/dashboard/part/moves", ""),
]


def _measure(label: str, work: Callable[[], tuple[float, float, int, int]], repeat: int) -> None:
    work()  # warm: snapshots, statement caches
    runs = [work() for _ in range(repeat)]
    cpu, wall = sorted(r[0] for r in runs), sorted(r[1] for r in runs)
    status, size = runs[-1][2], runs[-1][3]
    print(f"{label:44} {statistics.median(cpu):8.1f} {cpu[int(len(cpu) * 0.9) - 1]:8.1f} "
          f"{statistics.median(wall):8.1f} {status:6} {size:9}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--servers", type=int, default=10000)
    parser.add_argument("--moves", type=int, default=20)
    parser.add_argument("--backend", default="sqlite", choices=("sqlite", "postgresql"))
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--drain-host", default="host0500")
    args = parser.parse_args()
    with TemporaryDirectory(prefix="stowage-bench-dashboard-") as tmp, \
            database(args.backend, Path(tmp), "dashboard") as url:
        settings = config.Settings(database=url)
        db = Database(url)
        schema.upgrade(db)
        cells = cell_records.bootstrap_with(db, settings.compute)
        app = build_asgi(settings, db, at_root=False, cells=cells)
        try:
            _run(app, cells, args)
        finally:
            dict(app.mounts)["/compute"].state.plane.stop()


def _run(app: Any, cells: Any, args: argparse.Namespace) -> None:
    placement = PlacementClient.local(dict(app.mounts)["/placement"])
    started = time.perf_counter()
    nodes = _hosts(cells, placement, args.hosts)
    made = _servers(cells, placement, nodes, args.servers)
    _moves(cells, placement, nodes, made, args.moves)
    print(f"world: {args.hosts} hosts, {args.servers} servers, {args.moves} moves on "
          f"{args.backend}, written in {time.perf_counter() - started:.0f} s", flush=True)
    dashboard = app.fallback.dashboard
    cpu, wall = time.thread_time(), time.perf_counter()
    audit = dashboard.audit.run()
    print(f"audit (background, not per view): {(time.thread_time() - cpu) * 1000:.0f} ms CPU, "
          f"{(time.perf_counter() - wall) * 1000:.0f} ms wall, ok={audit['ok']}, "
          f"{len(audit['violations'])} violation(s)", flush=True)
    dashboard.audit.fresh()
    dashboard.audit.max_age = 1e9  # the views below show that result, as a page would
    _capacity(dashboard, cells, made, args)
    print(f"{'route (ms per request)':44} {'cpu p50':>8} {'cpu p90':>8} {'wall p50':>8} "
          f"{'status':>6} {'bytes':>9}")
    for label, path, query in ROUTES:
        _measure(label, lambda p=path, q=query: _ask(dashboard, p, q), args.repeat)
    _plans(dashboard, cells, made, args)


def _capacity(dashboard: Any, cells: Any, made: list[tuple[str, int]],
              args: argparse.Namespace) -> None:
    """The capacity count the background runs, timed alone; then kept, as the audit's."""
    _plannable(cells, made, args.drain_host)
    cpu, wall = time.thread_time(), time.perf_counter()
    report = dashboard.capacity.run()
    print(f"capacity (background, not per view; {len(report['flavors'])} flavors): "
          f"{(time.thread_time() - cpu) * 1000:.0f} ms CPU, "
          f"{(time.perf_counter() - wall) * 1000:.0f} ms wall, fit "
          + ", ".join(f"{f['flavor']} {f['total']}" for f in report["flavors"]), flush=True)
    dashboard.capacity.fresh()
    dashboard.capacity.max_age = 1e9


def _plans(dashboard: Any, cells: Any, made: list[tuple[str, int]],
           args: argparse.Namespace) -> None:
    """The drain plan of one host (each view makes it) and the kept capacity report."""
    count = sum(1 for _, where in made if f"host{where + 1:04d}" == args.drain_host)
    plan = dashboard.respond(_request(f"/dashboard/api/drain-plan/{args.drain_host}", ""))
    totals = json.loads(plan.body)["drain"]["totals"]
    print(f"drain plan of {args.drain_host} ({count} servers): {totals}", flush=True)
    repeat = max(3, args.repeat // 3)
    for label, path in ((f"page drain plan {args.drain_host}",
                         f"/dashboard/drain/{args.drain_host}"),
                        (f"api drain-plan {args.drain_host}",
                         f"/dashboard/api/drain-plan/{args.drain_host}"),
                        ("api capacity (latest)", "/dashboard/api/capacity"),
                        ("part capacity (live refresh)", "/dashboard/part/capacity")):
        _heartbeat(cells)
        _measure(label, lambda p=path: _ask(dashboard, p), repeat)


if __name__ == "__main__":
    main()
