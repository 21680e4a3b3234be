"""No instance stays in a task state that no operation owns once the conductor restarts.

    host1: vm (small)
"""

from __future__ import annotations

from typing import Any

import pytest

from stowage.compute import instances
from tests.functional.conftest import Cloud
from tests.functional.servers import (
    assert_invariants,
    boot,
    flavor,
    flavor_amounts,
    held,
    image,
    server,
    settle,
)


@pytest.fixture
def vm(cloud: Cloud) -> str:
    cloud.add_host("host1", vcpus=8, memory_mb=4096, disk_gb=100)
    return boot(cloud, "vm", flavor(cloud, "small", 1, 512, 5), image(cloud))


def _left(cloud: Cloud, vm: str, **values: Any) -> None:
    with cloud.live.cell_db.write() as conn:
        instances.update(conn, vm, **values)


def test_a_power_task_no_operation_owns_settles_on_the_guest(cloud: Cloud, vm: str) -> None:
    _left(cloud, vm, task_state="powering-off")
    cloud.plane.conductor.start()
    view = server(cloud, vm)
    assert (view["status"], view["OS-EXT-STS:task_state"]) == ("ACTIVE", None)  # it runs
    assert_invariants(cloud)


def test_a_build_no_operation_owns_is_built(cloud: Cloud, vm: str) -> None:
    """As a multi-create cut between its batches leaves its first servers."""
    cloud.plane.placement.delete_allocations(vm)
    cloud.plane.agent("host1").driver.destroy(vm)
    _left(cloud, vm, vm_state="building", task_state="scheduling", host=None, node=None)
    cloud.plane.conductor.start()
    settle(cloud)
    view = server(cloud, vm)
    assert (view["status"], view["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", "host1")
    assert list(held(cloud, vm).values()) == [flavor_amounts(1, 512, 5)]
    assert_invariants(cloud)
