"""A simulated host's fault table: once, N times, always; one fault per step; by id."""

from __future__ import annotations

import pytest

from stowage.compute.agent.faults import (
    FaultSpec,
    FaultSpecError,
    FaultTable,
    SimulatedFault,
)


def test_once_fires_once_then_is_gone() -> None:
    table = FaultTable("h1")
    fault = table.arm(FaultSpec("spawn"))
    assert fault.view() == {"id": fault.id, "step": "spawn", "mode": "once", "remaining": 1,
                            "error": "injected fault in spawn on h1"}
    with pytest.raises(SimulatedFault, match="injected fault in spawn on h1"):
        table.fire("spawn")
    table.fire("spawn")  # disarmed: nothing raised
    assert table.list() == []


def test_times_counts_down_and_always_stays() -> None:
    table = FaultTable("h1")
    table.arm(FaultSpec("spawn", 2, "disk full"))
    table.arm(FaultSpec("heartbeat", None))
    for left in (1, 0):
        fired = table.take("spawn")
        assert fired is not None and (fired.remaining, fired.message) == (left, "disk full")
    assert table.take("spawn") is None
    for _ in range(5):
        assert table.take("heartbeat") is not None
    assert [(f.step, f.mode, f.remaining) for f in table.list()] == [
        ("heartbeat", "always", None)]


def test_arming_a_step_again_replaces_it_and_remove_takes_an_id() -> None:
    table = FaultTable("h1")
    first = table.arm(FaultSpec("spawn", None))
    second = table.arm(FaultSpec("spawn", 3))
    assert [f.id for f in table.list()] == [second.id]
    assert not table.remove(first.id)
    assert table.remove(second.id)
    assert table.list() == []


def test_clear_counts_what_it_disarmed() -> None:
    table = FaultTable("h1")
    table.arm(FaultSpec("spawn"))
    table.arm(FaultSpec("power_off"))
    assert table.clear() == 2
    assert table.clear() == 0


def test_agent_is_not_armed() -> None:
    with pytest.raises(FaultSpecError, match="kills the agent at once"):
        FaultTable("h1").arm(FaultSpec("agent"))


@pytest.mark.parametrize(("raw", "spec"), [
    ({"step": "spawn"}, FaultSpec("spawn", 1)),
    ({"step": "spawn", "mode": "once"}, FaultSpec("spawn", 1)),
    ({"step": "spawn", "times": 4}, FaultSpec("spawn", 4)),
    ({"step": "spawn", "mode": "always", "error": "e"}, FaultSpec("spawn", None, "e")),
])
def test_specs_from_mappings(raw: dict[str, object], spec: FaultSpec) -> None:
    assert FaultSpec.from_mapping(raw) == spec
