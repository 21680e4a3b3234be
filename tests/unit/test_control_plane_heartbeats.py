"""Heartbeats of an agent process with many hosts, and a stop asked for while it starts.

An agent of thousands of simulated hosts takes minutes to register them; the
hosts that registered first must keep beating meanwhile, and SIGTERM must not
wait for the last host to come up.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from stowage.compute import services
from stowage.compute import tables as t
from stowage.compute.agent.manager import ComputeAgent
from stowage.compute.runtime import ControlPlane
from stowage.config import ComputeSettings
from stowage.db import Database, schema
from stowage.placement.client import PlacementClient


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = Database(f"sqlite:///{tmp_path}/plane.db")  # one database for every thread
    schema.upgrade(database)
    yield database
    database.dispose()


def _report_count(db: Database, host: str) -> int:
    with db.read() as conn:
        return services.service_by_host(conn, host, services.COMPUTE).report_count


def _plane(db: Database, hosts: int) -> ControlPlane:
    # Nothing reaches Placement: the agents' start is replaced by `_registering_only`.
    return ControlPlane(ComputeSettings(sim_hosts=hosts, report_interval=0.05), db,
                        PlacementClient.over_http("http://127.0.0.1:9"), roles=("compute",))


def _registering_only(monkeypatch: pytest.MonkeyPatch,
                      then: Callable[[ComputeAgent], None]) -> None:
    """Agents that only write their service row, then run `then` (the slow rest of a start)."""
    def start(agent: ComputeAgent) -> None:
        with agent.db.write() as conn:
            services.ensure_service(conn, agent.host.name, services.COMPUTE)
        agent._running = True
        then(agent)

    monkeypatch.setattr(ComputeAgent, "start", start)


def test_heartbeat_many_beats_the_live_rows_and_names_the_deleted(db: Database) -> None:
    with db.write() as conn:
        for host in ("a", "b", "c"):
            services.ensure_service(conn, host, services.COMPUTE)
        conn.execute(t.services.update().where(t.services.c.host == "b")
                     .values(deleted=t.services.c.id))
        assert services.heartbeat_many(conn, ["a", "b", "c"], services.COMPUTE) == ["b"]
        assert services.heartbeat_many(conn, [], services.COMPUTE) == []
        counts = dict(conn.execute(sa.select(t.services.c.host, t.services.c.report_count)
                                   .where(t.services.c.deleted == 0)).all())
    assert counts == {"a": 1, "c": 1}


def test_the_first_hosts_beat_while_the_last_ones_still_start(
        db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    seen_at_start: dict[str, int] = {}

    def slowly(agent: ComputeAgent) -> None:
        seen_at_start[agent.host.name] = _report_count(db, "host1")
        threading.Event().wait(0.3)  # e.g. registering a provider tree over HTTP

    _registering_only(monkeypatch, slowly)
    plane = _plane(db, hosts=3)
    plane.start()
    try:
        # host1 started 0.6 s before host3: several heartbeat rounds at 0.05 s
        assert seen_at_start["host1"] == 0
        assert seen_at_start["host3"] >= 2
    finally:
        plane.stop()


def test_a_stop_asked_for_during_start_adds_no_more_hosts(
        db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    plane = _plane(db, hosts=5)

    def stop_at_host2(agent: ComputeAgent) -> None:
        if agent.host.name == "host2":
            plane.request_stop()  # as SIGTERM's handler does (compute/worker.py)

    _registering_only(monkeypatch, stop_at_host2)
    plane.start()
    plane.stop()
    assert sorted(plane.agents) == []
    with db.read() as conn:
        registered = sorted(s.host for s in services.list_services(conn,
                                                                   binary=services.COMPUTE))
    assert registered == ["host1", "host2"]


def test_stop_closes_the_transport_before_it_stops_the_hosts(
        db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    _registering_only(monkeypatch, lambda agent: None)
    plane = _plane(db, hosts=2)
    plane.start()
    order: list[str] = []
    real_close = plane.transport.close

    def close(*args: Any) -> None:
        order.append("close:" + ",".join(sorted(n for n, a in plane.agents.items()
                                                if a.running)))
        real_close(*args)

    monkeypatch.setattr(plane.transport, "close", close)
    plane.stop()
    assert order == ["close:host1,host2"]  # a handler still running finds its agent alive


def _one_round(db: Database, monkeypatch: pytest.MonkeyPatch, hosts: int,
               run: Callable[[ControlPlane, ComputeAgent], None]) -> list[str]:
    """One tracker round of a started plane whose hosts' runs are `run`; the hosts it ran."""
    _registering_only(monkeypatch, lambda agent: None)
    plane = _plane(db, hosts=hosts)
    plane.start()
    ran: list[str] = []

    def tracked(agent: ComputeAgent) -> None:
        run(plane, agent)
        ran.append(agent.host.name)

    monkeypatch.setattr(ComputeAgent, "update_available_resource", tracked)
    try:
        plane._update_resources()
    finally:
        plane.stop()
    return ran


def test_the_trackers_of_many_hosts_run_side_by_side(
        db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    both = threading.Barrier(2, timeout=5)  # two runs must be in flight at once
    ran = _one_round(db, monkeypatch, 6, lambda plane, agent: both.wait())
    assert sorted(ran) == [f"host{i}" for i in range(1, 7)]


def test_a_stop_ends_a_tracker_round_at_the_hosts_not_yet_run(
        db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    # SIGTERM while the round runs
    ran = _one_round(db, monkeypatch, 40, lambda plane, agent: plane.request_stop())
    assert 1 <= len(ran) <= 8  # at most the runs already started beside the first
