"""NoValidHost is counted wherever the scheduler gives up, each with the reason it had.

    a group that no longer exists            filter="ServerGroupNotFound"
    a destination host no node is on         filter="DestinationNotFound"
    a project without the required aggregate filter="TenantAggregateRequired"
    no candidate from Placement at all       filter="Placement"
    a request of several instances           counted once (the first refused stops it)
    a drain's dry run (preview) that cannot place: not a refusal, not counted
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from stowage.compute.scheduler import NoValidHost
from tests.functional.conftest import Cloud
from tests.functional.metrics_scrape import delta, scrape
from tests.functional.servers import new_uuid
from tests.functional.test_scheduler import spec

NAME = "stowage_scheduler_no_valid_host_total"


def refused(cloud: Cloud, count: int = 1, **changes: Any) -> Callable[[], None]:
    uuids = [new_uuid() for _ in range(count)]

    def run() -> None:
        with pytest.raises(NoValidHost):
            cloud.plane.scheduler.select_destinations(spec(uuids[0], **changes), uuids)
    return run


def counted(cloud: Cloud, run: Callable[[], None]) -> dict[str, float]:
    before = scrape(cloud.compute, "../../metrics")
    run()
    after = scrape(cloud.compute, "../../metrics")
    reasons = ("ServerGroupNotFound", "DestinationNotFound", "TenantAggregateRequired",
               "Placement")
    return {r: delta(before, after, NAME, filter=r) for r in reasons
            if delta(before, after, NAME, filter=r)}


def test_each_early_exit_is_counted_with_its_reason(cloud: Cloud) -> None:
    cloud.add_host("host1", vcpus=4, memory_mb=8192, disk_gb=100)
    assert counted(cloud, refused(cloud, instance_group=new_uuid())) == {
        "ServerGroupNotFound": 1}
    assert counted(cloud, refused(cloud, requested_destination={"host": "nowhere"})) == {
        "DestinationNotFound": 1}
    big = {"id": 2, "flavorid": "2", "name": "big", "vcpus": 64, "memory_mb": 2048,
           "root_gb": 10, "ephemeral_gb": 0, "swap": 0, "extra_specs": {}}
    assert counted(cloud, refused(cloud, 2, flavor=big)) == {"Placement": 1}
    cloud.configure(limit_tenants_to_placement_aggregate=True,
                    placement_aggregate_required_for_tenants=True)
    assert counted(cloud, refused(cloud, 3)) == {"TenantAggregateRequired": 1}


def test_a_preview_that_cannot_place_is_not_counted(cloud: Cloud) -> None:
    cloud.add_host("host1", vcpus=4, memory_mb=8192, disk_gb=100)

    def preview() -> None:
        with pytest.raises(NoValidHost):
            cloud.plane.scheduler.preview(spec(new_uuid(), instance_group=new_uuid()),
                                          new_uuid())
    assert counted(cloud, preview) == {}
