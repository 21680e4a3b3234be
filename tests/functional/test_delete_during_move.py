"""DELETE /servers/{id} in any task state: the running operation stops and nothing leaks.

    h1 (the server's host)      h2 (the only other host: every move goes there)
    8 VCPU, 8192 MB, 100 GB     8 VCPU, 8192 MB, 100 GB

Nova deletes a server whatever it is doing. Here the move (or power change)
is held at one of its steps (`Hold`), the user deletes the server, and the
step is let go: the operation must notice, stop, and leave nothing behind -
no allocation for the instance nor for the migration, no guest on either
host, a server that is gone (404), and a clean audit.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from stowage.compute import migrations
from stowage.compute.agent.simulated import SimulatedDriver
from tests.functional import servers as sv
from tests.functional.conftest import Cloud

HOST = {"vcpus": 8, "memory_mb": 8192, "disk_gb": 100}


class Hold:
    """Holds one step until `release()`; `reached` is set once the step is being held.

    `after=True` runs the step first and holds before returning its result, so
    what the step made (a claim, a guest) exists when the delete comes.
    """

    def __init__(self, after: bool) -> None:
        self.after = after
        self.reached = threading.Event()
        self._go = threading.Event()

    def wrap(self, step: Callable[..., Any]) -> Callable[..., Any]:
        def held(**kwargs: Any) -> Any:
            result = step(**kwargs) if self.after else None
            self.reached.set()
            assert self._go.wait(60), "the test never released the step"
            return result if self.after else step(**kwargs)
        return held

    def release(self) -> None:
        self._go.set()


@pytest.fixture
def booted(cloud: Cloud) -> dict[str, Any]:
    cloud.add_host("h1", **HOST)
    small = sv.flavor(cloud, "small", 1, 512, 5)
    big = sv.flavor(cloud, "big", 2, 1024, 10)
    server = sv.boot(cloud, "vm", small, sv.image(cloud))
    assert sv.host_of(cloud, server) == "h1"
    cloud.add_host("h2", **HOST)
    return {"server": server, "big": big}


def hold(cloud: Cloud, monkeypatch: pytest.MonkeyPatch, where: str, method: str,
         after: bool) -> Hold:
    """Hold `method` of the scheduler ("scheduler") or of a host's agent."""
    target: Any = cloud.plane.scheduler if where == "scheduler" else cloud.plane.agent(where)
    holder = Hold(after)
    monkeypatch.setattr(target, method, holder.wrap(getattr(target, method)))
    return holder


def migration_uuids(cloud: Cloud, server: str) -> list[str]:
    with cloud.live.cell_db.read() as conn:
        return [m.uuid for m in migrations.for_instance(conn, server)]


def assert_nothing_left(cloud: Cloud, server: str, ended: frozenset[str] = frozenset({"error"})
                        ) -> None:
    """Gone (404), no allocation for it or its migrations, no guest on h1 or h2, audit clean.

    `ended`: the statuses its migrations may end in (a confirm that got to
    its end before the delete leaves its migration confirmed).
    """
    assert cloud.compute.get(f"/servers/{server}").status_code == 404
    assert sv.held(cloud, server) == {}
    moves = migration_uuids(cloud, server)
    for migration in moves:
        assert sv.held(cloud, migration) == {}, migration
    with cloud.live.cell_db.read() as conn:
        assert {m.status for m in migrations.for_instance(conn, server)} <= ended
    for host in ("h1", "h2"):
        driver = cloud.plane.agent(host).driver
        assert isinstance(driver, SimulatedDriver)
        assert server not in driver.list_instances(), host
        assert not [key for key in driver.leftovers if key[0] == server], host
    sv.assert_invariants(cloud)


def delete_now(cloud: Cloud, server: str) -> None:
    resp = cloud.compute.delete(f"/servers/{server}")
    assert resp.status_code == 204, resp.text


POINTS = [
    pytest.param("scheduler", "select_destinations", False, id="scheduling"),
    pytest.param("scheduler", "select_destinations", True, id="destination-claimed"),
    pytest.param("h2", "prep_resize", False, id="prep-on-destination"),
    pytest.param("h2", "prep_resize", True, id="destination-prepared"),
    pytest.param("h1", "resize_instance", False, id="resize-on-source"),
    pytest.param("h1", "resize_instance", True, id="source-guest-set-aside"),
    pytest.param("h2", "finish_resize", False, id="finish-on-destination"),
    pytest.param("h2", "finish_resize", True, id="destination-guest-running"),
]


