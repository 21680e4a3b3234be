"""Drain planning and execution over HTTP: plan == execution, reasons, nothing written by a plan.

The world is drawn in `drain_world.py`. The plan comes from
`GET /os-stowage-drain/{host}`; the drain is `execute.DrainRun` over the same
Compute API the command uses.
"""

from __future__ import annotations

import io
from collections import Counter
from typing import Any

import sqlalchemy as sa

from stowage.compute import tables as compute_tables
from stowage.compute.drain.execute import DrainRun
from stowage.compute.drain.progress import Progress
from tests.functional.conftest import Cloud
from tests.functional.drain_world import HOST, ComputeOverHttp, group, varied
from tests.functional.ports import boot as port_boot
from tests.functional.ports import net_host
from tests.functional.servers import (
    assert_invariants,
    boot,
    flavor,
    force_down,
    held,
    host_of,
    image,
    server,
    usages,
)


def plan(cloud: Cloud, host: str, verbose: bool = False) -> dict[str, Any]:
    resp = cloud.compute.get(f"/os-stowage-drain/{host}",
                             params={"verbose": "true"} if verbose else None)
    assert resp.status_code == 200, resp.text
    return dict(resp.json()["drain"])


def by_name(drain: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["name"]: s for s in drain["servers"]}


def world_state(cloud: Cloud) -> dict[str, Any]:
    """Everything a plan must not change: each provider's generation and usages, each
    server's allocations, the journal's rows, the services."""
    providers = cloud.placement.get("/resource_providers").json()["resource_providers"]
    servers = cloud.compute.get("/servers/detail").json()["servers"]
    with cloud.live.cell_db.read() as conn:
        steps = conn.execute(sa.select(sa.func.count()).select_from(
            compute_tables.operation_steps)).scalar_one()
    return {"generations": {p["uuid"]: p["generation"] for p in providers},
            "usages": {p["uuid"]: cloud.placement.get(
                f"/resource_providers/{p['uuid']}/usages").json()["usages"]
                for p in providers},
            "allocations": {s["id"]: held(cloud, s["id"]) for s in servers},
            "servers": {s["id"]: (s["status"], s["OS-EXT-SRV-ATTR:host"]) for s in servers},
            "journal": steps,
            # (not updated_at: heartbeats write it)
            "services": sorted((v["host"], v["binary"], v["status"], v["disabled_reason"],
                                v["forced_down"]) for v in cloud.compute.get(
                "/os-services").json()["services"])}


def drain(cloud: Cloud, host: str, max_parallel: int = 2) -> tuple[dict[str, Any], str]:
    out = io.StringIO()
    outcomes = DrainRun(ComputeOverHttp(cloud.compute), host, Progress(out),
                        max_parallel=max_parallel, poll=0.05).run()
    return outcomes, out.getvalue()


def test_the_plan_keeps_groups_zones_and_planned_claims(cloud: Cloud) -> None:
    ids = varied(cloud)
    before = world_state(cloud)
    planned = plan(cloud, "host1", verbose=True)
    assert world_state(cloud) == before, "a plan changed something"
    servers = by_name(planned)
    assert {n: s["action"] for n, s in servers.items()} == {
        "g1": "live", "g2": "live", "az": "live", "paused": "live", "stopped": "cold"}
    assert planned["totals"] == {"servers": 5, "live": 4, "cold": 1, "skip": 0, "busy": 0,
                                 "unplaceable": 0}
    assert servers["az"]["destination"] == "host3"  # the only other host of zoneA
    members = Counter([servers["g1"]["destination"], servers["g2"]["destination"], "host2"])
    assert max(members.values()) <= 2, members  # g3 is on host2 already
    assert "host4" not in {s["destination"] for s in servers.values()}
    rejected = {(r["host"], r["filter"]) for r in servers["g1"]["rejections"]}
    assert ("host4", "ComputeFilter") in rejected
    # Every host's planned claims fit its room (4 VCPU, 4096 MB, 40 GB at ratio 1).
    for name in ("host2", "host3", "host5"):
        vcpus = sum(a.get("VCPU", 0) for s in servers.values() if s["destination"] == name
                    for a in s["allocations"].values())
        used = cloud.placement.get("/resource_providers", params={"name": name}).json()
        rp = used["resource_providers"][0]["uuid"]
        now = cloud.placement.get(f"/resource_providers/{rp}/usages").json()["usages"]
        assert now.get("VCPU", 0) + vcpus <= HOST["vcpus"]
    assert ids["g3"]


