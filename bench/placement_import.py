"""Time `stowage manage placement import` and `export` on a large upstream database.

Why: an operator adopting a real cloud's Placement database has ~100k providers
and a million rows; the import must take minutes, not hours, and say how far it
is. This script builds an upstream-schema database (upstream 16.0.0's tables,
as `placement-manage db sync` creates them -- tests/functional/
test_placement_adopt_schema.py holds the two equal) with N providers, imports it
into a fresh stowage database, exports that into a fresh upstream-schema
database, and prints rows, seconds, rows/s and this process's CPU seconds for
each. It asserts nothing but that the exported rows count the same.

    PYTHONPATH=src python3 bench/placement_import.py [--providers 100000]
        [--backend postgresql|mysql|sqlite] [--target-backend same|sqlite|...]

The world: 4 of 5 providers are roots (compute nodes with VCPU, MEMORY_MB and
DISK_GB, two traits, one of 100 aggregates, one consumer of 3 allocations);
the fifth is a child of the root before it (CUSTOM_VF, one trait).
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import os_resource_classes as orc
import os_traits
import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.dbs import throwaway_database  # noqa: E402

from stowage.db import Database  # noqa: E402
from stowage.placement.adopt import export_database, import_database  # noqa: E402
from stowage.placement.adopt import upstream_schema as us  # noqa: E402
from stowage.placement.adopt.progress import cpu_seconds  # noqa: E402

NOW = datetime.datetime(2026, 1, 1)
VF = 10000  # CUSTOM_VF's id, the first custom one


def _uuid(kind: str, n: int) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_OID, f"{kind}-{n}"))


def _catalogue() -> dict[str, list[dict[str, Any]]]:
    classes = [{"id": i, "name": name} for i, name in enumerate(orc.STANDARDS)]
    traits = [{"id": i + 1, "name": name} for i, name in
              enumerate(sorted(os_traits.get_traits()) + ["CUSTOM_GOLD"])]
    return {"resource_classes": classes + [{"id": VF, "name": "CUSTOM_VF"}],
            "traits": traits,
            "consumer_types": [{"id": 1, "name": "INSTANCE"}, {"id": 2, "name": "MIGRATION"}],
            "projects": [{"id": i, "external_id": _uuid("p", i)} for i in range(1, 101)],
            "users": [{"id": i, "external_id": _uuid("u", i)} for i in range(1, 101)],
            "placement_aggregates": [{"id": i, "uuid": _uuid("a", i)} for i in range(1, 101)]}


def _provider_rows(n: int) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each provider and what hangs off it, as (table, row)."""
    inv = {"reserved": 0, "min_unit": 1, "step_size": 1, "allocation_ratio": 1.0}
    root = 0
    for i in range(1, n + 1):
        child = i % 5 == 0
        root = root if child else i
        yield "resource_providers", {"id": i, "uuid": _uuid("rp", i), "name": f"rp-{i}",
                                     "generation": 3, "root_provider_id": root,
                                     "parent_provider_id": root if child else None}
        if child:
            yield "inventories", {"resource_provider_id": i, "resource_class_id": VF,
                                  "total": 64, "max_unit": 64, **inv}
            yield "resource_provider_traits", {"resource_provider_id": i, "trait_id": 1}
            continue
        for rc, total in ((0, 64), (1, 262144), (2, 4096)):
            yield "inventories", {"resource_provider_id": i, "resource_class_id": rc,
                                  "total": total, "max_unit": total, **inv}
        for trait in (2, 3):
            yield "resource_provider_traits", {"resource_provider_id": i, "trait_id": trait}
        yield "resource_provider_aggregates", {"resource_provider_id": i,
                                               "aggregate_id": 1 + i % 100}
        consumer = _uuid("c", i)
        yield "consumers", {"id": i, "uuid": consumer, "project_id": 1 + i % 100,
                            "user_id": 1 + i % 100, "generation": 1,
                            "consumer_type_id": 1 + (i % 7 == 0)}
        for rc, used in ((0, 4), (1, 8192), (2, 40)):
            yield "allocations", {"resource_provider_id": i, "consumer_id": consumer,
                                  "resource_class_id": rc, "used": used}


def build(url: str, providers: int) -> int:
    """An upstream-schema database at `url` with `providers` providers; rows written."""
    engine = sa.create_engine(url)
    written = 0
    with engine.begin() as conn:
        if conn.dialect.name in ("mysql", "mariadb"):
            conn.execute(sa.text("SET SESSION sql_mode = 'NO_AUTO_VALUE_ON_ZERO'"))
        us.metadata.create_all(conn)
        conn.execute(us.alembic_version.insert().values(version_num=us.HEAD))
        for name, rows in _catalogue().items():
            conn.execute(us.metadata.tables[name].insert(),
                         [{**row, "created_at": NOW} for row in rows])
            written += len(rows)
        batches: dict[str, list[dict[str, Any]]] = {name: [] for name in us.TABLES}
        for name, row in _provider_rows(providers):
            batches[name].append({**row, "created_at": NOW})
            if len(batches[name]) >= 10000:
                written += _flush(conn, batches)
        written += _flush(conn, batches)
    engine.dispose()
    return written


def _flush(conn: sa.Connection, batches: dict[str, list[dict[str, Any]]]) -> int:
    done = 0
    for name in us.TABLES:  # parents first
        if batches[name]:
            conn.execute(us.metadata.tables[name].insert(), batches[name])
            done += len(batches[name])
            batches[name] = []
    return done


def _timed(what: str, work: Any) -> Any:
    wall, cpu = time.monotonic(), cpu_seconds()
    progress = work()
    seconds, used = time.monotonic() - wall, cpu_seconds() - cpu
    print(f"{what}: {progress.rows} rows in {seconds:.1f} s, {progress.rows / seconds:,.0f} "
          f"rows/s, {used:.1f} CPU s in this process", flush=True)
    return progress


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--providers", type=int, default=100_000)
    parser.add_argument("--backend", default="postgresql",
                        choices=("postgresql", "mysql", "sqlite"))
    parser.add_argument("--target-backend", default="same",
                        choices=("same", "postgresql", "mysql", "sqlite"))
    parser.add_argument("--quiet", action="store_true", help="no per-table progress")
    args = parser.parse_args()
    target = args.backend if args.target_backend == "same" else args.target_backend
    out = None if args.quiet else sys.stderr
    with throwaway_database(args.backend) as source, throwaway_database(target) as stowage, \
            throwaway_database(args.backend) as back:
        started = time.monotonic()
        rows = build(source, args.providers)
        print(f"built an upstream {args.backend} database: {args.providers} providers, "
              f"{rows} rows in {time.monotonic() - started:.1f} s", flush=True)
        db = Database(stowage)
        imported = _timed(f"import {args.backend} -> stowage on {target}",
                          lambda: import_database(source, db, out=out))
        exported = _timed(f"export stowage on {target} -> {args.backend}",
                          lambda: export_database(db, back, out=out))
        db.dispose()
        assert imported.rows == rows and exported.rows == rows, (rows, imported.rows,
                                                                 exported.rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
