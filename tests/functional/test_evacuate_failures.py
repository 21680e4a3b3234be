"""An evacuation that fails leaves the server in ERROR on its dead host, holding its source.

    host1 (dies): server (small)      host2: the destination (and its faults)
                                      host3: an alternate (some tests)

For each step the test asserts what the user sees (server status and host,
migration status) and what Placement says each consumer holds: the instance
its source allocation on host1, the migration nothing, host2 nothing.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.functional.conftest import Cloud
from tests.functional.evacuation import SMALL, evacuate, server_on_host1
from tests.functional.servers import (
    EMPTY,
    action,
    assert_invariants,
    guests,
    held,
    migrations_of,
    server,
    start_agent,
    stop_agent,
    usages,
)

RUNNING = 1


@pytest.fixture
def dead(cloud: Cloud) -> dict[str, Any]:
    """The server on host1 (evacuation.py), whose agent then dies; host2 is free."""
    return server_on_host1(cloud)


def assert_back_on_host1_in_error(cloud: Cloud, dead: dict[str, Any], migration: str) -> None:
    server_id = dead["server"]
    view = server(cloud, server_id)
    assert (view["status"], view["OS-EXT-STS:task_state"]) == ("ERROR", None)
    assert view["OS-EXT-SRV-ATTR:host"] == "host1"
    [mig] = migrations_of(cloud, server_id)
    assert mig["status"] == migration
    assert held(cloud, mig["uuid"]) == {}
    assert held(cloud, server_id) == {dead["host1"]: SMALL}
    assert usages(cloud, dead["host2"]) == EMPTY
    assert ("host2", "") not in guests(cloud, server_id)
    assert_invariants(cloud)


# (driver step that fails on host2, stop the server first?, migration status afterwards)
FAILURES = [
    pytest.param("claim", False, "error", id="claim-refused"),  # no alternate left
    pytest.param("spawn", False, "failed", id="spawn"),
    pytest.param("power_off", True, "failed", id="power-off-of-a-stopped-server"),
]


@pytest.mark.parametrize(("step", "stopped", "status"), FAILURES)
def test_a_failure_on_the_destination_gives_the_source_back(
        cloud: Cloud, dead: dict[str, Any], step: str, stopped: bool, status: str) -> None:
    if stopped:
        action(cloud, dead["server"], {"os-stop": None})
    stop_agent(cloud, "host1")
    cloud.plane.agent("host2").driver.fail(step, times=None)
    evacuate(cloud, dead["server"])
    assert_back_on_host1_in_error(cloud, dead, status)
    fault = server(cloud, dead["server"])["fault"]
    assert f"injected fault in {step} on host2" in fault["message"]


def test_no_valid_host(cloud: Cloud, dead: dict[str, Any]) -> None:
    stop_agent(cloud, "host1")
    stop_agent(cloud, "host2")
    evacuate(cloud, dead["server"])
    assert_back_on_host1_in_error(cloud, dead, "error")
    fault = server(cloud, dead["server"])["fault"]
    assert (fault["code"], fault["message"]) == (
        400, "No valid host was found. There are not enough hosts available.")


def test_a_refused_claim_is_retried_on_an_alternate(cloud: Cloud, dead: dict[str, Any]) -> None:
    host3 = cloud.add_host("host3", vcpus=16, memory_mb=8192, disk_gb=100)
    stop_agent(cloud, "host1")
    cloud.plane.agent("host2").driver.fail("claim")
    evacuate(cloud, dead["server"])
    view = server(cloud, dead["server"])
    assert (view["status"], view["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", "host3")
    [mig] = migrations_of(cloud, dead["server"])
    assert (mig["status"], mig["dest_compute"]) == ("done", "host3")
    assert held(cloud, dead["server"]) == {host3: SMALL}
    assert held(cloud, mig["uuid"]) == {dead["host1"]: SMALL}
    assert usages(cloud, dead["host2"]) == EMPTY
    assert_invariants(cloud)


def test_every_host_refusing_the_claim_ends_in_error(cloud: Cloud, dead: dict[str, Any]) -> None:
    cloud.add_host("host3", vcpus=16, memory_mb=8192, disk_gb=100)
    stop_agent(cloud, "host1")
    for name in ("host2", "host3"):
        cloud.plane.agent(name).driver.fail("claim", times=None)
    evacuate(cloud, dead["server"])
    assert_back_on_host1_in_error(cloud, dead, "error")
    assert "Every host refused the rebuild" in server(cloud, dead["server"])["fault"]["message"]


def test_the_source_back_after_a_failed_evacuation_keeps_its_guest(
        cloud: Cloud, dead: dict[str, Any]) -> None:
    """Only accepted, pre-migrating and done evacuations are cleaned up (Nova's filter)."""
    host1 = stop_agent(cloud, "host1")
    cloud.plane.agent("host2").driver.fail("spawn")
    evacuate(cloud, dead["server"])
    start_agent(cloud, host1)
    assert guests(cloud, dead["server"]) == {("host1", ""): RUNNING}
    assert_back_on_host1_in_error(cloud, dead, "failed")

    # The operator tries again once host1 is down for good: it works this time.
    stop_agent(cloud, "host1")
    action(cloud, dead["server"], {"os-resetState": {"state": "active"}})
    evacuate(cloud, dead["server"])
    assert server(cloud, dead["server"])["OS-EXT-SRV-ATTR:host"] == "host2"
    assert held(cloud, dead["server"]) == {dead["host2"]: SMALL}
    assert_invariants(cloud)