def test_executed_destinations_are_the_planned_ones(cloud: Cloud) -> None:
    ids = varied(cloud)
    planned = by_name(plan(cloud, "host1"))
    outcomes, shown = drain(cloud, "host1")
    assert {o.name: (o.result, o.destination) for o in outcomes.values()} == {
        name: ("moved", s["destination"]) for name, s in planned.items()}
    for name, s in planned.items():
        assert host_of(cloud, ids[name]) == s["destination"]
    assert server(cloud, ids["paused"])["status"] == "PAUSED"
    assert server(cloud, ids["stopped"])["status"] == "SHUTOFF"
    [service] = [s for s in cloud.compute.get("/os-services").json()["services"]
                 if s["host"] == "host1" and s["binary"] == "nova-compute"]
    assert (service["status"], service["disabled_reason"]) == ("disabled", "draining")
    assert plan(cloud, "host1")["servers"] == []
    assert "[5/5] moved" in shown
    assert_invariants(cloud)


def test_a_plan_that_cannot_fit_says_which_filter_stopped_each_server(cloud: Cloud) -> None:
    """host1 (drained): a1, m1, m2; host2 (3 VCPU): a2, room for one medium; host3 down.

    m1 takes host2's last two VCPUs in the plan, so m2 finds no room there
    (ResourceFitFilter: the planned claim, not Placement, says so); a1 may not
    join a2 on host2 (ServerGroupAntiAffinityFilter).
    """
    cloud.add_host("host1", vcpus=16, memory_mb=16384, disk_gb=200)
    small, medium = flavor(cloud, "small", 1, 512, 5), flavor(cloud, "medium", 2, 1024, 10)
    img = image(cloud)
    gid = group(cloud, "anti-affinity")
    a1 = boot(cloud, "a1", small, img, hints={"group": gid})
    boot(cloud, "m1", medium, img)
    boot(cloud, "m2", medium, img)
    cloud.add_host("host2", **{**HOST, "vcpus": 3})
    a2 = boot(cloud, "a2", small, img, hints={"group": gid})
    assert host_of(cloud, a2) == "host2"
    cloud.add_host("host3", **HOST)
    force_down(cloud, "host3")
    servers = by_name(plan(cloud, "host1", verbose=True))
    assert servers["m1"]["destination"] == "host2"
    assert servers["m2"]["action"] == "unplaceable"
    assert "ResourceFitFilter eliminated the last host (host2" in servers["m2"]["reason"]
    assert servers["a1"]["action"] == "unplaceable"
    assert ("ServerGroupAntiAffinityFilter eliminated the last host (host2"
            in servers["a1"]["reason"])
    assert {(r["host"], r["filter"]) for r in servers["a1"]["rejections"]} == {
        ("host1", "IgnoreHostsFilter"), ("host2", "ServerGroupAntiAffinityFilter"),
        ("host3", "ComputeFilter")}
    outcomes, _ = drain(cloud, "host1")
    results = {o.name: (o.result, o.destination) for o in outcomes.values()}
    assert results["m1"] == ("moved", "host2")
    assert results["m2"][0] == results["a1"][0] == "failed"
    assert host_of(cloud, a1) == "host1"
    assert_invariants(cloud)


