"""Booting servers against the project's port quota, as Nova's `validate_networks` does.

    host1  br-physnet0 (net0), host2 the same
    the admin's project: a port quota set per test (PUT /network/v2.0/quotas/{project})

POST /servers counts the ports its `{"uuid": net}` entries will need against
the quota before anything is written: 403 "Maximum number of ports exceeded"
when fewer than min_count servers fit, max_count lowered when some do, and
Nova's "over the limit" 403 when the project is past its limit already. A
create the Network service refuses later, at build (the room taken
meanwhile), ends that server in ERROR with a fault, no allocation, and no
port left behind.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from stowage.compute.api import server_create
from tests.functional import networking as n
from tests.functional.conftest import Cloud
from tests.functional.ports import Nets, holding, net_host
from tests.functional.servers import assert_invariants, flavor, image, server, settle

Post = Callable[..., httpx.Response]


@pytest.fixture
def project(nets: Nets) -> Iterator[str]:
    """The admin's project (the owner of the ports it makes); its port quota is reset after."""
    probe = n.port(nets.client, nets.net0["id"], name="probe")
    assert nets.client.delete(f"/v2.0/ports/{probe['id']}").status_code == 204
    project_id = str(probe["project_id"])
    yield project_id
    nets.client.delete(f"/v2.0/quotas/{project_id}")


def _port_quota(nets: Nets, project_id: str, limit: int) -> None:
    resp = nets.client.put(f"/v2.0/quotas/{project_id}", json={"quota": {"port": limit}})
    assert resp.status_code == 200, resp.text


def _ports(nets: Nets, project_id: str) -> list[str]:
    return n.ids(nets.client.get("/v2.0/ports", params={"project_id": project_id}), "ports")


@pytest.fixture
def post(cloud: Cloud) -> Post:
    """POST /servers of flavor `small` and an image, with `networks` and the counts."""
    flavor_id, image_id = flavor(cloud, "small", 1, 512, 5), image(cloud)

    def send(networks: Any, min_count: int = 1, max_count: int = 1) -> httpx.Response:
        body = {"server": {"name": "vm", "flavorRef": flavor_id, "imageRef": image_id,
                           "networks": networks, "min_count": min_count,
                           "max_count": max_count}}
        return cloud.compute.post("/servers", json=body)

    return send


def _servers(cloud: Cloud) -> list[dict[str, Any]]:
    resp = cloud.compute.get("/servers/detail")
    assert resp.status_code == 200, resp.text
    return list(resp.json()["servers"])


def _forbidden(resp: httpx.Response) -> str:
    assert resp.status_code == 403, resp.text
    body = resp.json()["forbidden"]
    assert body["code"] == 403
    return str(body["message"])


def test_too_few_free_ports_is_403_and_writes_nothing(
        cloud: Cloud, nets: Nets, project: str, post: Post) -> None:
    net_host(cloud, "host1")
    n.port(nets.client, nets.net0["id"], name="taken")
    _port_quota(nets, project, 2)  # 1 used, 1 free; the server needs 2
    before = _ports(nets, project)
    resp = post([{"uuid": nets.net0["id"]}, {"uuid": nets.net1["id"]}])
    assert _forbidden(resp) == "Maximum number of ports exceeded"
    settle(cloud)
    assert _servers(cloud) == []
    assert _ports(nets, project) == before


def test_max_count_is_lowered_to_the_servers_whose_ports_fit(
        cloud: Cloud, nets: Nets, project: str, post: Post) -> None:
    net_host(cloud, "host1")
    _port_quota(nets, project, 2)
    resp = post([{"uuid": nets.net0["id"]}], min_count=1, max_count=3)
    assert resp.status_code == 202, resp.text
    settle(cloud)
    assert sorted(s["status"] for s in _servers(cloud)) == ["ACTIVE", "ACTIVE"]
    assert len(_ports(nets, project)) == 2
    # min_count above what fits now: nothing is free, so not even one.
    assert _forbidden(post([{"uuid": nets.net0["id"]}])) == \
        "Maximum number of ports exceeded"
    assert len(_servers(cloud)) == 2
    assert_invariants(cloud)


def test_a_project_over_its_limit_already_is_told_so(
        cloud: Cloud, nets: Nets, project: str, post: Post) -> None:
    for name in ("a", "b", "c"):
        n.port(nets.client, nets.net0["id"], name=name)
    _port_quota(nets, project, 1)  # Neutron lets a limit go below the usage
    resp = post([{"uuid": nets.net0["id"]}])
    assert _forbidden(resp) == "The number of defined ports: 3 is over the limit: 1"
    assert _servers(cloud) == []


def test_own_ports_and_an_unlimited_quota_need_no_room(
        cloud: Cloud, nets: Nets, project: str, post: Post) -> None:
    net_host(cloud, "host1")
    mine = str(n.port(nets.client, nets.net0["id"], name="mine")["id"])
    _port_quota(nets, project, 1)  # full: the user's own port needs no new one
    resp = post([{"port": mine}])
    assert resp.status_code == 202, resp.text
    _port_quota(nets, project, -1)
    resp = post([{"uuid": nets.net0["id"]}], max_count=2)
    assert resp.status_code == 202, resp.text
    settle(cloud)
    assert [s["status"] for s in _servers(cloud)] == ["ACTIVE"] * 3


def test_a_port_refused_at_build_errors_the_server_cleanly(
        cloud: Cloud, nets: Nets, project: str, post: Post,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The room is gone by the time the conductor creates the ports (the API's check
    skipped here to stand for the race): the Network service's 409 OverQuota fails the
    build, which leaves nothing behind."""
    for name in ("host1", "host2"):
        net_host(cloud, name)
    monkeypatch.setattr(server_create, "servers_that_fit", lambda req, r, lo, hi: hi,
                        raising=False)
    _port_quota(nets, project, 1)  # the first port is made, the second refused
    resp = post([{"uuid": nets.net0["id"]}, {"uuid": nets.net1["id"]}])
    assert resp.status_code == 202, resp.text
    settle(cloud)
    view = server(cloud, resp.json()["server"]["id"])
    assert (view["status"], view["OS-EXT-STS:task_state"]) == ("ERROR", None), view
    assert "Quota exceeded for resources: ['port']" in view["fault"]["message"], view["fault"]
    assert holding(cloud, view["id"]) == {}
    assert _ports(nets, project) == []  # the port made for it was deleted again
    assert_invariants(cloud)
