"""The drain plan's overlay: planned claims consumed in the next decision's host states,
planned group members moved from their source to their planned host; and the progress
output on a terminal and off one."""

from __future__ import annotations

import io
from collections import Counter

from stowage.compute.drain.overlay import Overlay
from stowage.compute.drain.progress import Progress
from stowage.compute.scheduler.filters import ResourceFitFilter, run_filters
from stowage.compute.scheduler.request import GroupState
from tests.unit.scheduler_builders import Host, by_name, host_states, request

# The flavor of scheduler_builders: 2 VCPU, 2048 MB, 20 GB.
ROOMY = Host("roomy", vcpus=16, memory_mb=32768, disk_gb=1000)
LAST_SLOT = Host("last", vcpus=2, memory_mb=2048, disk_gb=20)


def test_a_planned_claim_fills_the_last_slot_for_the_next_server() -> None:
    overlay = Overlay()
    first = request()
    states = host_states([ROOMY, LAST_SLOT], first)
    overlay.apply(first, states)
    last = by_name(states, "last")
    ar = last.fitting_request()
    assert ar is not None
    overlay.add("server-1", "drained", last, ar, first)

    second = request(["22222222-2222-2222-2222-222222222222"])
    fresh = host_states([ROOMY, LAST_SLOT], second)  # Placement alone: both fit
    assert all(h.fitting_request() is not None for h in fresh)
    overlay.apply(second, fresh)
    rejections: list = []
    passed = run_filters(fresh, second, rejections, (ResourceFitFilter(),))
    assert [h.host for h in passed] == ["roomy"]
    assert [(r.host, r.filter) for r in rejections] == [("last", "ResourceFitFilter")]
    assert by_name(fresh, "roomy").free("VCPU") == 16  # only the last host was claimed


def test_planned_group_members_count_on_their_planned_host_not_the_source() -> None:
    overlay = Overlay()
    req = request(instance_group="g1")
    req.group = GroupState("g1", "anti-affinity", 1, Counter({"drained": 2}))
    states = host_states([ROOMY], req)
    ar = states[0].fitting_request()
    assert ar is not None
    overlay.add("member-1", "drained", states[0], ar, req)

    nxt = request(["33333333-3333-3333-3333-333333333333"], instance_group="g1")
    nxt.group = GroupState("g1", "anti-affinity", 1, Counter({"drained": 2}))
    overlay.apply(nxt, host_states([ROOMY], nxt))
    assert dict(nxt.group.per_host) == {"drained": 1, "roomy": 1}


def test_progress_draws_a_bar_on_a_terminal_and_lines_elsewhere() -> None:
    tty, plain = io.StringIO(), io.StringIO()
    for out, is_tty in ((tty, True), (plain, False)):
        progress = Progress(out, tty=is_tty)
        progress.start(2)
        progress.note("live migration of a to host2")
        progress.settled("moved", "moved a -> host2")
        progress.settled("failed", "failed b: No valid host")
        progress.finish()
    assert plain.getvalue().splitlines() == [
        "live migration of a to host2", "[1/2] moved a -> host2",
        "[2/2] failed b: No valid host"]
    drawn = tty.getvalue()
    assert "\r" in drawn and drawn.endswith("\n")
    assert f"[{'#' * 30}] 2/2 moved 1 failed 1 skipped 0" in drawn
