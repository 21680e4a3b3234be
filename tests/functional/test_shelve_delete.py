"""DELETE /servers/{id} while it is being shelved, offloaded or unshelved: nothing leaks.

    host1 (the server's host)      host2

The operation is held at one of its steps (`Hold`, before or after the step
acted), the user deletes the server, and the step is let go: the server is
gone (404), nobody holds an allocation for it, no host has its guest, its
snapshot image is gone too, and the audit is clean.
"""

from __future__ import annotations

import pytest

from stowage.compute.agent.simulated import SimulatedDriver
from tests.functional.conftest import Cloud
from tests.functional.servers import action, assert_invariants, held, server, settle
from tests.functional.shelving import images_named, post_action, two_hosts_and_a_server
from tests.functional.test_delete_during_move import hold

SHELVE_POINTS = [
    pytest.param("host1", "power_off_instance", False, id="power-off"),
    pytest.param("host1", "snapshot_instance", False, id="snapshot"),
    pytest.param("host1", "snapshot_instance", True, id="snapshot-taken"),
    pytest.param("host1", "shelve_offload_instance", False, id="offload"),
    pytest.param("host1", "shelve_offload_instance", True, id="guest-destroyed"),
]
UNSHELVE_POINTS = [
    pytest.param("scheduler", "select_destinations", False, id="scheduling"),
    pytest.param("scheduler", "select_destinations", True, id="host-claimed"),
    pytest.param("host1", "unshelve_instance", False, id="spawn"),
    pytest.param("host1", "unshelve_instance", True, id="spawned"),
]


def _nothing_left(cloud: Cloud, server_id: str) -> None:
    assert cloud.compute.get(f"/servers/{server_id}").status_code == 404
    assert held(cloud, server_id) == {}
    for host in ("host1", "host2"):
        driver = cloud.plane.agent(host).driver
        assert isinstance(driver, SimulatedDriver)
        assert server_id not in driver.list_instances(), host
    assert images_named(cloud, "vm-shelved") == []
    assert_invariants(cloud)


def _delete(cloud: Cloud, server_id: str) -> None:
    resp = cloud.compute.delete(f"/servers/{server_id}")
    assert resp.status_code == 204, resp.text


@pytest.mark.parametrize(("where", "method", "after"), SHELVE_POINTS)
def test_delete_during_a_shelve(cloud: Cloud, monkeypatch: pytest.MonkeyPatch, where: str,
                                method: str, after: bool) -> None:
    shelf = two_hosts_and_a_server(cloud)
    holder = hold(cloud, monkeypatch, where, method, after)
    assert post_action(cloud.compute, shelf.server, {"shelve": None}).status_code == 202
    assert holder.reached.wait(30)
    assert server(cloud, shelf.server)["OS-EXT-STS:task_state"].startswith("shelving")

    _delete(cloud, shelf.server)
    holder.release()
    settle(cloud)
    _nothing_left(cloud, shelf.server)


@pytest.mark.parametrize(("where", "method", "after"), UNSHELVE_POINTS)
def test_delete_during_an_unshelve(cloud: Cloud, monkeypatch: pytest.MonkeyPatch, where: str,
                                   method: str, after: bool) -> None:
    shelf = two_hosts_and_a_server(cloud)
    action(cloud, shelf.server, {"shelve": None})
    holder = hold(cloud, monkeypatch, where, method, after)
    assert post_action(cloud.compute, shelf.server, {"unshelve": None}).status_code == 202
    assert holder.reached.wait(30)
    assert server(cloud, shelf.server)["status"] == "SHELVED_OFFLOADED"

    _delete(cloud, shelf.server)
    holder.release()
    settle(cloud)
    _nothing_left(cloud, shelf.server)


@pytest.mark.parametrize("after", [False, True], ids=["power-on", "powered-on"])
def test_delete_during_an_unshelve_in_place(cloud: Cloud, monkeypatch: pytest.MonkeyPatch,
                                            after: bool) -> None:
    shelf = two_hosts_and_a_server(cloud, offload_time=-1)
    action(cloud, shelf.server, {"shelve": None})
    holder = hold(cloud, monkeypatch, "host1", "power_on_instance", after)
    assert post_action(cloud.compute, shelf.server, {"unshelve": None}).status_code == 202
    assert holder.reached.wait(30)

    _delete(cloud, shelf.server)
    holder.release()
    settle(cloud)
    _nothing_left(cloud, shelf.server)
