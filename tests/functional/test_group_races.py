"""Server group policies hold when members are booted or moved at the same time.

    h1   h2   h3        simulated hosts, 8 VCPU / 8192 MB / 80 GB each
                        (the affinity test uses hosts that fit one server each)

The scheduler filters on a snapshot, so members scheduled together all see
the others without a host. The compute agent re-checks the policy where the
claim becomes real (Nova's late check) and the conductor reschedules to an
alternate; what cannot be placed ends in ERROR (a build) or back where it
was (a move). Whatever happens, the final placement obeys the policy and
the accounting audit is clean.

The requests are fired from threads at once against the live server. Tests
that need the race to happen every time also make the scheduler calls meet
(`meet_in_scheduler`): each waits until all have arrived, so every one reads
the group before any member has a host, as unlucky timing would have it.
"""

from __future__ import annotations

import contextlib
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from stowage.compute import instances, server_groups, states
from stowage.compute.scheduler import manager as scheduler_manager
from stowage.compute.server_groups import AFFINITY_VIOLATED, ANTI_AFFINITY_VIOLATED
from stowage.messaging import RemoteError
from tests.functional import servers as sv
from tests.functional.conftest import Cloud

HOST = {"vcpus": 8, "memory_mb": 8192, "disk_gb": 80}


@pytest.fixture
def three(cloud: Cloud) -> dict[str, str]:
    """h1, h2, h3 and the flavor and image every server uses."""
    for name in ("h1", "h2", "h3"):
        cloud.add_host(name, **HOST)
    return {"flavor": sv.flavor(cloud, "one", 1, 512, 5), "image": sv.image(cloud)}


def group(cloud: Cloud, policy: str, rules: dict[str, Any] | None = None) -> str:
    body: dict[str, Any] = {"name": policy, "policy": policy}
    if rules:
        body["rules"] = rules
    resp = cloud.compute.post("/os-server-groups", json={"server_group": body})
    assert resp.status_code == 200, resp.text
    return str(resp.json()["server_group"]["id"])


def meet_in_scheduler(cloud: Cloud, monkeypatch: pytest.MonkeyPatch, parties: int) -> None:
    """Hold each scheduler call, right after it read the group, until `parties` have read it.

    Meeting before the read is not enough: a call released a little later
    could already see the first member's host and fail in the scheduler
    instead of racing on to the late check. (10 s at most.)
    """
    barrier = threading.Barrier(parties, timeout=10)
    real = scheduler_manager._group_state

    def group_state(*args: Any) -> Any:
        state = real(*args)
        # Fewer calls than expected break the barrier: go on rather than fail the request.
        with contextlib.suppress(threading.BrokenBarrierError):
            barrier.wait()
        return state

    monkeypatch.setattr(scheduler_manager, "_group_state", group_state)


def at_once(cloud: Cloud, requests: list[Callable[[httpx.Client], httpx.Response]]
            ) -> list[httpx.Response]:
    """Send the requests from one thread each, released together; then settle."""
    start = threading.Barrier(len(requests), timeout=10)

    def send(request: Callable[[httpx.Client], httpx.Response]) -> httpx.Response:
        with cloud.client("admin") as client:
            start.wait()
            return request(client)

    with ThreadPoolExecutor(len(requests)) as pool:
        answers = list(pool.map(send, requests))
    sv.settle(cloud)
    return answers


def boot_request(three: dict[str, str], name: str, group_id: str
                 ) -> Callable[[httpx.Client], httpx.Response]:
    body = {"server": {"name": name, "flavorRef": three["flavor"], "imageRef": three["image"],
                       "networks": "none"},
            "os:scheduler_hints": {"group": group_id}}
    return lambda client: client.post("/servers", json=body)


def boot_at_once(cloud: Cloud, three: dict[str, str], group_id: str, count: int) -> list[str]:
    answers = at_once(cloud, [boot_request(three, f"vm{i}", group_id) for i in range(count)])
    assert [a.status_code for a in answers] == [202] * count, [a.text for a in answers]
    return [str(a.json()["server"]["id"]) for a in answers]


