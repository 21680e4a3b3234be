"""What each role of the control plane registers, and which agent steps wait long."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stowage.compute import rpc
from stowage.compute.agent.manager import ComputeAgent
from stowage.compute.runtime import ControlPlane
from stowage.config import ComputeSettings
from stowage.db import Database
from stowage.messaging import MessagingTimeout
from stowage.messaging.local import LocalTransport
from stowage.placement.client import PlacementClient


def _plane(tmp_path: Path, **options: Any) -> ControlPlane:
    # Nothing below reaches Placement or the database: the roles in these tests do no I/O.
    return ControlPlane(ComputeSettings(), Database(f"sqlite:///{tmp_path}/p.db"),
                        PlacementClient.over_http("http://127.0.0.1:9"), **options)


def test_the_api_role_alone_serves_nothing_and_runs_no_timer(tmp_path: Path) -> None:
    transport = LocalTransport()
    plane = _plane(tmp_path, transport=transport, roles=())
    plane.start()
    try:
        assert (plane.conductor, plane.scheduler, plane.agents) == (None, None, {})
        with pytest.raises(MessagingTimeout):
            transport.call(rpc.SCHEDULER, "select_destinations", spec={}, instance_uuids=[])
        assert plane.drain(1)
    finally:
        plane.stop()


def test_unknown_roles_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown control plane role"):
        _plane(tmp_path, roles=("conductor", "api"))


def test_an_agent_process_runs_the_hosts_it_is_named_beside_the_configured_ones(
        tmp_path: Path) -> None:
    plane = ControlPlane(ComputeSettings(sim_hosts=2), Database("sqlite://"),
                         PlacementClient.over_http("http://127.0.0.1:9"),
                         roles=("compute",), host_names=("host2", "edge1"))
    assert [h.name for h in plane.configured_hosts()] == ["host1", "host2", "edge1"]


class _Recorder:
    def __init__(self) -> None:
        self.sent: list[tuple[str, str]] = []

    def call(self, target: str, method: str, /, **kwargs: Any) -> Any:
        self.sent.append(("call", method))

    def call_long(self, target: str, method: str, /, **kwargs: Any) -> Any:
        self.sent.append(("call_long", method))
        return []


def test_long_steps_wait_the_long_timeout_and_short_questions_do_not() -> None:
    recorder = _Recorder()
    agents = rpc.AgentAPI(recorder)  # type: ignore[arg-type]
    agents.call("h", "pre_live_migration", instance_uuid="i")
    agents.call("h", "resize_instance", instance_uuid="i")
    agents.call("h", "guest_power_state", instance_uuid="i")
    rpc.SchedulerAPI(recorder).select_destinations({}, [])  # type: ignore[arg-type]
    assert recorder.sent == [("call_long", "pre_live_migration"),
                             ("call_long", "resize_instance"), ("call", "guest_power_state"),
                             ("call_long", "select_destinations")]


def test_every_long_step_is_an_agent_method() -> None:
    assert all(callable(getattr(ComputeAgent, m, None)) and not m.startswith("_")
               for m in rpc.LONG_AGENT_STEPS)
