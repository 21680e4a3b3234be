"""kill -9 at every journal step of every operation, restart, and find it finished or undone.

    test ──HTTP──> stowage serve (crash_at = "op:step:state")  ──exits like kill -9──┐
                   stowage serve (same database, no hook)  <── restart ────────────┘
                     host1, host2 simulated; their guests persist in the database

For each operation (build, resize, migrate, confirm, revert, stop, start,
delete) and each point its journal records (`accepted`, then every step
`executing` and `done`; the list comes from the operation modules, so a new
step is covered without touching this file), the service is crashed there,
started again, and then:

* the server leaves every transient state by itself;
* it ends where its operation says: forward for build, confirm, revert,
  stop, start and delete; back on the source (or VERIFY_RESIZE if the move
  had got there) for resize and migrate;
* what each consumer holds is exactly what that state needs (instance vs
  migration, per provider), and the audit finds nothing;
* the hypervisors hold exactly the guests that state needs (ERROR would be
  allowed only where the guest is really gone, and never happens here).

By default every point but a step's `done` (the journal write right before
the next step's `executing`; the last step's `done` is kept) runs on SQLite,
two of `migrate`'s (its steps are resize's), and on PostgreSQL and MySQL one
point in the middle of resize, confirm, revert and delete. STOWAGE_CRASH_FULL=1
runs every point on every backend. Each point starts the service twice: about
5 s of CPU per point (40 points by default on SQLite).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from stowage.compute import tables as t
from stowage.compute.conductor import build, lifecycle, migrate, resize_end
from stowage.compute.conductor.manager import RECOVERY
from stowage.db import Database, schema
from tests.conftest import BACKENDS
from tests.dbs import throwaway_database
from tests.functional.crashing import LARGE, SMALL, Stowage, running

OPERATIONS: dict[str, tuple[str, ...]] = {
    "build": build.STEPS, "resize": migrate.STEPS, "migrate": migrate.STEPS,
    **resize_end.STEPS, **lifecycle.STEPS,
}
FULL = os.environ.get("STOWAGE_CRASH_FULL") == "1"
# Operations that run the very steps of another one: a sample of their points by default.
_SAME_STEPS_AS = {"migrate": "resize"}
# The operations that hand allocations between consumers: sampled on PostgreSQL and MySQL.
_SAMPLED_ELSEWHERE = ("resize", "confirm_resize", "revert_resize", "delete")


def _points(operation: str, full: bool) -> list[str]:
    """`accepted`, each step `executing`, the last step `done`; with `full`, every `done`.

    A step's `done` and the next step's `executing` are consecutive journal
    writes with no work between them, so the default leaves out the former.
    """
    steps = OPERATIONS[operation]
    states = {step: ("executing", "done") if full or step == steps[-1] else ("executing",)
              for step in steps}
    return [f"{operation}:accepted:done"] + [f"{operation}:{step}:{state}" for step in steps
                                             for state in states[step]]


def _cases() -> list[Any]:
    cases = []
    for backend in BACKENDS:
        for operation in OPERATIONS:
            points = _points(operation, FULL)
            if not FULL and operation in _SAME_STEPS_AS:
                points = [points[0], points[len(points) // 2]]
            if not FULL and backend != "sqlite":
                points = [points[len(points) // 2]] if operation in _SAMPLED_ELSEWHERE else []
            cases += [pytest.param(backend, point, id=f"{backend}-{point}") for point in points]
    return cases


def test_every_operation_has_a_recovery() -> None:
    assert set(OPERATIONS) == set(RECOVERY)


# --- scenarios: get to the operation, then ask for it ------------------------------------
class World:
    """Flavor and image ids, and the server the operation is about."""

    def __init__(self, s: Stowage) -> None:
        self.small, self.large = s.flavors()
        self.image = s.image()
        self.server = ""

    def boot(self, s: Stowage) -> None:
        resp = s.boot_request(self.small, self.image)
        assert resp.status_code == 202, resp.text
        self.server = str(resp.json()["server"]["id"])
        s.wait_status(self.server, "ACTIVE")

    def resized(self, s: Stowage) -> None:
        self.boot(s)
        assert s.action(self.server, {"resize": {"flavorRef": self.large}}).status_code == 202
        s.wait_status(self.server, "VERIFY_RESIZE")

    def stopped(self, s: Stowage) -> None:
        self.boot(s)
        assert s.action(self.server, {"os-stop": None}).status_code == 202
        s.wait_status(self.server, "SHUTOFF")


def _ask(s: Stowage, w: World, operation: str) -> None:
    """Send the request; the process may die before it answers."""
    try:
        if operation == "build":
            resp = s.boot_request(w.small, w.image)
            w.server = str(resp.json()["server"]["id"])
        elif operation == "delete":
            s.compute.delete(f"/servers/{w.server}")
        else:
            s.action(w.server, _BODIES[operation](w))
    except Exception:  # noqa: BLE001 - the crash may cut the answer off
        pass


_BODIES: dict[str, Callable[[World], dict[str, Any]]] = {
    "resize": lambda w: {"resize": {"flavorRef": w.large}},
    "migrate": lambda w: {"migrate": None},
    "confirm_resize": lambda w: {"confirmResize": None},
    "revert_resize": lambda w: {"revertResize": None},
    "stop": lambda w: {"os-stop": None},
    "start": lambda w: {"os-start": None},
}
_SETUP: dict[str, Callable[[World, Stowage], None]] = {
    "build": lambda w, s: None, "resize": World.boot, "migrate": World.boot,
    "confirm_resize": World.resized, "revert_resize": World.resized,
    "stop": World.boot, "start": World.stopped, "delete": World.resized,
}


# --- what must hold after the restart ----------------------------------------------------
def _guests(db: Database, server: str) -> dict[tuple[str, str], int]:
    g = t.simulated_guests
    with db.read() as conn:
        rows = conn.execute(sa.select(g.c.host, g.c.migration_uuid, g.c.power_state)
                            .where(g.c.instance_uuid == server)).all()
    return {(r.host, r.migration_uuid): r.power_state for r in rows}


def _expected_status(operation: str, point: str, view: dict[str, Any] | None) -> set[str | None]:
    if operation in ("resize", "migrate"):
        return {"VERIFY_RESIZE"} if point.endswith("finish_resize:done") else {"ACTIVE"}
    return {"delete": {None}, "stop": {"SHUTOFF"}}.get(operation, {"ACTIVE"})


def _check(s: Stowage, db: Database, w: World, operation: str, point: str) -> None:
    if not w.server:  # the build's answer was lost: find the server
        listed = s.compute.get("/servers").json()["servers"]
        assert len(listed) == 1, listed
        w.server = str(listed[0]["id"])
    view = s.wait_settled(w.server)
    status = None if view is None else view["status"]
    assert status in _expected_status(operation, point, view), view
    moves = s.migrations(w.server)
    guests = _guests(db, w.server)
    if view is None:
        assert s.held(w.server) == {} and guests == {}
        assert all(s.held(m["uuid"]) == {} for m in moves)
    elif status == "VERIFY_RESIZE":
        [move] = [m for m in moves if m["status"] == "finished"]
        dest, source = view["OS-EXT-SRV-ATTR:host"], move["source_compute"]
        # A cold migration keeps the flavor; a resize holds the new one on the destination.
        assert s.held(w.server) == {s.node(dest): SMALL if operation == "migrate" else LARGE}
        assert s.held(move["uuid"]) == {s.node(source): SMALL}
        assert guests == {(dest, ""): 1, (source, move["uuid"]): 4}
    else:
        host = view["OS-EXT-SRV-ATTR:host"]
        want = LARGE if view["flavor"]["original_name"] == "large" else SMALL
        assert s.held(w.server) == {s.node(host): want}
        assert all(s.held(m["uuid"]) == {} for m in moves)
        assert guests == {(host, ""): 4 if status == "SHUTOFF" else 1}
        if operation == "revert_resize" or (operation in ("resize", "migrate")):
            assert want == SMALL
        if operation == "confirm_resize":
            assert want == LARGE
    assert s.audit(db) == []


def _crash_and_recover(backend: str, tmp_path: Path, point: str,
                       again: str = "") -> None:
    operation = point.split(":")[0]
    with throwaway_database(backend) as url:
        db = Database(url)
        schema.upgrade(db)
        try:
            s = Stowage(url, tmp_path, crash_at=point)
            try:
                w = World(s)
                _SETUP[operation](w, s)
                _ask(s, w, operation)
                assert s.crashed(), f"the journal never reached {point}"
            finally:
                s.stop()
            if again:  # a crash during recovery too
                s = Stowage(url, tmp_path, crash_at=again, wait=False)
                try:
                    assert s.crashed(), f"recovery never reached {again}"
                finally:
                    s.stop()
            with running(url, tmp_path) as s:
                _check(s, db, w, operation, point)
        finally:
            db.dispose()


@pytest.mark.parametrize(("backend", "point"), _cases())
def test_a_crash_at_every_journal_point_is_recovered(backend: str, point: str,
                                                     tmp_path: Path) -> None:
    _crash_and_recover(backend, tmp_path, point)


@pytest.mark.parametrize(("point", "again"), [
    ("revert_resize:finish_revert_resize:executing", "revert_resize:finish_revert_resize:done"),
    ("resize:resize_instance:done", "resize:claim_destination:rolled_back"),
    ("confirm_resize:confirm_on_source:executing", "confirm_resize:settle:executing"),
    ("build:spawn:executing", "build:spawn:executing"),
    ("delete:terminate:executing", "delete:drop_allocation:done"),
])
def test_a_crash_during_recovery_is_recovered_too(point: str, again: str,
                                                  tmp_path: Path) -> None:
    _crash_and_recover(BACKENDS[0], tmp_path, point, again)
