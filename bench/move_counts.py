"""SQL statements and transactions of one resize+confirm, counted inside the process.

Why in this process: `moves.py` measures a real `stowage serve`, which cannot
tell us what each request costs in SQL. Here the same app is built in the
bench process (as the functional tests do: schema upgrade, `build_asgi`,
uvicorn on a thread), an SQLAlchemy `before_cursor_execute` listener counts
every statement, and `begin`/`commit` listeners count the transactions. Each
statement is charged to the innermost stowage layer on the stack:

    placement    a Placement handler or domain module (reached through the
                 in-process client)
    agent        compute/agent/ (steps, guest store, PCI counts)
    scheduler    compute/scheduler/
    conductor    compute/conductor/ (journal, events, records)
    API request  compute/api/ (the POST .../action itself)

One server is booted and resized+confirmed once to warm caches; the counted
resize+confirm is the second one. The cast pool is drained instead of polled,
and one `GET /servers/{id}` is counted on its own (a client polls it).
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

__all__ = ["Counts", "count_resize_confirm"]

# Module prefix -> phase. The innermost of placement, agent and scheduler on the
# stack wins (the Placement client is the caller's side of the seam: skipped);
# else a request handler's thread is the API's (its journal `accepted` row too),
# and a cast's thread the conductor's.
_LAYERS = (("stowage.placement.client", ""), ("stowage.placement", "placement"),
           ("stowage.compute.agent", "agent"), ("stowage.compute.scheduler", "scheduler"))
_OUTER = (("stowage.compute.api", "API request"), ("stowage.compute.conductor", "conductor"))
PHASES = ("API request", "conductor", "scheduler", "agent", "placement", "other")
_WRITES = ("INSERT", "UPDATE", "DELETE")
HEADERS = {"x-auth-token": "admin", "openstack-api-version": "compute 2.80",
           "accept": "application/json"}


def _phase() -> str:
    frame = sys._getframe(2)
    outer = "other"
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        for prefix, phase in _LAYERS:
            if name.startswith(prefix):
                if phase:
                    return phase
                break
        for prefix, phase in _OUTER:
            if name.startswith(prefix) and outer != "API request":
                outer = phase
        frame = frame.f_back  # type: ignore[assignment]
    return outer


@dataclass
class Counts:
    """Per phase: statements, read and write transactions (a write one ran a write)."""

    statements: Counter[str] = field(default_factory=Counter)
    reads: Counter[str] = field(default_factory=Counter)
    writes: Counter[str] = field(default_factory=Counter)
    texts: Counter[str] = field(default_factory=Counter)

    def total(self) -> dict[str, int]:
        return {"statements": sum(self.statements.values()),
                "transactions": sum(self.reads.values()) + sum(self.writes.values()),
                "write_transactions": sum(self.writes.values())}

    def as_dict(self) -> dict[str, Any]:
        return {"by_phase": {p: {"statements": self.statements[p], "reads": self.reads[p],
                                 "writes": self.writes[p]} for p in PHASES
                             if self.statements[p] or self.reads[p] or self.writes[p]},
                **self.total()}


class _Listener:
    """Counts into `current` (None: not counting) from SQLAlchemy's events."""

    def __init__(self) -> None:
        self.current: Counts | None = None
        self._open: dict[int, tuple[str, bool]] = {}
        self._lock = threading.Lock()

    def attach(self, engine: Any) -> None:
        from sqlalchemy import event

        event.listen(engine, "begin", self.begin)
        event.listen(engine, "before_cursor_execute", self.statement)
        event.listen(engine, "commit", self.end)
        event.listen(engine, "rollback", self.end)

    def begin(self, conn: Any) -> None:
        with self._lock:
            self._open[id(conn)] = (_phase(), False)

    def statement(self, conn: Any, _cursor: Any, sql: str, *_args: Any) -> None:
        verb = sql.lstrip()[:6].upper()
        if verb.startswith("BEGIN"):
            return
        with self._lock:
            if self.current is not None:
                phase = _phase()
                self.current.statements[phase] += 1
                self.current.texts[f"{phase:<12} " + " ".join(sql.split())[:90]] += 1
            phase, wrote = self._open.get(id(conn), ("other", False))
            self._open[id(conn)] = (phase, wrote or verb in _WRITES)

    def end(self, conn: Any) -> None:
        with self._lock:
            phase, wrote = self._open.pop(id(conn), ("other", False))
            if self.current is not None:
                (self.current.writes if wrote else self.current.reads)[phase] += 1

    @contextlib.contextmanager
    def counting(self) -> Iterator[Counts]:
        counts = Counts()
        with self._lock:
            self.current = counts
        try:
            yield counts
        finally:
            with self._lock:
                self.current = None