class TakesTheDestination(ComputeOverHttp):
    """The Compute API, except that just before the first move starts, someone else's
    allocation fills the host it was planned to (a consumer Placement alone knows)."""

    def __init__(self, cloud: Cloud) -> None:
        super().__init__(cloud.compute)
        self.cloud = cloud
        self.taken: str | None = None

    def __call__(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        if self.taken is None and method == "POST" and body and "os-migrateLive" in body:
            self.taken = body["os-migrateLive"]["host"]
            rp = self.cloud.placement.get("/resource_providers",
                                          params={"name": self.taken}).json()
            uuid = rp["resource_providers"][0]["uuid"]
            room = {rc: HOST[key] - n for rc, key, n in (
                ("VCPU", "vcpus", usages(self.cloud, uuid).get("VCPU", 0)),)}
            resp = self.cloud.placement.put(f"/allocations/{OTHER}", json={
                "allocations": {uuid: {"resources": room}}, "project_id": "p",
                "user_id": "u", "consumer_generation": None, "consumer_type": "INSTANCE"})
            assert resp.status_code == 204, resp.text
        return super().__call__(method, path, body)


OTHER = "00000000-0000-4000-8000-0000000000aa"


def test_a_move_whose_destination_was_taken_is_planned_again(cloud: Cloud) -> None:
    cloud.add_host("host1", vcpus=16, memory_mb=16384, disk_gb=200)
    server_id = boot(cloud, "vm", flavor(cloud, "small", 1, 512, 5), image(cloud))
    for name in ("host2", "host3"):
        cloud.add_host(name, **HOST)
    first = by_name(plan(cloud, "host1"))["vm"]["destination"]
    api = TakesTheDestination(cloud)
    out = io.StringIO()
    outcomes = DrainRun(api, "host1", Progress(out), poll=0.05).run()
    [outcome] = outcomes.values()
    assert api.taken == first
    assert (outcome.result, outcome.attempts) == ("moved", 2), out.getvalue()
    assert outcome.destination != first and host_of(cloud, server_id) == outcome.destination
    assert "vm did not move (No valid host was found" in out.getvalue(), out.getvalue()
    assert "planning it again" in out.getvalue()
    assert cloud.placement.delete(f"/allocations/{OTHER}").status_code == 204
    assert_invariants(cloud)


def test_ports_bandwidth_is_planned_claim_by_claim(cloud: Cloud, nets: Any) -> None:
    """host1 (drained): p1, p2, each with a QoS port (1000 kbps out, 2000 in);
    host2 and host3: a bridge with room for one such port each (2500 kbps each way).

    Placement alone has room for both ports on host2 (the name breaks the tie), the
    plan does not: the second port's bandwidth goes to host3, and so does the move.
    """
    net_host(cloud, "host1", bw=100_000)
    small, img = flavor(cloud, "small", 1, 512, 5), image(cloud)
    ports = {name: nets.qos_port(name) for name in ("p1", "p2")}
    ids = {name: port_boot(cloud, name, small, img, [{"port": ports[name]}])
           for name in ("p1", "p2")}
    bridges = {name: net_host(cloud, name, bw=2500).bridge for name in ("host2", "host3")}
    servers = by_name(plan(cloud, "host1", verbose=True))
    planned = {name: servers[name]["destination"] for name in ("p1", "p2")}
    assert planned == {"p1": "host2", "p2": "host3"}
    [(why)] = [r["reason"] for r in servers["p2"]["rejections"]
               if (r["host"], r["filter"]) == ("host2", "ResourceFitFilter")]
    assert "NET_BW_" in why, why
    for name, host in planned.items():
        assert bridges[host] in servers[name]["allocations"]
    outcomes, _ = drain(cloud, "host1")
    assert {o.name: o.destination for o in outcomes.values()} == planned
    for name, host in planned.items():
        nets.assert_bound(ports[name], ids[name], host, bridges[host])
    assert_invariants(cloud)
