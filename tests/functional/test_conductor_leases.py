"""Several conductors on one database: an operation is leased to the one that runs it.

    API ──cast──> conductor A (runs the resize; held at a journal point)
                  conductor B (only takes over: `take_over_expired()`)
                  conductor C (a restart: `start()`)
        host1: vm (small) ──resize──> host2 (large)

A is "killed" by stopping its renewals while its thread is held at a journal
point; B must leave the operation alone while A's lease holds, take it over
once it expired (rolling the resize back, exactly once), and A, let go
afterwards, must stop without writing or acting. Leases last 1 s here; the
control plane's own conductor gets an hour so that it stays out of the way.
The journal-level tests at the end race conductors on the bare tables.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from stowage.compute import rpc
from stowage.compute import tables as t
from stowage.compute.conductor import leases as leases_module
from stowage.compute.conductor import tasks
from stowage.compute.conductor.leases import LeaseLost, Leases
from stowage.compute.conductor.manager import Conductor
from stowage.db import Database, schema
from tests.conftest import BACKENDS
from tests.dbs import migrated_database, throwaway_database
from tests.functional.conftest import Cloud, RecordingConductor
from tests.functional.servers import (
    assert_invariants,
    boot,
    flavor,
    flavor_amounts,
    guests,
    held,
    image,
    migrations_of,
    server,
    settle,
)

LEASE = 1.0
SMALL, LARGE = flavor_amounts(1, 512, 5), flavor_amounts(2, 1024, 10)
POINT = "resize:prep_resize:done"  # dest claimed and prepped, the source not yet touched


class Hold:
    """A crash hook that holds the conductor's thread at one journal point (once)."""

    def __init__(self, point: str) -> None:
        self.want = tuple(point.split(":"))
        self.reached = threading.Event()
        self.go = threading.Event()

    def __call__(self, operation: str, step: str, state: str) -> None:
        if (operation, step, state) == self.want and not self.reached.is_set():
            self.reached.set()
            self.go.wait(60)


@dataclasses.dataclass
class Peers:
    cloud: Cloud
    a: Conductor
    b: Conductor
    hold: Hold
    server: str
    nodes: dict[str, str]
    large: str

    def conductor(self) -> Conductor:
        plane = self.cloud.plane
        settings = dataclasses.replace(plane.settings, conductor_lease_seconds=LEASE)
        return Conductor(settings, plane.api_db, plane.placement, plane.transport, plane.network,
                         cell_db=plane.db)

    def resize_held(self) -> None:
        """POST resize; A runs it up to POINT and waits there."""
        resp = self.cloud.compute.post(f"/servers/{self.server}/action",
                                       json={"resize": {"flavorRef": self.large}})
        assert resp.status_code == 202, resp.text
        assert self.hold.reached.wait(30), "the resize never reached " + POINT


@pytest.fixture
def peers(cloud: Cloud, monkeypatch: pytest.MonkeyPatch) -> Iterator[Peers]:
    nodes = {h: cloud.add_host(h, vcpus=8, memory_mb=4096, disk_gb=100)
             for h in ("host1", "host2")}
    vm = boot(cloud, "vm", flavor(cloud, "small", 1, 512, 5), image(cloud))
    large = flavor(cloud, "large", 2, 1024, 10)
    cloud.configure(conductor_lease_seconds=3600)  # the plane's conductor stays out of it
    hold = Hold(POINT)
    monkeypatch.setattr(tasks, "crash_hook", lambda spec: hold)
    plane = cloud.plane
    probe = Peers(cloud, plane.conductor, plane.conductor, hold, vm, nodes, large)
    peers = dataclasses.replace(probe, a=probe.conductor(), b=probe.conductor())
    plane.transport.unregister(rpc.CONDUCTOR)
    plane.transport.register(rpc.CONDUCTOR, peers.a)
    try:
        yield peers
    finally:
        hold.go.set()
        settle(cloud)
        for conductor in (peers.a, peers.b):
            conductor.leases.stop()
        plane.transport.unregister(rpc.CONDUCTOR)
        plane.transport.register(rpc.CONDUCTOR, plane.conductor)