@contextlib.contextmanager
def _app(db_url: str, hosts: int = 3, count: bool = True, report_interval: float = 3600.0
         ) -> Iterator[tuple[str, Any, _Listener]]:
    """The whole app on a uvicorn thread, periodic work out of the way (`ops.py` too:
    it times CPU, so it asks for no statement listener, `count=False`)."""
    from stowage import config
    from stowage.cli import build_asgi, plane_of
    from stowage.compute.cells import bootstrap
    from stowage.db import Database, schema

    quiet = config.ComputeSettings(sim_hosts=hosts, report_interval=report_interval,
                                   update_resources_interval=3600.0)
    db = Database(db_url)
    schema.upgrade(db)
    cells = bootstrap(db)
    listener = _Listener()
    # The API database's statements and those of every cell's own database.
    for engine in {id(d.engine): d.engine for d in [db, *(c for _, c in cells.databases())]
                   }.values() if count else ():
        listener.attach(engine)
    app = build_asgi(config.Settings(database=db_url, compute=quiet), db, at_root=False,
                     cells=cells)
    with on_thread(app) as url:
        plane = plane_of(app)
        try:
            yield url, plane, listener
        finally:
            plane.stop()
            cells.dispose()
            db.dispose()


@contextlib.contextmanager
def on_thread(app: Any) -> Iterator[str]:
    """`app` served by uvicorn on a thread of this process (loopback, a free port), as
    the benches that time server CPU need it; yields its URL, stops it on exit."""
    import socket

    import uvicorn

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port,
                                           log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def _act(client: httpx.Client, plane: Any, server_id: str, body: Any, expect: int) -> None:
    resp = client.post(f"/servers/{server_id}/action", json=body)
    if resp.status_code != expect:
        raise SystemExit(f"bench: action {body} -> {resp.status_code} {resp.text}")
    plane.drain()


def count_resize_confirm(db_url: str, setup: Any) -> dict[str, Counts]:
    """Counts of one warm resize, its confirm, and one GET /servers/{id}."""
    with _app(db_url) as (url, plane, listener), \
            httpx.Client(base_url=f"{url}/compute/v2.1", headers=HEADERS, timeout=60) as client:
        small, large, image_id = setup(client, f"{url}/image")
        client.post("/flavors", json={"flavor": {"name": "medium", "vcpus": 2, "ram": 768,
                                                 "disk": 10, "id": "medium"}})
        boot = {"server": {"name": "vm", "flavorRef": small, "imageRef": image_id,
                           "networks": "none"}}
        server_id = client.post("/servers", json=boot).json()["server"]["id"]
        plane.drain()
        _act(client, plane, server_id, {"resize": {"flavorRef": "medium"}}, 202)
        _act(client, plane, server_id, {"confirmResize": None}, 204)
        found: dict[str, Counts] = {}
        for name, body, expect in (("resize", {"resize": {"flavorRef": large}}, 202),
                                   ("confirm", {"confirmResize": None}, 204)):
            with listener.counting() as found[name]:
                _act(client, plane, server_id, body, expect)
        with listener.counting() as found["GET /servers/{id}"]:
            view = client.get(f"/servers/{server_id}").json()["server"]
        if view["status"] != "ACTIVE" or view["flavor"]["original_name"] != "large":
            raise SystemExit(f"bench: counted resize+confirm ended {view['status']}")
    return found


def report(found: dict[str, Counts], verbose: bool = False) -> dict[str, Any]:
    """Print statements / read + write transactions per operation and phase."""
    print("SQL per operation (statements, transactions read+write), by phase:")
    for name, counts in found.items():
        cells = [f"{p} {counts.statements[p]} ({counts.reads[p]}+{counts.writes[p]})"
                 for p in PHASES if counts.statements[p] or counts.reads[p] or counts.writes[p]]
        total = counts.total()
        print(f"  {name:<18} {total['statements']:4d} statements, "
              f"{total['transactions']:3d} transactions ({total['write_transactions']} "
              f"writing): " + ", ".join(cells), flush=True)
        if verbose:
            for text, n in counts.texts.most_common():
                print(f"      {n:3d}  {text}")
    both = [found["resize"].total(), found["confirm"].total()]
    pair = {k: both[0][k] + both[1][k] for k in both[0]}
    print(f"  {'resize+confirm':<18} {pair['statements']:4d} statements, "
          f"{pair['transactions']:3d} transactions ({pair['write_transactions']} writing)",
          flush=True)
    return {"resize_confirm": pair, **{name: c.as_dict() for name, c in found.items()}}


def main() -> int:
    import argparse
    import tempfile

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import moves
    import servers

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", default="sqlite")
    p.add_argument("-v", "--verbose", action="store_true", help="print every statement")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp, \
            servers.database(args.backend, Path(tmp), "counts") as db_url:
        report(count_resize_confirm(db_url, moves.setup), args.verbose)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