def placed(cloud: Cloud, ids: list[str]) -> dict[str, tuple[str, str | None]]:
    """server id -> (status, host) once everything settled."""
    found = {}
    for server_id in ids:
        shown = sv.server(cloud, server_id)
        found[server_id] = (shown["status"], shown.get("OS-EXT-SRV-ATTR:host"))
    return found


def hosts_of_active(where: dict[str, tuple[str, str | None]]) -> Counter[str]:
    assert {status for status, _ in where.values()} <= {"ACTIVE", "ERROR", "VERIFY_RESIZE"}
    return Counter(host for status, host in where.values()
                   if status in ("ACTIVE", "VERIFY_RESIZE") and host)


def violations(cloud: Cloud, server_id: str, event: str, reason: str) -> int:
    """How many times `event` of the server's actions failed with `reason` (admin view)."""
    count = 0
    listed = cloud.compute.get(f"/servers/{server_id}/os-instance-actions").json()
    for action in listed["instanceActions"]:
        shown = cloud.compute.get(
            f"/servers/{server_id}/os-instance-actions/{action['request_id']}").json()
        count += sum(1 for e in shown["instanceAction"]["events"]
                     if e["event"] == event and e["result"] == "Error"
                     and e["traceback"] == reason)
    return count


def assert_error_holds_nothing(cloud: Cloud, where: dict[str, tuple[str, str | None]]) -> None:
    for server_id, (status, host) in where.items():
        if status == "ERROR":
            assert host is None and sv.held(cloud, server_id) == {}
            fault = sv.server(cloud, server_id)["fault"]
            # Refused by the late check on every host it tried; or, when another
            # member's retry took the last free host before this one's first
            # schedule had claimed (threads run at the machine's pace), refused by
            # the scheduler itself.
            assert fault["message"].startswith(("Exceeded maximum number of retries",
                                                "No valid host was found"))


# --- the late check itself ------------------------------------------------------------

GPU_FLAVOR = {"id": 1, "flavorid": "1", "name": "g1", "vcpus": 1, "memory_mb": 512,
              "root_gb": 5, "ephemeral_gb": 0, "swap": 0,
              "extra_specs": {"pci_passthrough:alias": "gpu:1"}}


def spawning_member(cloud: Cloud, group_id: str) -> str:
    """A member as the conductor hands it to an agent: spawning, no host yet."""
    uuid = sv.new_uuid()
    with cloud.live.cell_db.write() as conn:
        instances.create(conn, instances.Instance(
            uuid=uuid, project_id="admin", user_id="admin", display_name=uuid[:8],
            flavor=GPU_FLAVOR, vm_state=states.BUILDING, task_state=states.TASK.SPAWNING,
            reservation_id="r-1"))
    with cloud.live.db.write() as conn:
        server_groups.add_member(conn, group_id, uuid)
    return uuid


@pytest.mark.parametrize(("policy", "second_host", "reason"), [
    ("anti-affinity", "h1", ANTI_AFFINITY_VIOLATED),
    ("affinity", "h2", AFFINITY_VIOLATED),
])
def test_the_agent_refuses_a_member_the_policy_forbids_and_leaves_no_trace(
        cloud: Cloud, policy: str, second_host: str, reason: str) -> None:
    for name in ("h1", "h2"):
        cloud.add_host(name, pci={"gpu": 2}, **HOST)
    gid = group(cloud, policy)
    first, second = spawning_member(cloud, gid), spawning_member(cloud, gid)
    cloud.plane.agent("h1").build_and_run_instance(first, GPU_FLAVOR)
    agent = cloud.plane.agent(second_host)
    with pytest.raises(server_groups.PolicyViolated, match=reason):
        agent.build_and_run_instance(second, GPU_FLAVOR)
    assert second not in agent.driver.list_instances()
    assert agent.pci.stats()["gpu"]["free"] == (2 if second_host == "h2" else 1)
    with cloud.live.cell_db.read() as conn:
        assert instances.get(conn, first).host == "h1"
        assert instances.get(conn, second).host is None
    # Over the RPC seam the conductor sees Nova's reason, and reschedules on it.
    with pytest.raises(RemoteError) as refused:
        cloud.plane.transport.call(f"compute.{second_host}", "build_and_run_instance",
                                   instance_uuid=second, flavor=GPU_FLAVOR)
    assert refused.value.message == reason


