"""The simulated live migration: a copy that takes time, can be stopped or ended early, and
whose every step is idempotent."""

from __future__ import annotations

import time

import pytest

from stowage.compute.agent.driver import GuestNotFound
from stowage.compute.agent.sim_live_migration import PAUSED
from stowage.compute.agent.simulated import SimulatedDriver, SimulatedFault
from stowage.compute.states import NOSTATE, RUNNING

SMALL = {"vcpus": 1, "memory_mb": 512, "root_gb": 1, "ephemeral_gb": 0, "swap": 0}
INST, MIG = "inst-1", "mig-1"
MEMORY, DISK = 512 << 20, 1 << 30


@pytest.fixture
def source() -> SimulatedDriver:
    driver = SimulatedDriver("host1")
    driver.spawn(INST, SMALL)
    return driver


def _wait(driver: SimulatedDriver, state: str) -> dict[str, object]:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        progress = driver.live_migration_progress(INST, MIG)
        if progress["state"] == state:
            return progress
        time.sleep(0.01)
    raise AssertionError(driver.live_migration_progress(INST, MIG))


def test_an_instant_copy_sets_the_source_guest_aside(source: SimulatedDriver) -> None:
    source.live_migration(INST, MIG, "host2", MEMORY, DISK, 0)
    progress = source.live_migration_progress(INST, MIG)
    assert progress["state"] == "completed"
    assert (progress["memory_processed"], progress["disk_remaining"]) == (MEMORY, 0)
    assert source.power_state(INST) == NOSTATE and (INST, MIG) in source.leftovers

    source.live_migration(INST, MIG, "host2", MEMORY, DISK, 0)  # again: nothing more
    source.post_live_migration(INST, MIG)
    source.post_live_migration(INST, MIG)
    assert source.leftovers == {} and source.guests == {}


def test_a_slow_copy_reports_progress_and_can_be_forced(source: SimulatedDriver) -> None:
    source.live_migration(INST, MIG, "host2", MEMORY, DISK, 5)
    time.sleep(0.2)
    progress = source.live_migration_progress(INST, MIG)
    assert progress["state"] == "running"
    assert 0 < int(progress["memory_processed"]) < MEMORY
    assert source.live_migration_force_complete(MIG)
    _wait(source, "completed")
    assert (INST, MIG) in source.leftovers


def test_an_aborted_copy_leaves_the_guest_running_here(source: SimulatedDriver) -> None:
    source.live_migration(INST, MIG, "host2", MEMORY, DISK, 5)
    assert source.live_migration_abort(MIG)
    _wait(source, "cancelled")
    assert source.power_state(INST) == RUNNING and source.leftovers == {}


def test_an_abort_that_comes_first_stops_the_copy_when_it_starts(
        source: SimulatedDriver) -> None:
    assert source.live_migration_abort(MIG)
    source.live_migration(INST, MIG, "host2", MEMORY, DISK, 5)
    _wait(source, "cancelled")
    assert source.power_state(INST) == RUNNING


def test_rollback_runs_the_set_aside_guest_again(source: SimulatedDriver) -> None:
    source.live_migration(INST, MIG, "host2", MEMORY, DISK, 0)
    source.rollback_live_migration(INST, MIG)
    source.rollback_live_migration(INST, MIG)
    assert source.power_state(INST) == RUNNING and source.leftovers == {}


def test_a_failing_copy_changes_nothing(source: SimulatedDriver) -> None:
    source.fail("live_migration_copy")
    source.live_migration(INST, MIG, "host2", MEMORY, DISK, 0)
    assert source.live_migration_progress(INST, MIG)["state"] == "failed"
    assert source.power_state(INST) == RUNNING
    source.fail("live_migration")
    with pytest.raises(SimulatedFault):
        source.live_migration(INST, "mig-2", "host2", MEMORY, DISK, 0)


def test_the_destination_prepares_runs_or_drops_the_incoming_guest() -> None:
    dest = SimulatedDriver("host2")
    dest.pre_live_migration(INST, MIG, SMALL)
    dest.pre_live_migration(INST, MIG, SMALL)
    assert dest.power_state(INST) == PAUSED
    dest.rollback_live_migration_at_destination(INST, MIG)
    assert dest.guests == {}

    dest.pre_live_migration(INST, MIG, SMALL)
    dest.post_live_migration_at_destination(INST, MIG)
    dest.post_live_migration_at_destination(INST, MIG)
    assert dest.power_state(INST) == RUNNING and dest.guests[INST].incoming is None
    dest.rollback_live_migration_at_destination(INST, MIG)  # not the move's any more
    assert dest.power_state(INST) == RUNNING
    with pytest.raises(GuestNotFound):
        dest.pre_live_migration(INST, "mig-2", SMALL)
