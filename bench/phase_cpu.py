"""CPU seconds a target's server processes and its PostgreSQL backends spend in a phase.

Why /proc and not wall-clock: this 2-core machine is shared, so rates move
with whatever else runs; the CPU a target's own processes burn per operation
does not. The server is its process group's tree (a master and its workers);
the database side is every backend connected to the target's own database
(pg_stat_activity), so a run's figures include the SQL work each target asks
for. SQLite runs inside the server, so there the database side is zero.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa

__all__ = ["Snapshot", "snapshot", "spent"]

CLK_TCK = os.sysconf("SC_CLK_TCK")
PG_ADMIN_DSN = "host=127.0.0.1 port=5432 user=postgres dbname=postgres"


def _stats() -> dict[int, tuple[int, float]]:
    """pid -> (parent pid, own CPU seconds) for every process, in one scan."""
    found: dict[int, tuple[int, float]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            found[int(entry)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / CLK_TCK)
    return found


def _tree(stats: dict[int, tuple[int, float]], root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in stats.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        if pid in stats:
            found.append(pid)
            todo.extend(children.get(pid, []))
    return found


def _backends(db_url: str) -> list[int]:
    """Pids of the PostgreSQL backends connected to the database of `db_url`."""
    url = sa.make_url(db_url)
    if url.get_backend_name() != "postgresql":
        return []
    import psycopg

    with psycopg.connect(PG_ADMIN_DSN, autocommit=True) as conn:
        rows = conn.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s",
                            (url.database,)).fetchall()
    return [int(r[0]) for r in rows]


@dataclass(frozen=True)
class Snapshot:
    server: dict[int, float]  # pid -> CPU seconds
    database: dict[int, float]


def snapshot(server_pid: int, db_url: str) -> Snapshot:
    stats = _stats()
    return Snapshot({p: stats[p][1] for p in _tree(stats, server_pid)},
                    {p: stats[p][1] for p in _backends(db_url) if p in stats})


def spent(before: Snapshot, after: Snapshot) -> tuple[float, float]:
    """(server, database) CPU seconds between two snapshots; a process new since counts whole.

    A process that exited in between is lost; pools keep their connections
    and workers live for the whole run, so that does not happen in a phase.
    """
    def delta(a: dict[int, float], b: dict[int, float]) -> float:
        return sum(cpu - a.get(pid, 0.0) for pid, cpu in b.items())

    return delta(before.server, after.server), delta(before.database, after.database)
