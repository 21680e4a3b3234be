"""The simulated hypervisor: every step idempotent, injected faults change nothing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from stowage.compute.agent.driver import Driver, GuestNotFound
from stowage.compute.agent.guest_store import GuestStore
from stowage.compute.agent.simulated import SimulatedDriver, SimulatedFault
from stowage.compute.states import NOSTATE, RUNNING, SHUTDOWN
from stowage.db import Database, schema

SMALL = {"vcpus": 1, "memory_mb": 512, "root_gb": 1, "ephemeral_gb": 0, "swap": 0}
LARGE = {"vcpus": 4, "memory_mb": 4096, "root_gb": 10, "ephemeral_gb": 0, "swap": 0}
INST, MIG = "inst-1", "mig-1"


@pytest.fixture
def driver() -> SimulatedDriver:
    return SimulatedDriver("host1")


def test_it_is_a_driver(driver: SimulatedDriver) -> None:
    implementation: Driver = driver
    assert implementation.list_instances() == []


def test_spawn_twice_is_one_guest(driver: SimulatedDriver) -> None:
    driver.spawn(INST, SMALL)
    driver.spawn(INST, SMALL)
    assert driver.list_instances() == [INST]
    assert driver.power_state(INST) == RUNNING


def test_destroy_unknown_guest_is_fine(driver: SimulatedDriver) -> None:
    driver.destroy("nobody")
    driver.spawn(INST, SMALL)
    driver.destroy(INST)
    driver.destroy(INST)
    assert driver.list_instances() == []
    assert driver.power_state(INST) == NOSTATE


def test_power_off_and_on_are_idempotent(driver: SimulatedDriver) -> None:
    driver.spawn(INST, SMALL)
    driver.power_off(INST)
    driver.power_off(INST)
    assert driver.power_state(INST) == SHUTDOWN
    driver.power_on(INST)
    driver.power_on(INST)
    assert driver.power_state(INST) == RUNNING


def test_power_needs_a_guest(driver: SimulatedDriver) -> None:
    with pytest.raises(GuestNotFound):
        driver.power_on("nobody")


def test_a_fault_fires_once_by_default_and_changes_nothing(driver: SimulatedDriver) -> None:
    driver.fail("spawn", message="no room")
    with pytest.raises(SimulatedFault, match="no room"):
        driver.spawn(INST, SMALL)
    assert driver.list_instances() == []
    driver.spawn(INST, SMALL)
    assert driver.list_instances() == [INST]


def test_a_fault_can_fire_n_times_or_always(driver: SimulatedDriver) -> None:
    driver.spawn(INST, SMALL)
    driver.fail("power_off", times=2)
    for _ in range(2):
        with pytest.raises(SimulatedFault):
            driver.power_off(INST)
    driver.power_off(INST)
    driver.fail("power_on", times=None)
    for _ in range(5):
        with pytest.raises(SimulatedFault):
            driver.power_on(INST)
    assert driver.power_state(INST) == SHUTDOWN
    driver.clear_faults()
    driver.power_on(INST)
    assert driver.power_state(INST) == RUNNING


def test_claim_is_a_step_too(driver: SimulatedDriver) -> None:
    driver.checkpoint("claim")
    driver.fail("claim")
    with pytest.raises(SimulatedFault):
        driver.checkpoint("claim")
    driver.checkpoint("claim")


def test_unknown_step_is_refused(driver: SimulatedDriver) -> None:
    with pytest.raises(ValueError, match="unknown step"):
        driver.fail("spwan")


def test_move_between_hosts_then_confirm() -> None:
    source, dest = SimulatedDriver("src"), SimulatedDriver("dst")
    source.spawn(INST, SMALL)
    for _ in range(2):
        source.migrate_disk_and_power_off(INST, MIG, "dst", LARGE)
    assert source.list_instances() == []
    for _ in range(2):
        dest.finish_migration(INST, MIG, LARGE, power_on=True)
    assert dest.list_instances() == [INST] and dest.power_state(INST) == RUNNING
    assert dest.guests[INST].flavor == LARGE
    for _ in range(2):
        source.confirm_migration(INST, MIG)
    assert source.leftovers == {} and dest.list_instances() == [INST]


def test_move_between_hosts_then_revert() -> None:
    source, dest = SimulatedDriver("src"), SimulatedDriver("dst")
    source.spawn(INST, SMALL)
    source.migrate_disk_and_power_off(INST, MIG, "dst", LARGE)
    dest.finish_migration(INST, MIG, LARGE, power_on=False)
    assert dest.power_state(INST) == SHUTDOWN
    dest.destroy(INST)
    for _ in range(2):
        source.finish_revert_migration(INST, MIG, power_on=True)
    assert source.guests[INST].flavor == SMALL and source.power_state(INST) == RUNNING
    assert dest.list_instances() == []


def test_same_host_resize_keeps_old_and_new_guest(driver: SimulatedDriver) -> None:
    driver.spawn(INST, SMALL)
    driver.migrate_disk_and_power_off(INST, MIG, "host1", LARGE)
    driver.finish_migration(INST, MIG, LARGE, power_on=True)
    assert driver.guests[INST].flavor == LARGE
    assert driver.leftovers[(INST, MIG)].flavor == SMALL
    driver.finish_revert_migration(INST, MIG, power_on=True)
    assert driver.guests[INST].flavor == SMALL and driver.leftovers == {}


def test_revert_on_the_destination_guest_is_refused(driver: SimulatedDriver) -> None:
    driver.finish_migration(INST, MIG, LARGE, power_on=True)
    with pytest.raises(GuestNotFound):
        driver.finish_revert_migration(INST, MIG, power_on=True)


def test_failed_move_steps_change_nothing(driver: SimulatedDriver) -> None:
    driver.spawn(INST, SMALL)
    driver.fail("migrate_disk_and_power_off")
    with pytest.raises(SimulatedFault):
        driver.migrate_disk_and_power_off(INST, MIG, "host2", LARGE)
    assert driver.list_instances() == [INST] and driver.leftovers == {}
    driver.migrate_disk_and_power_off(INST, MIG, "host2", LARGE)
    driver.fail("confirm_migration")
    with pytest.raises(SimulatedFault):
        driver.confirm_migration(INST, MIG)
    assert (INST, MIG) in driver.leftovers
    driver.fail("finish_revert_migration")
    with pytest.raises(SimulatedFault):
        driver.finish_revert_migration(INST, MIG, power_on=True)
    assert driver.list_instances() == []


def test_destroy_takes_what_moves_left(driver: SimulatedDriver) -> None:
    driver.spawn(INST, SMALL)
    driver.migrate_disk_and_power_off(INST, MIG, "host2", LARGE)
    driver.destroy(INST)
    assert driver.leftovers == {}


def test_adopt_knows_existing_guests(driver: SimulatedDriver) -> None:
    driver.adopt(INST, SMALL, SHUTDOWN)
    driver.adopt(INST, LARGE, RUNNING)
    assert driver.guests[INST].flavor == SMALL and driver.power_state(INST) == SHUTDOWN


# --- persistence: a restart of the service is not a reboot of the host ----------------
@pytest.fixture
def store() -> Iterator[GuestStore]:
    db = Database("sqlite://")
    schema.upgrade(db)
    yield GuestStore(db, "host1")
    db.dispose()


def _restarted(store: GuestStore) -> SimulatedDriver:
    again = SimulatedDriver("host1", store=store)
    again.load()
    return again


def test_guests_and_set_aside_guests_survive_a_restart(store: GuestStore) -> None:
    driver = SimulatedDriver("host1", store=store)
    driver.spawn(INST, SMALL)
    driver.spawn("inst-2", SMALL)
    driver.power_off("inst-2")
    driver.migrate_disk_and_power_off(INST, MIG, "host1", LARGE)
    driver.finish_migration(INST, MIG, LARGE, power_on=True)  # same host: both at once
    again = _restarted(store)
    assert again.guests == driver.guests and again.leftovers == driver.leftovers
    again.finish_revert_migration(INST, MIG, power_on=True)  # what failed before
    assert _restarted(store).guests[INST].flavor == SMALL
    assert _restarted(store).power_state("inst-2") == SHUTDOWN


def test_a_destroyed_guest_stays_gone_after_a_restart(store: GuestStore) -> None:
    driver = SimulatedDriver("host1", store=store)
    driver.spawn(INST, SMALL)
    driver.destroy(INST)
    assert _restarted(store).list_instances() == []
    other = SimulatedDriver("host2", store=GuestStore(store.db, "host2"))
    other.spawn(INST, SMALL)
    assert _restarted(store).list_instances() == []  # each host keeps its own


def test_console_follows_power_and_moves(driver: SimulatedDriver) -> None:
    driver.spawn(INST, SMALL)
    booted = driver.console_output(INST)
    assert booted[-1] == "guest login: " and f"uuid={INST}" in booted[1]
    driver.power_off(INST)
    driver.power_off(INST)  # already off: no second shutdown
    assert driver.console_output(INST)[len(booted):] == [
        "Stopping services... OK", "[   99.000000] reboot: Power down"]
    assert driver.diagnostics(INST, [], standard=True)["uptime"] is None
    driver.power_on(INST)
    assert len(driver.console_output(INST)) == 2 * len(booted) + 2
    log = driver.console_output(INST)
    driver.migrate_disk_and_power_off(INST, MIG, "host2", LARGE)
    driver.finish_revert_migration(INST, MIG, power_on=True)  # the old guest's log goes on
    assert driver.console_output(INST)[:len(log) + 2] == log + [
        "Stopping services... OK", "[   99.000000] reboot: Power down"]
    driver.fail("inject_network_info")
    with pytest.raises(SimulatedFault):
        driver.inject_network_info(INST, [])
    with pytest.raises(GuestNotFound):
        driver.console_output("nobody")


def test_reboot_and_rebuild_boot_again_pause_and_suspend_do_not(
        driver: SimulatedDriver) -> None:
    driver.spawn(INST, SMALL)
    booted = driver.console_output(INST)
    down = ["Stopping services... OK", "[   99.000000] reboot: Power down"]
    driver.reboot(INST, hard=False)
    assert driver.console_output(INST) == booted + down + booted
    for freeze, thaw in ((driver.pause, driver.unpause), (driver.suspend, driver.resume)):
        freeze(INST)
        thaw(INST)
    assert driver.console_output(INST) == booted + down + booted
    assert driver.diagnostics(INST, [], standard=True)["uptime"] is not None
    driver.rebuild(INST, SMALL, power_on=True, preserve_ephemeral=False)
    assert driver.console_output(INST) == booted + down + booted + booted
    driver.rebuild(INST, SMALL, power_on=False, preserve_ephemeral=False)
    assert driver.power_state(INST) == SHUTDOWN
    assert driver.console_output(INST) == booted + down + booted + booted


def test_console_is_capped(driver: SimulatedDriver) -> None:
    driver.spawn(INST, SMALL)
    for _ in range(200):
        driver.power_off(INST)
        driver.power_on(INST)
    assert len(driver.console_output(INST)) == 1000
    assert driver.console_output(INST)[-1] == "guest login: "


def test_diagnostics_read_the_guest(driver: SimulatedDriver) -> None:
    driver.spawn(INST, {**LARGE, "ephemeral_gb": 1, "swap": 512})
    nics = [{"port_id": "0123456789abcdef", "mac": "fa:16:3e:00:00:01"}]
    found = driver.diagnostics(INST, nics, standard=True)
    assert (found["state"], found["num_cpus"], found["num_disks"], found["num_nics"]) == (
        "running", 4, 3, 1)
    assert found["memory_details"] == {"maximum": 4096, "used": 4096}
    assert found["nic_details"][0]["mac_address"] == "fa:16:3e:00:00:01"
    legacy = driver.diagnostics(INST, nics, standard=False)
    assert legacy["memory"] == 4096 * 1024 and "tap0123456789a_rx" in legacy
    assert {"vda_read", "vdb_read", "vdc_read", "cpu3_time"} <= set(legacy)
