"""Cross-cell resize and cold migration (compute/conductor/cross_cell.py).

host1 is cell1's only host and host2 cell2's, so a move of a server on host1
can only go to cell2 (same-host resize is off). The policy
`compute:servers:resize:cross_cell` is opened to admins for this module (its
default, "!", keeps moves in their cell: test_cells_multi.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from stowage.compute import cell_copy, migrations
from stowage.compute import cells as cell_records
from stowage.compute import tables as t
from stowage.config import PolicySettings
from tests.conftest import BACKENDS
from tests.functional import ports
from tests.functional.conftest import Cloud, LiveServer
from tests.functional.servers import (
    EMPTY,
    action,
    assert_invariants,
    boot,
    count_rows,
    flavor,
    flavor_amounts,
    flavor_id,
    guests,
    held,
    image,
    migrations_of,
    server,
    settle,
    usages,
)
from tests.functional.two_cells import boot_on, cells_of, holders, serving_two_cells

SMALL = flavor_amounts(1, 512, 5)
LARGE = flavor_amounts(2, 1024, 10)
CROSS_CELL = {"compute:servers:resize:cross_cell": "rule:context_is_admin"}


@pytest.fixture(scope="module", params=BACKENDS)
def live_stowage(request: pytest.FixtureRequest) -> Iterator[LiveServer]:
    with serving_two_cells(request.param, policy=PolicySettings(overrides=CROSS_CELL)) as live:
        yield live


@pytest.fixture
def world(cloud: Cloud) -> dict[str, str]:
    nodes = {"host1": cloud.add_host("host1", vcpus=8, memory_mb=4096, disk_gb=50),
             "host2": cloud.add_host("host2", vcpus=8, memory_mb=4096, disk_gb=50,
                                     cell="cell2")}
    flavor(cloud, "small", 1, 512, 5)
    flavor(cloud, "large", 2, 1024, 10)
    nodes["server"] = boot_on(cloud, "host1")
    return nodes


def _move(cloud: Cloud, server_id: str, kind: str) -> dict[str, Any]:
    body: dict[str, Any] = ({"resize": {"flavorRef": flavor_id(cloud, "large")}}
                            if kind == "resize" else {"migrate": None})
    action(cloud, server_id, body)
    return migrations_of(cloud, server_id)[0]


def _in(cloud: Cloud, server_id: str, cell: str) -> None:
    """Only `cell` holds the server, and its mapping names it."""
    assert holders(cells_of(cloud), server_id) == [cell]
    assert cells_of(cloud).of_instance(server_id).name == cell


@pytest.mark.parametrize("kind", ["resize", "migrate"])
def test_a_move_to_another_cell_then_confirm(cloud: Cloud, world: dict[str, str],
                                             kind: str) -> None:
    server_id = world["server"]
    new = LARGE if kind == "resize" else SMALL
    mig = _move(cloud, server_id, kind)
    view = server(cloud, server_id)
    assert (view["status"], view["OS-EXT-SRV-ATTR:host"]) == ("VERIFY_RESIZE", "host2")
    # The source's copy waits hidden; the migration owns the source, the instance the dest.
    assert holders(cells_of(cloud), server_id) == ["cell1 (hidden)", "cell2"]
    assert cells_of(cloud).of_instance(server_id).name == "cell2"
    assert (mig["status"], mig["dest_compute"]) == ("finished", "host2")
    with cells_of(cloud).database(cells_of(cloud).by_name("cell2")).read() as conn:
        assert migrations.get(conn, mig["uuid"]).cross_cell_move
    assert held(cloud, mig["uuid"]) == {world["host1"]: SMALL}
    assert held(cloud, server_id) == {world["host2"]: new}
    assert [s["id"] for s in cloud.compute.get("/servers").json()["servers"]] == [server_id]
    actions = cloud.compute.get(f"/servers/{server_id}/os-instance-actions").json()
    assert [a["action"] for a in actions["instanceActions"]] == [kind, "create"]
    assert_invariants(cloud)
    action(cloud, server_id, {"confirmResize": None}, status=204)
    assert server(cloud, server_id)["status"] == "ACTIVE"
    _in(cloud, server_id, "cell2")
    assert held(cloud, mig["uuid"]) == {}
    assert held(cloud, server_id) == {world["host2"]: new}
    assert usages(cloud, world["host1"]) == EMPTY
    assert_invariants(cloud)


@pytest.mark.parametrize("kind", ["resize", "migrate"])
def test_a_move_to_another_cell_then_revert(cloud: Cloud, world: dict[str, str],
                                            kind: str) -> None:
    server_id = world["server"]
    mig = _move(cloud, server_id, kind)
    assert server(cloud, server_id)["status"] == "VERIFY_RESIZE"
    action(cloud, server_id, {"revertResize": None})
    view = server(cloud, server_id)
    assert (view["status"], view["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", "host1")
    assert view["flavor"]["vcpus"] == 1
    _in(cloud, server_id, "cell1")
    assert migrations_of(cloud, server_id)[0]["status"] == "reverted"
    assert held(cloud, mig["uuid"]) == {}
    assert held(cloud, server_id) == {world["host1"]: SMALL}
    assert usages(cloud, world["host2"]) == EMPTY
    actions = cloud.compute.get(f"/servers/{server_id}/os-instance-actions").json()
    assert [a["action"] for a in actions["instanceActions"]] == ["revertResize", kind,
                                                                 "create"]
    assert_invariants(cloud)


def test_the_source_cell_shows_the_moves_progress(
        cloud: Cloud, world: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """While cell2 runs the move the user sees the server in cell1: its task and its
    migration (with the destination) follow, so events reach both hosts."""
    server_id = world["server"]
    seen: list[tuple[str, str, str | None]] = []
    delivered: list[str] = []
    agent = cloud.plane.agent("host2")
    original = agent.finish_resize

    def finish_resize(**kwargs: Any) -> None:
        view = server(cloud, server_id)
        [mig] = migrations_of(cloud, server_id)
        seen.append((view["OS-EXT-STS:task_state"], mig["status"], mig["dest_compute"]))
        resp = cloud.compute.post("/os-server-external-events", json={"events": [
            {"name": "network-vif-plugged", "server_uuid": server_id, "tag": "p1"}]})
        assert resp.status_code == 200, resp.text
        original(**kwargs)
    for host in ("host1", "host2"):
        monkeypatch.setattr(cloud.plane.agent(host), "external_instance_events",
                            lambda host=host, **kwargs: delivered.append(host))
    monkeypatch.setattr(agent, "finish_resize", finish_resize)
    _move(cloud, server_id, "resize")
    assert seen == [("resize_finish", "post-migrating", "host2")]
    assert sorted(delivered) == ["host1", "host2"]  # both hosts of the move heard it
    assert server(cloud, server_id)["status"] == "VERIFY_RESIZE"


def _images(cloud: Cloud) -> list[str]:
    """Every image's name, as the Image service lists them to an admin."""
    with httpx.Client(base_url=f"{cloud.live.url}/image", timeout=30,
                      headers={"x-auth-token": "admin"}) as client:
        resp = client.get("/v2/images")
    assert resp.status_code == 200, resp.text
    return sorted(i["name"] for i in resp.json()["images"])


