"""DELETE /servers/{id} when the server's host is down: a local delete, cleaned up on return.

    h1 (the server's host; goes down)       h2 (up: a resize's or evacuation's destination)
    16 VCPU, 8192 MB, 100 GB, 2 "gpu"       16 VCPU, 8192 MB, 100 GB, 2 "gpu"

Nova's local delete: when the compute service of the server's host is down
(no heartbeat within `service_down_time`, or forced down), the delete does
not ask that host; the server's allocations and records go at once (204, then
404), and the host's agent destroys the guests of deleted servers when it
starts again, or at its next periodic run if it kept running while forced
down. A delete during an evacuation (whose source is down by definition)
leaves nothing either: no allocation for the server or the evacuation, no
guest on the destination, the migration `error`, and the source's guest
destroyed when the source is back.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from stowage.compute import tables as t
from stowage.db import Database, schema
from tests.conftest import BACKENDS
from tests.dbs import migrated_database
from tests.functional import servers as sv
from tests.functional.conftest import Cloud
from tests.functional.crashing import SMALL, Stowage, cell_database, running

HOST = {"vcpus": 16, "memory_mb": 8192, "disk_gb": 100, "pci": {"gpu": 2}}
EMPTY = {"VCPU": 0, "MEMORY_MB": 0, "DISK_GB": 0}
RUNNING, SHUTDOWN = 1, 4
GPU_FREE = {"gpu": {"total": 2, "free": 2}}


@pytest.fixture
def world(cloud: Cloud) -> dict[str, str]:
    """h1 and h2; the spread weigher breaks the tie by name: the server (one gpu) on h1."""
    nodes = {name: cloud.add_host(name, **HOST) for name in ("h1", "h2")}
    nodes["small"] = sv.flavor(cloud, "small", 1, 512, 5,
                               extra_specs={"pci_passthrough:alias": "gpu:1"})
    nodes["big"] = sv.flavor(cloud, "big", 2, 1024, 10,
                             extra_specs={"pci_passthrough:alias": "gpu:1"})
    nodes["server"] = sv.boot(cloud, "vm", nodes["small"], sv.image(cloud))
    assert sv.host_of(cloud, nodes["server"]) == "h1"
    assert cloud.plane.agent("h1").pci.stats() == {"gpu": {"total": 2, "free": 1}}
    return nodes


def never_called(cloud: Cloud, monkeypatch: pytest.MonkeyPatch, host: str) -> list[str]:
    """Record any request the agent of `host` gets to destroy a guest (there must be none)."""
    calls: list[str] = []
    agent = cloud.plane.agent(host)
    for method in ("terminate_instance", "confirm_resize"):
        monkeypatch.setattr(agent, method,
                            lambda method=method, **kwargs: calls.append(method))
    return calls


def delete(cloud: Cloud, server_id: str) -> None:
    resp = cloud.compute.delete(f"/servers/{server_id}")
    assert resp.status_code == 204, resp.text
    sv.settle(cloud)
    assert cloud.compute.get(f"/servers/{server_id}").status_code == 404


def delete_action(cloud: Cloud, server_id: str) -> dict[str, Any]:
    """The delete's instance action (an admin may list the actions of a deleted server)."""
    with cloud.client("admin", version="2.21") as client:
        resp = client.get(f"/servers/{server_id}/os-instance-actions")
    assert resp.status_code == 200, resp.text
    [found] = [a for a in resp.json()["instanceActions"] if a["action"] == "delete"]
    return dict(found)


def assert_freed(cloud: Cloud, world: dict[str, str], *consumers: str) -> None:
    for consumer in (world["server"], *consumers):
        assert sv.held(cloud, consumer) == {}, consumer
    for host in ("h1", "h2"):
        assert sv.usages(cloud, world[host]) == EMPTY, host
    sv.assert_invariants(cloud)