@pytest.mark.parametrize(("where", "method", "after"), POINTS)
def test_delete_during_a_resize_stops_it_and_leaves_nothing(
        cloud: Cloud, booted: dict[str, Any], monkeypatch: pytest.MonkeyPatch,
        where: str, method: str, after: bool) -> None:
    server = booted["server"]
    held = hold(cloud, monkeypatch, where, method, after)
    resp = cloud.compute.post(f"/servers/{server}/action",
                              json={"resize": {"flavorRef": booted["big"]}})
    assert resp.status_code == 202, resp.text
    assert held.reached.wait(30)
    assert sv.server(cloud, server)["OS-EXT-STS:task_state"].startswith("resize_")

    delete_now(cloud, server)
    held.release()
    sv.settle(cloud)
    assert_nothing_left(cloud, server)
    assert len(migration_uuids(cloud, server)) == 1


def test_delete_right_after_the_resize_was_accepted(
        cloud: Cloud, booted: dict[str, Any]) -> None:
    """No hold: the delete races the move from wherever it happens to be."""
    server = booted["server"]
    resp = cloud.compute.post(f"/servers/{server}/action",
                              json={"resize": {"flavorRef": booted["big"]}})
    assert resp.status_code == 202, resp.text
    delete_now(cloud, server)
    sv.settle(cloud)
    assert_nothing_left(cloud, server)


@pytest.mark.parametrize("after", [False, True], ids=["before", "after"])
def test_delete_during_a_cold_migration(
        cloud: Cloud, booted: dict[str, Any], monkeypatch: pytest.MonkeyPatch,
        after: bool) -> None:
    server = booted["server"]
    held = hold(cloud, monkeypatch, "h2", "finish_resize", after)
    resp = cloud.compute.post(f"/servers/{server}/action", json={"migrate": None})
    assert resp.status_code == 202, resp.text
    assert held.reached.wait(30)
    delete_now(cloud, server)
    held.release()
    sv.settle(cloud)
    assert_nothing_left(cloud, server)


@pytest.mark.parametrize("after", [False, True], ids=["before", "after"])
def test_delete_during_a_stop(cloud: Cloud, booted: dict[str, Any],
                              monkeypatch: pytest.MonkeyPatch, after: bool) -> None:
    server = booted["server"]
    held = hold(cloud, monkeypatch, "h1", "power_off_instance", after)
    resp = cloud.compute.post(f"/servers/{server}/action", json={"os-stop": None})
    assert resp.status_code == 202, resp.text
    assert held.reached.wait(30)
    assert sv.server(cloud, server)["OS-EXT-STS:task_state"] == "powering-off"
    delete_now(cloud, server)
    held.release()
    sv.settle(cloud)
    assert_nothing_left(cloud, server)


RESIZE_END_POINTS = [
    pytest.param("revertResize", "h2", "revert_resize", False, id="revert-on-destination"),
    pytest.param("revertResize", "h2", "revert_resize", True, id="destination-reverted"),
    pytest.param("revertResize", "h1", "finish_revert_resize", False, id="revert-on-source"),
    pytest.param("revertResize", "h1", "finish_revert_resize", True, id="source-guest-back"),
    pytest.param("confirmResize", "h1", "confirm_resize", False, id="confirm-on-source"),
    pytest.param("confirmResize", "h1", "confirm_resize", True, id="source-cleaned"),
]


@pytest.mark.parametrize(("action", "where", "method", "after"), RESIZE_END_POINTS)
def test_delete_while_a_resize_is_confirmed_or_reverted(
        cloud: Cloud, booted: dict[str, Any], monkeypatch: pytest.MonkeyPatch,
        action: str, where: str, method: str, after: bool) -> None:
    server = booted["server"]
    sv.action(cloud, server, {"resize": {"flavorRef": booted["big"]}})
    assert sv.server(cloud, server)["status"] == "VERIFY_RESIZE"
    held = hold(cloud, monkeypatch, where, method, after)
    resp = cloud.compute.post(f"/servers/{server}/action", json={action: None})
    assert resp.status_code in (202, 204), resp.text
    assert held.reached.wait(30)
    delete_now(cloud, server)
    held.release()
    sv.settle(cloud)
    assert_nothing_left(cloud, server, frozenset({"error", "confirmed"}))
