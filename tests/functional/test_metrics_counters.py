"""The counters and histograms of `GET /metrics` move with real operations.

    h1 (then h2)      server group "apart" (anti-affinity)
    s1 in "apart"     boots on h1                      build started, one claim
    s2 in "apart"     no host: h1 holds s1             NoValidHost by the group's filter
    PUT /allocations/{new} at generation 5             a 409 on Placement's route
    s1 resized to h2, confirmed                        resize, confirm_resize succeeded

Labels name route templates, never a uuid.
"""

from __future__ import annotations

import re
import uuid as uuidlib

from stowage.compute.agent.faults import FaultSpec
from tests.functional.conftest import Cloud
from tests.functional.metrics_scrape import delta, scrape, series
from tests.functional.servers import action, boot, flavor, image, server

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-")
OPS = "stowage_conductor_operations"


def test_operations_claims_and_refusals_are_counted(cloud: Cloud) -> None:
    before = scrape(cloud.compute, "../../metrics")
    cloud.add_host("h1")
    small, big, img = flavor(cloud, "small", 1, 512, 10), flavor(cloud, "big", 2, 1024, 10), \
        image(cloud)
    resp = cloud.compute.post("/os-server-groups", json={"server_group": {
        "name": "apart", "policy": "anti-affinity"}})
    group = resp.json()["server_group"]["id"]
    s1 = boot(cloud, "s1", small, img, hints={"group": group})
    s2 = boot(cloud, "s2", small, img, hints={"group": group})
    assert server(cloud, s2)["status"] == "ERROR"
    resp = cloud.placement.put(f"/allocations/{uuidlib.uuid4()}", json={
        "allocations": {}, "project_id": "p", "user_id": "u", "consumer_generation": 5,
        "consumer_type": "INSTANCE"})
    assert resp.status_code == 409, resp.text
    cloud.add_host("h2")
    action(cloud, s1, {"resize": {"flavorRef": big}})
    assert server(cloud, s1)["status"] == "VERIFY_RESIZE"
    action(cloud, s1, {"confirmResize": None}, status=204)
    after = scrape(cloud.compute, "../../metrics")

    assert delta(before, after, "stowage_scheduler_no_valid_host_total",
                 filter="ServerGroupAntiAffinityFilter") == 1
    assert delta(before, after, "stowage_scheduler_claims_total", result="claimed") == 2
    assert delta(before, after, f"{OPS}_started_total", operation="build") == 2
    for op in ("resize", "confirm_resize"):
        assert delta(before, after, f"{OPS}_started_total", operation=op) == 1
        assert delta(before, after, f"{OPS}_finished_total", operation=op,
                     outcome="succeeded") == 1
        assert delta(before, after, "stowage_conductor_operation_duration_seconds_count",
                     operation=op, outcome="succeeded") == 1
    assert delta(before, after, "stowage_http_requests_total", service="placement",
                 route="/allocations/{consumer_uuid}", method="PUT", status="409") == 1
    assert delta(before, after, "stowage_http_requests_total", service="compute",
                 route="/v2.1/servers/{server_id}/action", method="POST", status="202") == 1
    # Two builds and a resize asked Placement for candidates (in-process).
    assert delta(before, after,
                 "stowage_placement_allocation_candidates_duration_seconds_count") == 3
    for labels in series(after, "stowage_http_requests_total"):
        assert not UUID.search(dict(labels)["route"]), labels


def test_a_failed_step_counts_a_rolled_back_operation(cloud: Cloud) -> None:
    """A resize whose destination fails `finish_migration` is undone: rolled_back."""
    cloud.add_host("h1")
    small, big, img = flavor(cloud, "small", 1, 512, 10), flavor(cloud, "big", 2, 1024, 10), \
        image(cloud)
    s1 = boot(cloud, "s1", small, img)
    cloud.add_host("h2", faults=(FaultSpec("finish_migration"),))
    before = scrape(cloud.compute, "../../metrics")
    action(cloud, s1, {"resize": {"flavorRef": big}})
    after = scrape(cloud.compute, "../../metrics")
    assert delta(before, after, f"{OPS}_finished_total", operation="resize",
                 outcome="rolled_back") == 1
    assert delta(before, after, f"{OPS}_finished_total", operation="resize",
                 outcome="succeeded") == 0