def test_an_image_backed_root_is_snapshotted_for_the_move_and_not_kept(
        cloud: Cloud, world: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    server_id = world["server"]
    before = _images(cloud)
    seen: list[str] = []
    driver = cloud.plane.agent("host1").driver
    original = driver.snapshot

    def snapshot(instance_uuid: str, image_id: str, seconds: float = 0.0) -> bytes:
        seen.append(image_id)
        return original(instance_uuid, image_id, seconds)
    monkeypatch.setattr(driver, "snapshot", snapshot)
    _move(cloud, server_id, "resize")
    assert len(seen) == 1  # taken on the source host
    assert _images(cloud) == before  # deleted once the destination runs
    events = {e["event"] for a in cloud.compute.get(
        f"/servers/{server_id}/os-instance-actions").json()["instanceActions"][:1]
        for e in cloud.compute.get(
            f"/servers/{server_id}/os-instance-actions/{a['request_id']}").json()[
            "instanceAction"]["events"]}
    assert "compute_snapshot_instance" in events
    action(cloud, server_id, {"confirmResize": None}, status=204)
    assert_invariants(cloud)


def test_a_volume_backed_server_moves_without_a_snapshot(
        cloud: Cloud, world: dict[str, str]) -> None:
    bdm = [{"uuid": "5d4bd7ec-3f5b-4c1e-9d0a-1b2c3d4e5f60", "source_type": "volume",
            "destination_type": "volume", "boot_index": 0}]
    assert cloud.compute.delete(f"/servers/{world['server']}").status_code == 204
    server_id = boot(cloud, "vol", flavor_id(cloud, "small"), "", block_device_mapping_v2=bdm,
                     availability_zone="nova:host1")
    assert held(cloud, server_id) == {world["host1"]: {"VCPU": 1, "MEMORY_MB": 512}}
    mig = _move(cloud, server_id, "resize")
    assert server(cloud, server_id)["status"] == "VERIFY_RESIZE"
    assert held(cloud, mig["uuid"]) == {world["host1"]: {"VCPU": 1, "MEMORY_MB": 512}}
    assert held(cloud, server_id) == {world["host2"]: {"VCPU": 2, "MEMORY_MB": 1024}}
    action(cloud, server_id, {"confirmResize": None}, status=204)
    _in(cloud, server_id, "cell2")
    assert held(cloud, server_id) == {world["host2"]: {"VCPU": 2, "MEMORY_MB": 1024}}
    assert_invariants(cloud)


def test_a_resize_back_to_the_first_cell_needs_no_archiving(
        cloud: Cloud, world: dict[str, str]) -> None:
    server_id = world["server"]
    _move(cloud, server_id, "migrate")
    action(cloud, server_id, {"confirmResize": None}, status=204)
    _in(cloud, server_id, "cell2")
    _move(cloud, server_id, "resize")  # host1, in cell1, is the only other host
    action(cloud, server_id, {"confirmResize": None}, status=204)
    view = server(cloud, server_id)
    assert (view["status"], view["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", "host1")
    _in(cloud, server_id, "cell1")
    assert held(cloud, server_id) == {world["host1"]: LARGE}
    assert [m["status"] for m in migrations_of(cloud, server_id)] == ["confirmed",
                                                                      "confirmed"]
    assert_invariants(cloud)


def _fail_copy(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("injected: the target cell's database refused the copy")


class _FailOnce:
    """The first mapping switch fails (the swap's); the undo's goes through."""

    def __init__(self) -> None:
        self.calls = 0
        self.real = cell_records.move_instance

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        self.calls += 1
        if self.calls == 1:
            raise RuntimeError("injected: the API database refused the mapping switch")
        self.real(*args, **kwargs)


# (sub-task, how it is made to fail, server status afterwards)
FAILURES = [
    ("target_db_setup", "copy", "ACTIVE"),
    ("prep_resize_at_dest", "host2:claim", "ACTIVE"),
    ("prep_resize_at_source", "host1:migrate_disk_and_power_off", "ERROR"),
    ("finish_resize_at_dest", "host2:finish_migration", "ERROR"),
    # The undo of finish and resize brought the guest back on host1: ACTIVE there.
    ("swap", "switch", "ACTIVE"),
]


@pytest.mark.parametrize(("task", "how", "status"), FAILURES,
                         ids=[f[0] for f in FAILURES])
def test_a_failure_in_any_sub_task_leaves_the_server_in_its_cell(
        cloud: Cloud, world: dict[str, str], monkeypatch: pytest.MonkeyPatch, task: str,
        how: str, status: str) -> None:
    server_id = world["server"]
    if how == "copy":
        monkeypatch.setattr(cell_copy, "copy_server", _fail_copy)
    elif how == "switch":
        monkeypatch.setattr(cell_records, "move_instance", _FailOnce())
    else:
        host, step = how.split(":")
        cloud.plane.agent(host).driver.fail(step, times=None)
    mig = _move(cloud, server_id, "resize")
    view = server(cloud, server_id)
    assert (view["status"], view["OS-EXT-STS:task_state"]) == (status, None), task
    assert view["OS-EXT-SRV-ATTR:host"] == "host1"
    _in(cloud, server_id, "cell1")  # nothing left in cell2, the mapping never moved
    assert count_rows(cells_of(cloud).database(cells_of(cloud).by_name("cell2")),
                      t.migrations) == 0
    assert migrations_of(cloud, server_id)[0]["status"] == "error"
    assert held(cloud, mig["uuid"]) == {}
    assert held(cloud, server_id) == {world["host1"]: SMALL}
    assert usages(cloud, world["host2"]) == EMPTY
    assert_invariants(cloud)


def _aggregate(cloud: Cloud, name: str, hosts: list[str], metadata: dict[str, str]) -> None:
    resp = cloud.compute.post("/os-aggregates", json={"aggregate": {"name": name}})
    assert resp.status_code == 200, resp.text
    agg = resp.json()["aggregate"]["id"]
    for host in hosts:
        resp = cloud.compute.post(f"/os-aggregates/{agg}/action",
                                  json={"add_host": {"host": host}})
        assert resp.status_code == 200, resp.text
    resp = cloud.compute.post(f"/os-aggregates/{agg}/action",
                              json={"set_metadata": {"metadata": metadata}})
    assert resp.status_code == 200, resp.text


def test_the_weigher_keeps_a_move_in_its_cell_unless_an_aggregate_drains_it(
        cloud: Cloud, world: dict[str, str]) -> None:
    """host1b (cell1) is fuller than host2 (cell2): spread alone would leave the cell."""
    cloud.add_host("host1b", vcpus=8, memory_mb=4096, disk_gb=50)
    filler = boot_on(cloud, "host1b", "filler")
    assert filler
    server_id = world["server"]
    _move(cloud, server_id, "migrate")
    assert server(cloud, server_id)["OS-EXT-SRV-ATTR:host"] == "host1b"
    action(cloud, server_id, {"confirmResize": None}, status=204)
    _in(cloud, server_id, "cell1")
    # The operator drains cell1: its hosts' aggregate prefers the other cells.
    _aggregate(cloud, "drain-cell1", ["host1", "host1b"],
               {"cross_cell_move_weight_multiplier": "-1000000.0"})
    _move(cloud, server_id, "migrate")
    assert server(cloud, server_id)["OS-EXT-SRV-ATTR:host"] == "host2"
    action(cloud, server_id, {"confirmResize": None}, status=204)
    _in(cloud, server_id, "cell2")
    assert_invariants(cloud)


def test_a_server_with_qos_ports_moves_across_cells(cloud: Cloud) -> None:
    """Its ports' bandwidth and VF are claimed in cell2's host, the ports bound there on
    finish, back on host1 after a revert, and host1's VF freed after a confirm."""
    hosts = {name: ports.net_host(cloud, name, vfs=4, **({"cell": "cell2"}
                                                           if name == "host2" else {}))
             for name in ("host1", "host2")}
    nets = ports.Nets(cloud)
    try:
        small, large = flavor(cloud, "small", 1, 512, 5), flavor(cloud, "large", 2, 1024, 10)
        normal, direct = nets.qos_port("a"), nets.qos_port("b", vnic="direct")
        server_id = ports.boot(cloud, "vm", small, image(cloud),
                               [{"port": normal}, {"port": direct}])
        assert server(cloud, server_id)["OS-EXT-SRV-ATTR:host"] == "host1"

        def on(host: str, amounts: dict[str, int]) -> dict[str, dict[str, int]]:
            h = hosts[host]
            assert h.bridge is not None and h.pf is not None
            return {h.node: amounts, h.bridge: ports.QOS, h.pf: ports.QOS_VF}

        def bound_to(host: str) -> None:
            nets.assert_bound(normal, server_id, host, hosts[host].bridge)
            nets.assert_bound(direct, server_id, host, hosts[host].pf)

        for end in ("revertResize", "confirmResize"):
            action(cloud, server_id, {"resize": {"flavorRef": large}})
            assert server(cloud, server_id)["status"] == "VERIFY_RESIZE"
            assert holders(cells_of(cloud), server_id) == ["cell1 (hidden)", "cell2"]
            assert ports.holding(cloud, server_id) == on("host2", LARGE)
            assert ports.holding(cloud, migrations_of(cloud, server_id)[0]["uuid"]) == on(
                "host1", SMALL)
            bound_to("host2")
            assert ports.vf_usage(cloud, "host2") == {"ens5": 1}
            action(cloud, server_id, {end: None}, status=202 if end == "revertResize" else 204)
            host = "host1" if end == "revertResize" else "host2"
            _in(cloud, server_id, "cell1" if host == "host1" else "cell2")
            assert ports.holding(cloud, server_id) == on(host, SMALL if host == "host1"
                                                         else LARGE)
            bound_to(host)
            assert ports.vf_usage(cloud, "host1") == {"ens5": 1 if host == "host1" else 0}
            assert_invariants(cloud)
    finally:
        nets.close()


def test_a_delete_in_verify_resize_leaves_nothing_in_either_cell(
        cloud: Cloud, world: dict[str, str]) -> None:
    server_id = world["server"]
    mig = _move(cloud, server_id, "resize")
    assert server(cloud, server_id)["status"] == "VERIFY_RESIZE"
    assert cloud.compute.delete(f"/servers/{server_id}").status_code == 204
    settle(cloud)
    assert cloud.compute.get(f"/servers/{server_id}").status_code == 404
    assert held(cloud, server_id) == held(cloud, mig["uuid"]) == {}
    assert usages(cloud, world["host1"]) == usages(cloud, world["host2"]) == EMPTY
    cell1 = cells_of(cloud).database(cells_of(cloud).by_name("cell1"))
    assert count_rows(cell1, t.instances, uuid=server_id) == 0  # the hidden copy is gone
    assert guests(cloud, server_id) == {}
    assert_invariants(cloud)


def test_the_alternates_stay_in_the_chosen_hosts_cell(
        cloud: Cloud, world: dict[str, str]) -> None:
    """cell1 drained (its aggregate's multiplier), cell2 chosen: its second host is the
    alternate, and when both of cell2's hosts refuse the move fails -- it never falls
    back to host1b in cell1."""
    cloud.add_host("host3", vcpus=8, memory_mb=4096, disk_gb=50, cell="cell2")
    cloud.add_host("host1b", vcpus=8, memory_mb=4096, disk_gb=50)
    _aggregate(cloud, "drain-cell1", ["host1", "host1b"],
               {"cross_cell_move_weight_multiplier": "-1000000.0"})
    server_id = world["server"]
    for host in ("host2", "host3"):
        cloud.plane.agent(host).driver.fail("claim", times=None)
    mig = _move(cloud, server_id, "migrate")
    view = server(cloud, server_id)
    assert (view["status"], view["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", "host1")
    assert mig["status"] == "error"
    [last, *_] = cloud.compute.get(f"/servers/{server_id}/os-instance-actions").json()[
        "instanceActions"]
    events = cloud.compute.get(f"/servers/{server_id}/os-instance-actions/"
                               f"{last['request_id']}").json()["instanceAction"]["events"]
    assert sorted(e["host"] for e in events if e["event"] == "compute_prep_resize") == [
        "host2", "host3"]  # both of cell2's hosts tried, no other
    _in(cloud, server_id, "cell1")
    cloud.plane.agent("host3").driver.clear_faults()
    _move(cloud, server_id, "migrate")
    view = server(cloud, server_id)  # host2 refused again, its alternate host3 took it
    assert (view["status"], view["OS-EXT-SRV-ATTR:host"]) == ("VERIFY_RESIZE", "host3")
    action(cloud, server_id, {"confirmResize": None}, status=204)
    _in(cloud, server_id, "cell2")
    assert_invariants(cloud)
