"""The agents' power-state sync: a guest whose power changed behind the API's back.

    host1: 8 vCPU, 8 GiB; small = 1 vCPU / 512 MB; one server "vm" on host1

The simulated driver changes a guest's power as a shutdown from inside the
guest or a crash would (`change_power`); the sync (run here by hand, and
once by the periodic loop) puts the record right as Nova's
`_sync_instance_power_state` does, a stop through the conductor as os-stop.
"""

from __future__ import annotations

import time

import pytest

from stowage.compute import instances
from stowage.compute.agent.manager import ComputeAgent
from stowage.compute.agent.power_sync import CRASHED
from stowage.compute.agent.simulated import SimulatedDriver
from stowage.messaging import MessagingError
from tests.functional.conftest import Cloud
from tests.functional.servers import (
    action,
    assert_invariants,
    boot,
    flavor,
    guests,
    image,
    server,
    settle,
)
from tests.functional.test_server_external_events import _actions

RUNNING, PAUSED, SHUTDOWN = 1, 3, 4


@pytest.fixture
def sid(cloud: Cloud) -> str:
    cloud.add_host("host1", vcpus=8, memory_mb=8192, disk_gb=100)
    return boot(cloud, "vm", flavor(cloud, "small", 1, 512, 5), image(cloud))


def _agent(cloud: Cloud) -> ComputeAgent:
    return cloud.plane.agents["host1"]


def _behind_the_apis_back(cloud: Cloud, sid: str, power: int) -> None:
    driver = _agent(cloud).driver
    assert isinstance(driver, SimulatedDriver)
    driver.change_power(sid, power)


def _seen(cloud: Cloud, sid: str) -> tuple[str, int]:
    view = server(cloud, sid)
    return view["status"], view["OS-EXT-STS:power_state"]


@pytest.mark.parametrize("power", [SHUTDOWN, CRASHED])
def test_a_guest_that_stopped_by_itself_stops_its_server(cloud: Cloud, sid: str,
                                                         power: int) -> None:
    _behind_the_apis_back(cloud, sid, power)
    assert _seen(cloud, sid) == ("ACTIVE", RUNNING)  # nobody knows yet

    assert _agent(cloud).sync_power_states() == [sid]
    settle(cloud)  # the stop it asked the conductor for
    assert _seen(cloud, sid) == ("SHUTOFF", SHUTDOWN)
    assert guests(cloud, sid) == {("host1", ""): SHUTDOWN}
    assert _actions(cloud, sid)["stop"] == [("compute_stop_instance", "Success")]
    assert _agent(cloud).sync_power_states() == []  # in step now: nothing more
    action(cloud, sid, {"os-start": None})  # and the user can start it again
    assert _seen(cloud, sid) == ("ACTIVE", RUNNING)
    assert_invariants(cloud)


def test_a_stopped_server_whose_guest_runs_is_powered_off_again(cloud: Cloud,
                                                                sid: str) -> None:
    action(cloud, sid, {"os-stop": None})
    _behind_the_apis_back(cloud, sid, RUNNING)

    assert _agent(cloud).sync_power_states() == [sid]
    settle(cloud)
    assert _seen(cloud, sid) == ("SHUTOFF", SHUTDOWN)
    assert guests(cloud, sid) == {("host1", ""): SHUTDOWN}
    stops = [a for a in cloud.compute.get(f"/servers/{sid}/os-instance-actions")
             .json()["instanceActions"] if a["action"] == "stop"]
    assert len(stops) == 2  # the user's, then the sync's


def test_a_paused_guest_or_a_locked_server_only_gets_its_power_state(cloud: Cloud,
                                                                     sid: str) -> None:
    _behind_the_apis_back(cloud, sid, PAUSED)  # may come back by itself (Nova's rule)
    assert _agent(cloud).sync_power_states() == [sid]
    assert _seen(cloud, sid) == ("ACTIVE", PAUSED)
    assert "stop" not in _actions(cloud, sid)

    action(cloud, sid, {"lock": None})
    _behind_the_apis_back(cloud, sid, SHUTDOWN)  # Nova's stop refuses a locked server
    assert _agent(cloud).sync_power_states() == [sid]
    assert _seen(cloud, sid) == ("ACTIVE", SHUTDOWN)
    assert "stop" not in _actions(cloud, sid)


def test_a_server_with_a_task_is_left_to_its_operation(cloud: Cloud, sid: str) -> None:
    with cloud.live.cell_db.write() as conn:
        instances.save(conn, sid, task_state="powering-off")
    _behind_the_apis_back(cloud, sid, SHUTDOWN)
    assert _agent(cloud).sync_power_states() == []
    view = server(cloud, sid)
    assert (view["OS-EXT-STS:task_state"], view["OS-EXT-STS:power_state"]) == (
        "powering-off", RUNNING)


def test_the_periodic_loop_runs_the_sync(cloud: Cloud, sid: str) -> None:
    _behind_the_apis_back(cloud, sid, SHUTDOWN)
    cloud.configure(sync_power_state_interval=0.5)
    try:
        for _ in range(120):  # polled: the loop ticks every half second
            if server(cloud, sid)["status"] == "SHUTOFF":
                break
            time.sleep(0.5)
    finally:
        cloud.configure(sync_power_state_interval=600.0)
    assert _seen(cloud, sid) == ("SHUTOFF", SHUTDOWN)


class _LostCast:
    """A conductor the stop never reaches (a broker down, the process killed)."""

    def power(self, *args: object, **kwargs: object) -> None:
        raise MessagingError("the cast was lost")


def test_a_stop_whose_cast_was_lost_is_taken_over_by_a_conductor(
        cloud: Cloud, sid: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_agent(cloud), "conductor", _LostCast())
    _behind_the_apis_back(cloud, sid, SHUTDOWN)
    assert _agent(cloud).sync_power_states() == [sid]
    assert server(cloud, sid)["OS-EXT-STS:task_state"] == "powering-off"  # journaled

    cloud.configure(conductor_lease_seconds=1.0)  # the periodic take-over finds it
    try:
        for _ in range(120):
            if server(cloud, sid)["status"] == "SHUTOFF":
                break
            time.sleep(0.5)
    finally:
        cloud.configure(conductor_lease_seconds=30.0)
    assert _seen(cloud, sid) == ("SHUTOFF", SHUTDOWN)
    assert _actions(cloud, sid)["stop"] == [("compute_stop_instance", "Success")]
