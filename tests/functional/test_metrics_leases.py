"""An operation whose lease another conductor took is counted as it ends, not left open.

    conductor A runs a resize, held at prep_resize; its renewals stop (A "dies")
    conductor B takes the expired lease over: the resize is undone     recovered
    A wakes up, finds its lease gone and stops                          lease_lost

Without the `lease_lost` outcome A's run would count as started and never finished,
and `started - finished` (operations in flight) would drift up by one for each.
"""

from __future__ import annotations

import time

from tests.functional.metrics_scrape import delta, scrape
from tests.functional.servers import settle
from tests.functional.test_conductor_leases import LEASE, Peers, peers  # noqa: F401

FINISHED = "stowage_conductor_operations_finished_total"


def test_a_conductor_that_lost_its_lease_counts_its_run_as_ended(
        peers: Peers) -> None:  # noqa: F811 - the fixture imported above
    cloud = peers.cloud
    before = scrape(cloud.compute, "../../metrics")
    peers.resize_held()
    peers.a.leases.stop()
    time.sleep(LEASE + 0.3)
    peers.b.take_over_expired()
    taken = scrape(cloud.compute, "../../metrics")
    assert delta(before, taken, "stowage_conductor_operations_recovered_total",
                 operation="resize") == 1
    assert delta(before, taken, FINISHED, operation="resize", outcome="lease_lost") == 0

    peers.hold.go.set()  # A wakes up: its next journal write finds the lease taken
    settle(cloud)
    after = scrape(cloud.compute, "../../metrics")
    assert delta(before, after, "stowage_conductor_operations_started_total",
                 operation="resize") == 1
    assert delta(before, after, FINISHED, operation="resize", outcome="lease_lost") == 1
    for outcome in ("succeeded", "rolled_back", "failed"):
        assert delta(before, after, FINISHED, operation="resize", outcome=outcome) == 0
    assert delta(before, after, "stowage_conductor_operation_duration_seconds_count",
                 operation="resize", outcome="lease_lost") == 1