# --- the server's own host is down ------------------------------------------------------
def test_delete_on_a_forced_down_host_does_not_ask_it_and_its_agent_reaps_later(
        cloud: Cloud, world: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The operator forced h1 down; its agent runs on, and its next periodic run reaps."""
    server_id = world["server"]
    assert sv.force_down(cloud, "h1").status_code == 200
    with monkeypatch.context() as patched:
        calls = never_called(cloud, patched, "h1")
        delete(cloud, server_id)
    assert calls == []
    assert delete_action(cloud, server_id)["message"] is None  # finished, no error
    assert_freed(cloud, world)
    assert sv.guests(cloud, server_id) == {("h1", ""): RUNNING}  # h1 was not asked

    agent = cloud.plane.agent("h1")
    agent.update_available_resource()
    assert sv.guests(cloud, server_id) == {}
    assert agent.pci.stats() == GPU_FREE
    assert_freed(cloud, world)
    agent.update_available_resource()  # nothing more to do, nothing brought back
    assert_freed(cloud, world)


def test_delete_on_a_host_whose_agent_is_dead_and_the_agent_comes_back(
        cloud: Cloud, world: dict[str, str]) -> None:
    server_id = world["server"]
    h1 = sv.stop_agent(cloud, "h1")
    delete(cloud, server_id)
    assert delete_action(cloud, server_id)["message"] is None
    assert_freed(cloud, world)
    assert sv.guests(cloud, server_id) == {("h1", ""): RUNNING}

    sv.start_agent(cloud, h1)
    assert sv.guests(cloud, server_id) == {}
    assert cloud.plane.agent("h1").pci.stats() == GPU_FREE
    assert_freed(cloud, world)
    sv.start_agent(cloud, sv.stop_agent(cloud, "h1"))  # a second start finds nothing
    assert sv.guests(cloud, server_id) == {}
    assert_freed(cloud, world)


def test_a_host_that_stops_answering_while_still_seen_up_is_deleted_locally_too(
        cloud: Cloud, world: dict[str, str]) -> None:
    """The service still looks up (its last heartbeat is recent) but nothing answers: the
    call times out, and the delete goes on without the host, as if it had been seen down."""
    server_id = world["server"]
    h1 = cloud.plane.agent("h1").host
    cloud.plane.stop_host("h1")
    delete(cloud, server_id)
    assert_freed(cloud, world)
    sv.start_agent(cloud, h1)
    assert sv.guests(cloud, server_id) == {}
    assert_freed(cloud, world)


def test_the_other_servers_of_the_returning_host_keep_their_guests(
        cloud: Cloud, world: dict[str, str]) -> None:
    other = sv.boot(cloud, "other", world["small"], sv.image(cloud))
    assert sv.host_of(cloud, other) == "h2"
    third = sv.boot(cloud, "third", world["small"], sv.image(cloud))
    assert sv.host_of(cloud, third) == "h1"
    h1 = sv.stop_agent(cloud, "h1")
    delete(cloud, world["server"])
    sv.start_agent(cloud, h1)
    assert sv.guests(cloud, world["server"]) == {}
    assert sv.guests(cloud, third) == {("h1", ""): RUNNING}
    assert sv.held(cloud, third) == {world["h1"]: SMALL}
    assert cloud.plane.agent("h1").pci.stats() == {"gpu": {"total": 2, "free": 1}}
    sv.assert_invariants(cloud)


# --- a resize waiting for its confirm, one of its hosts down ----------------------------------
def resized(cloud: Cloud, world: dict[str, str]) -> str:
    """The server resized from h1 to h2, in VERIFY_RESIZE; returns the migration uuid."""
    server_id = world["server"]
    sv.action(cloud, server_id, {"resize": {"flavorRef": world["big"]}})
    sv.settle(cloud)
    assert sv.server(cloud, server_id)["status"] == "VERIFY_RESIZE"
    [mig] = sv.migrations_of(cloud, server_id)
    assert sv.guests(cloud, server_id) == {("h2", ""): RUNNING, ("h1", mig["uuid"]): SHUTDOWN}
    return str(mig["uuid"])


def test_delete_in_verify_resize_with_the_source_down(
        cloud: Cloud, world: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The source cannot confirm: the migration is dropped (`error`) without it, the
    destination destroys its guest, and the source its set-aside one when it is back."""
    server_id = world["server"]
    mig = resized(cloud, world)
    assert sv.force_down(cloud, "h1").status_code == 200
    with monkeypatch.context() as patched:
        calls = never_called(cloud, patched, "h1")
        delete(cloud, server_id)
    assert calls == []
    assert sv.migrations_of(cloud, server_id) == []  # soft-deleted with the server
    assert [m.status for m in sv.stored_migrations(cloud, server_id)] == ["error"]
    assert_freed(cloud, world, mig)
    assert sv.guests(cloud, server_id) == {("h1", mig): SHUTDOWN}

    cloud.plane.agent("h1").update_available_resource()
    assert sv.guests(cloud, server_id) == {}
    assert cloud.plane.agent("h1").pci.stats() == GPU_FREE
    assert cloud.plane.agent("h2").pci.stats() == GPU_FREE
    assert_freed(cloud, world, mig)


def test_delete_in_verify_resize_with_the_destination_down(
        cloud: Cloud, world: dict[str, str]) -> None:
    """The source confirms (its set-aside guest goes), the server goes without its host."""
    server_id = world["server"]
    mig = resized(cloud, world)
    h2 = sv.stop_agent(cloud, "h2")
    delete(cloud, server_id)
    assert_freed(cloud, world, mig)
    assert sv.guests(cloud, server_id) == {("h2", ""): RUNNING}
    sv.start_agent(cloud, h2)
    assert sv.guests(cloud, server_id) == {}
    assert cloud.plane.agent("h2").pci.stats() == GPU_FREE
    assert_freed(cloud, world, mig)


# --- a delete during an evacuation -------------------------------------------------------
class Hold:
    """Holds one call until `release()`; `after=True` lets the call run first."""

    def __init__(self, after: bool) -> None:
        self.after = after
        self.reached = threading.Event()
        self._go = threading.Event()

    def wrap(self, step: Callable[..., Any]) -> Callable[..., Any]:
        def held(*args: Any, **kwargs: Any) -> Any:
            result = step(*args, **kwargs) if self.after else None
            self.reached.set()
            assert self._go.wait(60), "the test never released the step"
            return result if self.after else step(*args, **kwargs)
        return held

    def release(self) -> None:
        self._go.set()


EVACUATION_POINTS = [
    pytest.param("scheduler", "select_destinations", False, id="scheduling"),
    pytest.param("scheduler", "select_destinations", True, id="destination-claimed"),
    pytest.param("h2", "rebuild_instance", False, id="rebuild-on-destination"),
    pytest.param("h2", "rebuild_instance", True, id="destination-guest-spawned"),
]


@pytest.mark.parametrize("down", ["stopped", "forced-down"])
@pytest.mark.parametrize(("where", "method", "after"), EVACUATION_POINTS)
def test_delete_during_an_evacuation_leaves_nothing(
        cloud: Cloud, world: dict[str, str], monkeypatch: pytest.MonkeyPatch,
        where: str, method: str, after: bool, down: str) -> None:
    server_id = world["server"]
    if down == "stopped":
        h1 = sv.stop_agent(cloud, "h1")
    else:
        h1 = cloud.plane.agent("h1").host
        assert sv.force_down(cloud, "h1").status_code == 200
    target: Any = cloud.plane.scheduler if where == "scheduler" else cloud.plane.agent(where)
    held = Hold(after)
    monkeypatch.setattr(target, method, held.wrap(getattr(target, method)))
    with cloud.client("admin") as admin:
        resp = admin.post(f"/servers/{server_id}/action", json={"evacuate": {}})
    assert resp.status_code == 200, resp.text
    assert held.reached.wait(30)
    assert sv.server(cloud, server_id)["OS-EXT-STS:task_state"].startswith("rebuild")

    resp = cloud.compute.delete(f"/servers/{server_id}")
    assert resp.status_code == 204, resp.text
    held.release()
    sv.settle(cloud)
    assert cloud.compute.get(f"/servers/{server_id}").status_code == 404
    assert sv.migrations_of(cloud, server_id) == []  # soft-deleted with the server
    [mig] = sv.stored_migrations(cloud, server_id)
    assert (mig.migration_type, mig.status) == ("evacuation", "error")
    assert_freed(cloud, world, mig.uuid)
    assert sv.guests(cloud, server_id) == {("h1", ""): RUNNING}  # only the dead source's
    assert cloud.plane.agent("h2").pci.stats() == GPU_FREE

    if down == "stopped":
        sv.start_agent(cloud, h1)
    else:
        cloud.plane.stop_host("h1")
        cloud.plane.add_host(h1)
        assert sv.force_down(cloud, "h1", down=False).status_code == 200
    assert sv.guests(cloud, server_id) == {}
    assert cloud.plane.agent("h1").pci.stats() == GPU_FREE
    assert sv.stored_migrations(cloud, server_id)[0].status == "error"
    assert_freed(cloud, world, mig.uuid)


# --- a crash during a local delete ---------------------------------------------------------
@pytest.mark.parametrize("point", ["delete:terminate:done", "delete:drop_allocation:done"])
def test_a_crash_during_a_local_delete_is_recovered(point: str, tmp_path: Path) -> None:
    """kill -9 right after the local decision, or after the allocation went: the restart
    deletes again (still locally: the host stays forced down), and its agent, once it
    starts again after that, destroys the guest."""
    with migrated_database(BACKENDS[0]) as url:
        db = Database(url)
        schema.upgrade(db)
        try:
            server_id, host = _crash_deleting_on_a_forced_down_host(url, tmp_path, point)
            with running(url, tmp_path) as s:
                assert s.wait_settled(server_id) is None
                assert s.held(server_id) == {}
                assert s.audit(db) == []
                # Its agent had started before the delete was finished: the guest waits.
                assert _guest_hosts(db, server_id) == {host}
            with running(url, tmp_path) as s:  # the host's agent starts after the delete
                assert _guest_hosts(db, server_id) == set()
                assert s.audit(db) == []
        finally:
            db.dispose()


def _crash_deleting_on_a_forced_down_host(url: str, tmp_path: Path,
                                          point: str) -> tuple[str, str]:
    """Boot, force the server's host down, delete; the service dies at `point`."""
    s = Stowage(url, tmp_path, crash_at=point)
    try:
        small, _ = s.flavors()
        resp = s.boot_request(small, s.image())
        assert resp.status_code == 202, resp.text
        server_id = str(resp.json()["server"]["id"])
        host = str(s.wait_status(server_id, "ACTIVE")["OS-EXT-SRV-ATTR:host"])
        [service] = [v for v in s.compute.get("/os-services").json()["services"]
                     if v["host"] == host and v["binary"] == "nova-compute"]
        resp = s.compute.put(f"/os-services/{service['id']}", json={"forced_down": True})
        assert resp.status_code == 200, resp.text
        with contextlib.suppress(httpx.HTTPError):  # the crash may cut the answer off
            s.compute.delete(f"/servers/{server_id}")
        assert s.crashed(), f"the journal never reached {point}"
    finally:
        s.stop()
    return server_id, host


def _guest_hosts(db: Database, server_id: str) -> set[str]:
    g = t.simulated_guests
    with cell_database(db) as cell, cell.read() as conn:
        return {r.host for r in conn.execute(sa.select(g.c.host)
                                             .where(g.c.instance_uuid == server_id))}