def journal_rows(cloud: Cloud) -> list[tuple[Any, ...]]:
    j = t.operation_steps
    with cloud.live.cell_db.read() as conn:
        return [tuple(r) for r in conn.execute(
            sa.select(j.c.operation_uuid, j.c.step, j.c.state, j.c.owner,
                      j.c.lease_expires.is_(None)).order_by(j.c.id))]


def ends(cloud: Cloud) -> int:
    return sum(1 for row in journal_rows(cloud) if row[1] == "end")


def test_a_dead_conductors_move_is_taken_over_once_and_its_zombie_changes_nothing(
        peers: Peers) -> None:
    cloud, vm = peers.cloud, peers.server
    peers.resize_held()
    before = journal_rows(cloud)
    peers.b.take_over_expired()  # A's lease holds: B keeps off
    assert journal_rows(cloud) == before
    assert server(cloud, vm)["OS-EXT-STS:task_state"] is not None

    peers.a.leases.stop()  # A is dead: no more renewals
    time.sleep(LEASE + 0.3)
    started = ends(cloud)
    peers.b.take_over_expired()
    view = server(cloud, vm)
    assert (view["status"], view["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", "host1")
    [mig] = migrations_of(cloud, vm)
    assert mig["status"] == "error"
    assert held(cloud, vm) == {peers.nodes["host1"]: SMALL}
    assert held(cloud, str(mig["uuid"])) == {}
    assert ends(cloud) == started + 1
    after_takeover = journal_rows(cloud), guests(cloud, vm)

    peers.hold.go.set()  # A wakes up after its lease was taken: a zombie
    settle(cloud)
    assert (journal_rows(cloud), guests(cloud, vm)) == after_takeover
    assert held(cloud, vm) == {peers.nodes["host1"]: SMALL}
    assert held(cloud, str(mig["uuid"])) == {}
    assert server(cloud, vm)["status"] == "ACTIVE"
    assert_invariants(cloud)


def test_a_restarted_conductor_leaves_a_live_peers_move_alone(peers: Peers) -> None:
    cloud, vm = peers.cloud, peers.server
    peers.resize_held()
    before = journal_rows(cloud)
    task_state = server(cloud, vm)["OS-EXT-STS:task_state"]
    assert task_state == "resize_migrating"
    restarted = peers.conductor()
    try:
        restarted.start()
        time.sleep(LEASE * 1.5)  # A renews meanwhile
        restarted.take_over_expired()
        peers.b.take_over_expired()
    finally:
        restarted.leases.stop()
    assert journal_rows(cloud) == before
    assert server(cloud, vm)["OS-EXT-STS:task_state"] == task_state

    peers.hold.go.set()
    settle(cloud)
    view = server(cloud, vm)
    assert (view["status"], view["OS-EXT-SRV-ATTR:host"]) == ("VERIFY_RESIZE", "host2")
    [mig] = migrations_of(cloud, vm)
    assert held(cloud, vm) == {peers.nodes["host2"]: LARGE}
    assert held(cloud, str(mig["uuid"])) == {peers.nodes["host1"]: SMALL}
    assert [row[4] for row in journal_rows(cloud) if row[1] == "accepted"][-1]  # released
    assert_invariants(cloud)


def test_a_cast_that_comes_after_a_take_over_does_nothing(peers: Peers) -> None:
    """The cast was lost (or late): B takes the accepted resize over once a lease has
    passed since the API accepted it, and the cast, delivered after, is refused."""
    cloud, vm = peers.cloud, peers.server
    plane = cloud.plane
    late = RecordingConductor()
    plane.transport.unregister(rpc.CONDUCTOR)
    plane.transport.register(rpc.CONDUCTOR, late)
    resp = cloud.compute.post(f"/servers/{vm}/action",
                              json={"resize": {"flavorRef": peers.large}})
    assert resp.status_code == 202, resp.text
    settle(cloud)
    [(method, kwargs)] = late.casts
    peers.b.take_over_expired()  # just accepted: its cast may still be on its way
    assert server(cloud, vm)["OS-EXT-STS:task_state"] == "resize_prep"

    time.sleep(LEASE + 0.3)
    peers.b.take_over_expired()
    view = server(cloud, vm)
    assert (view["status"], view["OS-EXT-STS:task_state"]) == ("ACTIVE", None)
    after = journal_rows(cloud), held(cloud, vm), migrations_of(cloud, vm)

    getattr(peers.a, method)(**kwargs)  # the late cast
    assert (journal_rows(cloud), held(cloud, vm), migrations_of(cloud, vm)) == after
    assert held(cloud, vm) == {peers.nodes["host1"]: SMALL}
    assert not peers.hold.reached.is_set()
    assert_invariants(cloud)


# --- the journal alone: conductors racing on the tables ---------------------------------
@pytest.fixture(params=BACKENDS)
def db(request: pytest.FixtureRequest) -> Iterator[Database]:
    with migrated_database(request.param) as url:
        database = Database(url)
        schema.upgrade(database)
        try:
            yield database
        finally:
            database.dispose()


def _running(db: Database, leases: Leases) -> tasks.Journal:
    """An accepted operation whose first step `leases` journaled (so it holds it)."""
    with db.write() as conn:
        uuid = tasks.accept(conn, "resize", "inst-1", "req-1")
    journal = tasks.Journal(db, "resize", "inst-1", uuid, existing=(tasks.ACCEPTED,),
                            leases=leases)
    journal.record("create_migration", "executing")
    assert journal.claimed and leases.held() == [uuid]
    return journal


def test_exactly_one_of_several_conductors_takes_an_expired_lease(db: Database) -> None:
    dead = Leases(db, lambda: 0.3)
    journal = _running(db, dead)
    dead.stop()
    time.sleep(0.5)
    rivals = [Leases(db, lambda: 30.0) for _ in range(4)]
    [expired] = rivals[0].expired()
    assert (expired.operation_uuid, expired.owner) == (journal.uuid, dead.owner)
    start = threading.Barrier(len(rivals))
    won: list[bool] = [False] * len(rivals)

    def take(i: int) -> None:
        start.wait()
        won[i] = rivals[i].take(expired)

    threads = [threading.Thread(target=take, args=(i,)) for i in range(len(rivals))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert won.count(True) == 1
    winner = rivals[won.index(True)]
    assert winner.expired() == [] and rivals[0].expired() == []  # now it is held again
    for leases in rivals:
        leases.stop()

    with db.read() as conn:
        before = conn.execute(sa.select(t.operation_steps).order_by(t.operation_steps.c.id)
                              ).all()
    with pytest.raises(LeaseLost):
        journal.record("create_migration", "done")  # the dead one's late write
    with pytest.raises(LeaseLost):
        journal.close()
    with db.read() as conn:
        after = conn.execute(sa.select(t.operation_steps).order_by(t.operation_steps.c.id)
                             ).all()
    assert after == before
    assert dead.held() == []  # what it lost it no longer renews


def test_a_renewed_lease_outlives_its_period_and_an_ended_one_is_never_taken(
        db: Database) -> None:
    alive = Leases(db, lambda: 0.3)
    journal = _running(db, alive)
    other = Leases(db, lambda: 0.3)
    try:
        time.sleep(0.9)  # three leases long: the renewals kept it
        assert other.expired() == []
        journal.guard()
        journal.close()
        assert alive.held() == []
        time.sleep(0.5)
        assert other.expired() == []  # ended: released, not expired
        assert tasks.operation(db, journal.uuid) is None
    finally:
        alive.stop()
        other.stop()


def _gone_pid() -> int:
    """The pid of a process of this machine that has exited."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_a_lease_of_a_process_gone_from_this_machine_is_taken_at_once(db: Database) -> None:
    """A conductor killed and restarted on the same machine need not wait out its lease;
    a live process here, or any process elsewhere, keeps its lease until it expires."""
    machine = leases_module.new_owner().partition(":")[0]
    gone = Leases(db, lambda: 30.0, owner=f"{machine}:{_gone_pid()}:dead")
    alive_here = Leases(db, lambda: 30.0, owner=f"{machine}:{os.getpid()}:alive")
    elsewhere = Leases(db, lambda: 30.0, owner=f"other-host/1:{_gone_pid()}:far")
    journals = {leases.owner: _running(db, leases) for leases in (gone, alive_here, elsewhere)}
    for leases in (gone, alive_here, elsewhere):
        leases.stop()
    successor = Leases(db, lambda: 30.0)
    try:
        [expired] = successor.expired()
        assert (expired.operation_uuid, expired.dead) == (journals[gone.owner].uuid, True)
        assert successor.take(expired) and not Leases(db, lambda: 30.0).take(expired)
        assert successor.expired() == []
        with pytest.raises(LeaseLost):
            journals[gone.owner].record("create_migration", "done")
    finally:
        successor.stop()


@pytest.mark.parametrize("backend", BACKENDS)
def test_migration_0019_leaves_open_operations_to_be_taken_over(backend: str) -> None:
    """Rows of an older version: an open accepted operation, an open one the conductor
    opened itself (no head), an ended one. After 0019 the open ones are unclaimed
    (taken over once a lease passed since they began); the ended one never is."""
    steps = sa.table("operation_steps", *(sa.column(c) for c in (
        "operation_uuid", "operation", "instance_uuid", "step", "state", "created_at")))
    long_ago = datetime.datetime(2024, 1, 1)
    with throwaway_database(backend) as url:
        db = Database(url)
        try:
            schema.upgrade(db, "0018")
            with db.write() as conn:
                conn.execute(steps.insert(), [
                    {"operation_uuid": uuid, "operation": "resize", "instance_uuid": "i",
                     "step": step, "state": "done", "created_at": long_ago}
                    for uuid, step in (("accepted-open", "accepted"),
                                       ("accepted-open", "create_migration"),
                                       ("headless-open", "create_migration"),
                                       ("ended", "accepted"), ("ended", "end"))])
            schema.upgrade(db)
            leases = Leases(db, lambda: 30.0)
            assert {e.operation_uuid: e.owner for e in leases.expired()} == {
                "accepted-open": None, "headless-open": None}
            assert all(leases.take(e) for e in leases.expired())
            assert leases.expired() == []
            leases.stop()
        finally:
            db.dispose()


def _accepted_by(db: Database, process: str) -> str:
    """An operation the API of `process` accepted, whose cast no conductor received."""
    with db.write() as conn:
        uuid = tasks.accept(conn, "detach_interface", "inst-1", "req-1")
        detail = json.dumps({"request_id": "req-1", "args": {}, "accepted_by": process})
        conn.execute(sa.update(t.operation_steps).where(
            t.operation_steps.c.operation_uuid == uuid).values(detail=detail))
    return uuid


def test_an_unclaimed_operation_of_a_process_gone_from_this_machine_is_taken_at_once(
        db: Database) -> None:
    """One process (API and conductor) crashed after its API accepted an operation:
    the restarted one takes it at once; an API still alive, here or elsewhere, may
    still cast it, so those wait a lease."""
    with db.write() as conn:
        ours = tasks.accept(conn, "detach_interface", "inst-1", "req-1")
    accepted = tasks.operation(db, ours)
    assert accepted is not None
    assert json.loads(accepted.steps["accepted"][1])["accepted_by"] \
        == leases_module.this_process()
    machine = leases_module.this_process().partition(":")[0]
    gone = _accepted_by(db, f"{machine}:{_gone_pid()}")
    _accepted_by(db, f"other-host/1:{_gone_pid()}")
    successor, rival = Leases(db, lambda: 30.0), Leases(db, lambda: 30.0)
    try:
        [expired] = successor.expired()
        assert (expired.operation_uuid, expired.owner, expired.dead) == (gone, None, True)
        assert successor.take(expired) and not rival.take(expired)
        assert successor.expired() == [] and rival.expired() == []
        late = tasks.Journal(db, "detach_interface", "inst-1", gone,
                             existing=(tasks.ACCEPTED,), leases=rival)
        with pytest.raises(LeaseLost):
            late.claim()  # the cast that arrives after all does nothing
    finally:
        successor.stop()
        rival.stop()
