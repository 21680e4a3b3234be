"""An evacuation cut off where no crash test can reach: during a failure's undo, mid-reschedule.

    host1 (dead): server (small)     host2: refuses or fails     host3: an alternate

The conductor is stopped in-process at a journal point (its crash hook
raises instead of exiting, so the operation is left open exactly as a
crash leaves it), then `recover()` runs as on a restart. The subprocess
crash tests (test_crash_recovery.py) cover every point of an evacuation
that succeeds; these cover the points only a failure passes.
"""

from __future__ import annotations

from typing import Any

import pytest

from stowage.compute.conductor import tasks
from tests.functional.conftest import Cloud
from tests.functional.evacuation import SMALL, evacuate, server_on_host1
from tests.functional.servers import (
    EMPTY,
    assert_invariants,
    guests,
    held,
    migrations_of,
    server,
    settle,
    stop_agent,
    usages,
)


class Crash(BaseException):
    """Raised by the crash hook: nothing of the conductor's own handling runs after it."""


def crash_at(monkeypatch: pytest.MonkeyPatch, point: str, nth: int = 1) -> None:
    """The conductor stops the `nth` time its journal reaches `point` ("op:step:state")."""
    want, seen = tuple(point.split(":")), [0]

    def hook(operation: str, step: str, state: str) -> None:
        if (operation, step, state) == want:
            seen[0] += 1
            if seen[0] == nth:
                raise Crash(point)

    monkeypatch.setattr(tasks, "crash_hook", lambda spec: hook)


@pytest.fixture
def dead(cloud: Cloud) -> dict[str, Any]:
    """The server on host1 (evacuation.py), whose agent is stopped; host2 and host3 free."""
    nodes = server_on_host1(cloud, ("host1", "host2", "host3"))
    stop_agent(cloud, "host1")
    return nodes


def evacuate_and_recover(cloud: Cloud, monkeypatch: pytest.MonkeyPatch,
                         server_id: str) -> dict[str, Any]:
    evacuate(cloud, server_id)
    assert server(cloud, server_id)["status"] == "REBUILD"  # cut off
    monkeypatch.undo()
    cloud.plane.conductor.recover()
    settle(cloud)
    [mig] = migrations_of(cloud, server_id)
    return mig


def test_a_crash_during_the_undo_of_a_failed_rebuild_finishes_the_undo(
        cloud: Cloud, dead: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("host2", "host3"):
        cloud.plane.agent(name).driver.fail("spawn", times=None)
    crash_at(monkeypatch, "evacuate:claim_destination:rolled_back")
    mig = evacuate_and_recover(cloud, monkeypatch, dead["server"])

    view = server(cloud, dead["server"])
    assert (view["status"], view["OS-EXT-SRV-ATTR:host"]) == ("ERROR", "host1")
    assert "interrupted by a restart" in view["fault"]["message"]
    assert mig["status"] == "failed"
    assert held(cloud, dead["server"]) == {dead["host1"]: SMALL}
    assert held(cloud, mig["uuid"]) == {}
    assert usages(cloud, dead["host2"]) == EMPTY
    assert_invariants(cloud)


def test_a_crash_after_an_alternate_took_over_goes_on_there(
        cloud: Cloud, dead: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    cloud.plane.agent("host2").driver.fail("claim")
    crash_at(monkeypatch, "evacuate:rebuild_instance:executing", nth=2)  # host3's turn
    mig = evacuate_and_recover(cloud, monkeypatch, dead["server"])

    view = server(cloud, dead["server"])
    assert (view["status"], view["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", "host3")
    assert (mig["status"], mig["dest_compute"]) == ("done", "host3")
    assert held(cloud, dead["server"]) == {dead["host3"]: SMALL}
    assert held(cloud, mig["uuid"]) == {dead["host1"]: SMALL}
    assert usages(cloud, dead["host2"]) == EMPTY
    assert guests(cloud, dead["server"]) == {("host1", ""): 1, ("host3", ""): 1}
    assert_invariants(cloud)


def test_a_destination_dead_by_the_restart_fails_the_resumed_rebuild(
        cloud: Cloud, dead: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """Cut off with host2 claimed, which dies too before the restart: the resumed rebuild
    fails there (a rebuild is not rescheduled, as Nova's is not) and the claim goes back."""
    crash_at(monkeypatch, "evacuate:rebuild_instance:executing")
    evacuate(cloud, dead["server"])
    assert held(cloud, dead["server"]) == {dead["host2"]: SMALL}
    stop_agent(cloud, "host2")
    monkeypatch.undo()
    cloud.plane.conductor.recover()
    settle(cloud)

    view = server(cloud, dead["server"])
    assert (view["status"], view["OS-EXT-SRV-ATTR:host"]) == ("ERROR", "host1")
    [mig] = migrations_of(cloud, dead["server"])
    assert mig["status"] == "failed"
    assert held(cloud, dead["server"]) == {dead["host1"]: SMALL}
    assert held(cloud, mig["uuid"]) == {}
    assert usages(cloud, dead["host2"]) == EMPTY
    assert_invariants(cloud)
