"""Nova's floating-IP proxies over the Compute API, backed by the Network service's
floating IPs: os-floating-ips, os-floating-ip-pools, the addFloatingIp /
removeFloatingIp actions, and the floating addresses a server shows."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from tests.functional import networking as nw
from tests.functional.conftest import MEMBER, Cloud, api_client
from tests.functional.ports import net_host
from tests.functional.servers import flavor, image, new_uuid, server, settle

FIPS = "/os-floating-ips"


@pytest.fixture
def member(cloud: Cloud) -> Iterator[httpx.Client]:
    with cloud.client("demo:p1", version="2.35", roles=MEMBER) as client:
        yield client


@pytest.fixture
def network(cloud: Cloud) -> Iterator[httpx.Client]:
    with api_client(f"{cloud.live.url}/network") as client:
        yield client


def _ok(resp: httpx.Response, status: int = 200) -> dict[str, Any]:
    assert resp.status_code == status, resp.text
    return dict(resp.json()) if resp.content else {}


def _error(resp: httpx.Response, status: int, text: str = "") -> None:
    assert resp.status_code == status, resp.text
    message = next(iter(resp.json().values()))["message"]
    assert text in message, message


def _routed(network: httpx.Client) -> tuple[dict[str, Any], dict[str, Any]]:
    """A shared tenant network and the external network "public", joined by a router."""
    net = nw.physnet(network, "private", shared=True)
    sub = nw.subnet(network, net["id"], "10.0.0.0/24")
    ext = nw.network(network, "public", **{"router:external": True})
    nw.subnet(network, ext["id"], "172.24.4.0/24")
    router = nw.made(network.post("/v2.0/routers", json={"router": {
        "name": "r", "external_gateway_info": {"network_id": ext["id"]}}}), "router")
    _ok(network.put(f"/v2.0/routers/{router['id']}/add_router_interface",
                    json={"subnet_id": sub["id"]}))
    return net, ext


def _boot(cloud: Cloud, client: httpx.Client, net_id: str, name: str) -> str:
    ids = flavor(cloud, f"f-{name}", 1, 512, 1), image(cloud, visibility="public")
    made = _ok(client.post("/servers", json={"server": {
        "name": name, "flavorRef": ids[0], "imageRef": ids[1],
        "networks": [{"uuid": net_id}]}}), 202)["server"]
    settle(cloud)
    return str(made["id"])


def _floating(cloud: Cloud, server_id: str) -> list[str]:
    return [a["addr"] for ips in server(cloud, server_id)["addresses"].values() for a in ips
            if a["OS-EXT-IPS:type"] == "floating"]


def _action(client: httpx.Client, server_id: str, body: dict[str, Any]) -> httpx.Response:
    return client.post(f"/servers/{server_id}/action", json=body)


def test_allocate_show_list_release(cloud: Cloud, member: httpx.Client,
                                    network: httpx.Client) -> None:
    _, ext = _routed(network)
    assert _ok(member.get("/os-floating-ip-pools")) == {
        "floating_ip_pools": [{"name": "public"}]}
    # Every project lists external networks, as Neutron answers Nova with its token.
    assert {"id": ext["id"], "cidr": "None", "label": "public"} in _ok(
        member.get("/os-tenant-networks"))["networks"]
    fip = _ok(member.post(FIPS, json={"pool": "public"}))["floating_ip"]
    assert fip == {"id": fip["id"], "ip": fip["ip"], "pool": "public", "fixed_ip": None,
                   "instance_id": None}
    assert fip["ip"].startswith("172.24.4.")
    by_id = _ok(member.post(FIPS, json={"pool": ext["id"]}))["floating_ip"]
    assert by_id["pool"] == "public"
    assert _ok(member.get(f"{FIPS}/{fip['id']}"))["floating_ip"] == fip
    listed = _ok(member.get(FIPS))["floating_ips"]
    assert sorted(f["id"] for f in listed) == sorted([fip["id"], by_id["id"]])
    assert fip in listed
    with cloud.client("demo:p2", version="2.35", roles=MEMBER) as stranger:
        _error(stranger.get(f"{FIPS}/{fip['id']}"), 404,
               f"Floating IP not found for ID {fip['id']}")
        _error(stranger.delete(f"{FIPS}/{fip['id']}"), 404)
        assert _ok(stranger.get(FIPS)) == {"floating_ips": []}
    # The default pool is Nova's "nova", which this cloud does not have.
    _error(member.post(FIPS, json={}), 404, "Floating IP pool not found.")
    _error(member.post(FIPS, json={"pool": "nope"}), 404, "Floating IP pool not found.")
    _error(member.post(FIPS, json={"pool": new_uuid()}), 404, "Floating IP pool not found.")
    _error(member.post(FIPS, json={"pool": 5}), 400)
    assert member.delete(f"{FIPS}/{by_id['id']}").status_code == 202
    _error(member.get(f"{FIPS}/{by_id['id']}"), 404)
    _error(member.delete(f"{FIPS}/{by_id['id']}"), 404)
    with cloud.client("demo:p1", version="2.36", roles=MEMBER) as newer:
        _error(newer.get(FIPS), 404)
        _error(newer.get("/os-floating-ip-pools"), 404)
        _error(newer.post(FIPS, json={"pool": "public"}), 404)
    assert [f["id"] for f in _ok(member.get(FIPS))["floating_ips"]] == [fip["id"]]


def test_allocation_over_quota(cloud: Cloud, member: httpx.Client,
                               network: httpx.Client) -> None:
    _routed(network)
    _ok(network.put("/v2.0/quotas/p1", json={"quota": {"floatingip": 1}}))
    _ok(member.post(FIPS, json={"pool": "public"}))
    _error(member.post(FIPS, json={"pool": "public"}), 403,
           "IP allocation over quota in pool public.")
    assert len(_ok(member.get(FIPS))["floating_ips"]) == 1


def test_associate_move_and_disassociate(cloud: Cloud, member: httpx.Client,
                                         network: httpx.Client) -> None:
    net_host(cloud, "host1")
    net, _ = _routed(network)
    vm1, vm2 = _boot(cloud, member, net["id"], "vm1"), _boot(cloud, member, net["id"], "vm2")
    fixed1 = server(cloud, vm1)["addresses"]["private"][0]["addr"]
    fip = _ok(member.post(FIPS, json={"pool": "public"}))["floating_ip"]
    assert _action(member, vm1, {"addFloatingIp": {"address": fip["ip"]}}).status_code == 202
    shown = _ok(member.get(f"{FIPS}/{fip['id']}"))["floating_ip"]
    assert (shown["instance_id"], shown["fixed_ip"]) == (vm1, fixed1)
    addresses = server(cloud, vm1)["addresses"]["private"]
    assert [(a["addr"], a["OS-EXT-IPS:type"]) for a in addresses] == [
        (fixed1, "fixed"), (fip["ip"], "floating")]
    assert addresses[1]["OS-EXT-IPS-MAC:mac_addr"] == addresses[0]["OS-EXT-IPS-MAC:mac_addr"]
    assert addresses[1]["version"] == 4
    ips = _ok(member.get(f"/servers/{vm1}/ips"))["addresses"]["private"]
    assert ips == [{"version": 4, "addr": fixed1}, {"version": 4, "addr": fip["ip"]}]
    # A second floating IP for the same fixed IP: the Network service's conflict, as 400.
    other = _ok(member.post(FIPS, json={"pool": "public"}))["floating_ip"]
    _error(_action(member, vm1, {"addFloatingIp": {"address": other["ip"]}}), 400)
    # Associating it with another server moves it (Nova's behaviour); both caches follow.
    assert _action(member, vm2, {"addFloatingIp": {"address": fip["ip"]}}).status_code == 202
    assert (_floating(cloud, vm1), _floating(cloud, vm2)) == ([], [fip["ip"]])
    _error(_action(member, vm1, {"removeFloatingIp": {"address": fip["ip"]}}), 409,
           f"Floating IP {fip['ip']} is not associated with instance {vm1}.")
    assert _action(member, vm2, {"removeFloatingIp": {"address": fip["ip"]}}
                   ).status_code == 202
    assert _floating(cloud, vm2) == []
    assert _ok(member.get(f"{FIPS}/{fip['id']}"))["floating_ip"]["instance_id"] is None
    # On no server, Nova's policy check has no project to match: 403, as Nova answers.
    _error(_action(member, vm2, {"removeFloatingIp": {"address": fip["ip"]}}), 403,
           "os_compute_api:os-floating-ips:remove")
    with cloud.client("admin", version="2.35") as admin:
        _error(_action(admin, vm2, {"removeFloatingIp": {"address": fip["ip"]}}), 409,
               f"Floating IP {fip['ip']} is not associated with instance {vm2}.")


def test_refused_actions_change_nothing(cloud: Cloud, member: httpx.Client,
                                        network: httpx.Client) -> None:
    net_host(cloud, "host1")
    net, _ = _routed(network)
    vm = _boot(cloud, member, net["id"], "vm")
    fip = _ok(member.post(FIPS, json={"pool": "public"}))["floating_ip"]
    refused = [
        ({"addFloatingIp": {"address": "0.0.0.0"}}, 404, "floating IP not found"),
        ({"addFloatingIp": {"address": ""}}, 400, "address"),
        ({"addFloatingIp": {"address": fip["ip"], "fixed_address": "10.9.9.9"}}, 400,
         "Specified fixed address not assigned to instance"),
        ({"addFloatingIp": {"address": fip["ip"], "extra": 1}}, 400, ""),
        ({"addFloatingIp": {}}, 400, ""),
        ({"removeFloatingIp": {"address": "0.0.0.0"}}, 404,
         "Floating IP not found for address 0.0.0.0."),
        ({"removeFloatingIp": {"address": fip["ip"]}}, 403, "os-floating-ips:remove"),
    ]
    for body, status, text in refused:
        _error(_action(member, vm, body), status, text)
    _error(_action(member, new_uuid(), {"addFloatingIp": {"address": fip["ip"]}}), 404,
           "could not be found")
    with cloud.client("demo:p1", version="2.44", roles=MEMBER) as newer:
        _error(_action(newer, vm, {"addFloatingIp": {"address": fip["ip"]}}), 404)
        _error(_action(newer, vm, {"removeFloatingIp": {"address": fip["ip"]}}), 404)
    with cloud.client("demo:p2", version="2.35", roles=MEMBER) as stranger:
        _error(_action(stranger, vm, {"addFloatingIp": {"address": fip["ip"]}}), 404)
    with cloud.client("demo:p1", version="2.35", roles=["reader"]) as reader:
        _error(_action(reader, vm, {"addFloatingIp": {"address": fip["ip"]}}), 403)
        _error(reader.post(FIPS, json={"pool": "public"}), 403)
        assert len(_ok(reader.get(FIPS))["floating_ips"]) == 1
    assert _ok(member.get(f"{FIPS}/{fip['id']}"))["floating_ip"]["instance_id"] is None
    assert _floating(cloud, vm) == []


def test_release_and_network_side_changes_reach_the_server(
        cloud: Cloud, member: httpx.Client, network: httpx.Client) -> None:
    net_host(cloud, "host1")
    net, ext = _routed(network)
    vm = _boot(cloud, member, net["id"], "vm")
    fip = _ok(member.post(FIPS, json={"pool": "public"}))["floating_ip"]
    assert _action(member, vm, {"addFloatingIp": {"address": fip["ip"]}}).status_code == 202
    assert _floating(cloud, vm) == [fip["ip"]]
    assert member.delete(f"{FIPS}/{fip['id']}").status_code == 202
    assert _floating(cloud, vm) == []
    # Through the Network service: it tells Compute network-changed, the cache follows.
    (port,) = network.get("/v2.0/ports", params={"device_id": vm}).json()["ports"]
    native = nw.made(network.post("/v2.0/floatingips", json={"floatingip": {
        "floating_network_id": ext["id"], "project_id": "p1", "port_id": port["id"]}}),
        "floatingip")
    address = native["floating_ip_address"]
    assert _floating(cloud, vm) == [address]
    shown = _ok(member.get(FIPS))["floating_ips"]
    assert [(f["instance_id"], f["ip"]) for f in shown] == [(vm, address)]
    _ok(network.put(f"/v2.0/floatingips/{native['id']}", json={"floatingip": {
        "port_id": None}}))
    assert _floating(cloud, vm) == []
    _ok(network.put(f"/v2.0/floatingips/{native['id']}", json={"floatingip": {
        "port_id": port["id"]}}))
    assert _floating(cloud, vm) == [address]
    assert network.delete(f"/v2.0/floatingips/{native['id']}").status_code == 204
    assert _floating(cloud, vm) == []


def test_two_floating_ips_for_one_fixed_ip_at_once(cloud: Cloud, member: httpx.Client,
                                                   network: httpx.Client) -> None:
    """Two addFloatingIp of different floating IPs to the server's one fixed IP at once:
    one is associated, the other is 400, and the server shows the winner only."""
    net_host(cloud, "host1")
    net, _ = _routed(network)
    vm = _boot(cloud, member, net["id"], "vm")
    fips = [_ok(member.post(FIPS, json={"pool": "public"}))["floating_ip"] for _ in range(2)]
    barrier = threading.Barrier(2)

    def add(fip: dict[str, Any]) -> int:
        with cloud.client("demo:p1", version="2.35", roles=MEMBER) as client:
            barrier.wait()
            return _action(client, vm, {"addFloatingIp": {"address": fip["ip"]}}).status_code
    with ThreadPoolExecutor(2) as pool:
        statuses = list(pool.map(add, fips))
    assert sorted(statuses) == [202, 400]
    winner = fips[statuses.index(202)]
    assert _floating(cloud, vm) == [winner["ip"]]
    shown = {f["id"]: f["instance_id"] for f in _ok(member.get(FIPS))["floating_ips"]}
    assert shown == {winner["id"]: vm, fips[statuses.index(400)]["id"]: None}