# --- builds -------------------------------------------------------------------------


def test_concurrent_boots_into_anti_affinity_spread_over_hosts(
        cloud: Cloud, three: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """All three pick h1 (pack weigher, group read before any member had a host);
    one keeps it, the late check sends the others to their alternates."""
    cloud.configure(weigher="pack")
    meet_in_scheduler(cloud, monkeypatch, 3)
    gid = group(cloud, "anti-affinity")
    ids = boot_at_once(cloud, three, gid, 3)

    where = placed(cloud, ids)
    assert sorted(where.values()) == [("ACTIVE", "h1"), ("ACTIVE", "h2"), ("ACTIVE", "h3")]
    refused = sum(violations(cloud, i, "compute__do_build_and_run_instance",
                             ANTI_AFFINITY_VIOLATED) for i in ids)
    assert refused >= 2
    members = cloud.compute.get(f"/os-server-groups/{gid}").json()["server_group"]["members"]
    assert sorted(members) == sorted(ids)
    sv.assert_invariants(cloud)


def test_concurrent_boots_respect_max_server_per_host(
        cloud: Cloud, monkeypatch: pytest.MonkeyPatch) -> None:
    """Five members, two hosts, two per host at most: four run, one cannot be placed."""
    for name in ("h1", "h2"):
        cloud.add_host(name, **HOST)
    three = {"flavor": sv.flavor(cloud, "one", 1, 512, 5), "image": sv.image(cloud)}
    cloud.configure(weigher="pack")
    meet_in_scheduler(cloud, monkeypatch, 5)
    gid = group(cloud, "anti-affinity", {"max_server_per_host": 2})
    ids = boot_at_once(cloud, three, gid, 5)

    where = placed(cloud, ids)
    assert hosts_of_active(where) == {"h1": 2, "h2": 2}
    assert [s for s, _ in where.values()].count("ERROR") == 1
    assert_error_holds_nothing(cloud, where)
    sv.assert_invariants(cloud)


def test_concurrent_boots_into_affinity_share_one_host(
        cloud: Cloud, monkeypatch: pytest.MonkeyPatch) -> None:
    """Hosts that fit one server each make every member claim a different host:
    the first to claim keeps it, the others cannot join it and end in ERROR."""
    for name in ("h1", "h2", "h3"):
        cloud.add_host(name, vcpus=1, cpu_allocation_ratio=1.0, memory_mb=1024, disk_gb=10)
    three = {"flavor": sv.flavor(cloud, "one", 1, 512, 5), "image": sv.image(cloud)}
    meet_in_scheduler(cloud, monkeypatch, 3)
    gid = group(cloud, "affinity")
    ids = boot_at_once(cloud, three, gid, 3)

    where = placed(cloud, ids)
    assert sum(hosts_of_active(where).values()) == 1
    assert [s for s, _ in where.values()].count("ERROR") == 2
    assert_error_holds_nothing(cloud, where)
    refused = sum(violations(cloud, i, "compute__do_build_and_run_instance",
                             AFFINITY_VIOLATED) for i in ids)
    assert refused >= 2
    sv.assert_invariants(cloud)


@pytest.mark.parametrize(("policy", "rules", "most_per_host", "hosts_at_most"), [
    ("anti-affinity", None, 1, 3),
    ("anti-affinity", {"max_server_per_host": 2}, 2, 3),
    ("affinity", None, 4, 1),
])
def test_genuinely_concurrent_boots_obey_the_policy(
        cloud: Cloud, three: dict[str, str], policy: str, rules: dict[str, Any] | None,
        most_per_host: int, hosts_at_most: int) -> None:
    """No rendezvous: whatever the timing, the policy holds or the extra servers fail."""
    gid = group(cloud, policy, rules)
    ids = boot_at_once(cloud, three, gid, 4)
    where = placed(cloud, ids)
    per_host = hosts_of_active(where)
    assert per_host and max(per_host.values()) <= most_per_host
    assert len(per_host) <= hosts_at_most
    assert_error_holds_nothing(cloud, where)
    sv.assert_invariants(cloud)


# --- moves --------------------------------------------------------------------------


@pytest.fixture
def members(cloud: Cloud, three: dict[str, str]) -> Iterator[dict[str, str]]:
    """An anti-affinity group with a member on h1 and one on h2; h3 is free."""
    gid = group(cloud, "anti-affinity")
    a = sv.boot(cloud, "a", three["flavor"], three["image"], hints={"group": gid})
    b = sv.boot(cloud, "b", three["flavor"], three["image"], hints={"group": gid})
    assert (sv.host_of(cloud, a), sv.host_of(cloud, b)) == ("h1", "h2")
    yield {"a": a, "b": b, "group": gid}


def migrate_request(server_id: str, body: dict[str, Any] | None = None
                    ) -> Callable[[httpx.Client], httpx.Response]:
    return lambda client: client.post(f"/servers/{server_id}/action",
                                      json={"migrate": body})


def test_two_members_migrated_at_once_do_not_share_a_destination(
        cloud: Cloud, members: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """h3 is the only host either may go to: one gets it, the other stays where it was."""
    meet_in_scheduler(cloud, monkeypatch, 2)
    a, b = members["a"], members["b"]
    answers = at_once(cloud, [migrate_request(a), migrate_request(b)])
    assert [r.status_code for r in answers] == [202, 202]

    where = placed(cloud, [a, b])
    assert sorted(where.values()) in (
        [("ACTIVE", "h2"), ("VERIFY_RESIZE", "h3")], [("ACTIVE", "h1"), ("VERIFY_RESIZE", "h3")])
    [stayed] = [i for i, (status, _) in where.items() if status == "ACTIVE"]
    assert violations(cloud, stayed, "compute_prep_resize", ANTI_AFFINITY_VIOLATED) == 1
    [migration] = sv.migrations_of(cloud, stayed)
    assert migration["status"] == "error"
    actions = cloud.compute.get(f"/servers/{stayed}/os-instance-actions").json()
    assert [(a["action"], a["message"]) for a in actions["instanceActions"]] == [
        ("migrate", "Error"), ("create", None)]
    sv.assert_invariants(cloud)


def test_migrations_into_a_full_host_respect_max_server_per_host(
        cloud: Cloud, three: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Two per host at most, h3 already runs one: of two members sent to h3, one arrives."""
    gid = group(cloud, "anti-affinity", {"max_server_per_host": 2})
    ids = [sv.boot(cloud, name, three["flavor"], three["image"], hints={"group": gid})
           for name in ("a", "b", "c")]
    assert [sv.host_of(cloud, i) for i in ids] == ["h1", "h2", "h3"]
    meet_in_scheduler(cloud, monkeypatch, 2)
    to_h3 = {"host": "h3"}
    answers = at_once(cloud, [migrate_request(ids[0], to_h3), migrate_request(ids[1], to_h3)])
    assert [r.status_code for r in answers] == [202, 202]

    where = placed(cloud, ids)
    assert hosts_of_active(where)["h3"] == 2
    assert sorted(status for status, _ in where.values()) == [
        "ACTIVE", "ACTIVE", "VERIFY_RESIZE"]
    sv.assert_invariants(cloud)
