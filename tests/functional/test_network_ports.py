"""Ports over HTTP: fixed IPs (also under concurrent creators), MACs, binding attributes,
policy, filters, and that a refused request changes nothing."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.functional import networking as nw
from tests.functional.conftest import MEMBER, LiveServer, api_client


def _ips(port: dict[str, Any]) -> list[str]:
    return [ip["ip_address"] for ip in port["fixed_ips"]]


def _all_ports(client: httpx.Client) -> list[dict[str, Any]]:
    resp = client.get("/v2.0/ports")
    assert resp.status_code == 200, resp.text
    return list(resp.json()["ports"])


def test_port_lifecycle(network: httpx.Client) -> None:
    net = nw.network(network)
    sub = nw.subnet(network, net["id"], "10.0.0.0/24")
    made = nw.port(network, net["id"], name="p1", device_id="vm1", device_owner=nw.COMPUTE)
    assert made["fixed_ips"] == [{"subnet_id": sub["id"], "ip_address": "10.0.0.2"}]
    assert made["mac_address"].startswith("fa:16:3e:")
    assert (made["status"], made["binding:vif_type"], made["binding:host_id"]) == \
        ("DOWN", "unbound", "")
    assert (made["binding:vnic_type"], made["binding:profile"], made["resource_request"]) == \
        ("normal", {}, None)
    assert (made["security_groups"], made["revision_number"], made["tenant_id"]) == \
        ([made["security_groups"][0]], 0, "admin")
    assert network.get(f"/v2.0/ports/{made['id']}").json()["port"] == made
    changed = nw.made(network.put(f"/v2.0/ports/{made['id']}", json={"port": {
        "name": "p1b", "description": "d", "admin_state_up": False}}), "port", 200)
    assert (changed["name"], changed["description"], changed["admin_state_up"]) == \
        ("p1b", "d", False)
    assert changed["revision_number"] == 1
    assert network.delete(f"/v2.0/ports/{made['id']}").status_code == 204
    nw.neutron_error(network.get(f"/v2.0/ports/{made['id']}"), 404, "PortNotFound")
    again = nw.port(network, net["id"])
    assert _ips(again) == ["10.0.0.2"]


def test_one_address_per_ip_version(network: httpx.Client) -> None:
    net = nw.network(network)
    nw.subnet(network, net["id"], "10.0.0.0/30")
    nw.subnet(network, net["id"], "10.0.1.0/24")
    nw.subnet(network, net["id"], "2001:db8::/64")
    assert _ips(nw.port(network, net["id"])) == ["10.0.0.2", "2001:db8::2"]
    assert _ips(nw.port(network, net["id"])) == ["10.0.1.2", "2001:db8::3"]
    assert nw.port(network, net["id"], fixed_ips=[])["fixed_ips"] == []
    bare = nw.network(network, "bare")
    assert nw.port(network, bare["id"])["fixed_ips"] == []


def test_requested_addresses(network: httpx.Client) -> None:
    net = nw.network(network)
    sub = nw.subnet(network, net["id"], "10.0.0.0/24",
                    allocation_pools=[{"start": "10.0.0.10", "end": "10.0.0.20"}])
    other = nw.subnet(network, net["id"], "10.0.1.0/24")
    by_subnet = nw.port(network, net["id"], fixed_ips=[{"subnet_id": other["id"]}])
    assert _ips(by_subnet) == ["10.0.1.2"]
    outside_pool = nw.port(network, net["id"], fixed_ips=[{"ip_address": "10.0.0.99"}])
    assert outside_pool["fixed_ips"] == [{"subnet_id": sub["id"], "ip_address": "10.0.0.99"}]
    both = nw.port(network, net["id"], fixed_ips=[{"subnet_id": sub["id"]},
                                                  {"subnet_id": sub["id"],
                                                   "ip_address": "10.0.0.5"}])
    assert _ips(both) == ["10.0.0.5", "10.0.0.10"]
    message = nw.neutron_error(network.post("/v2.0/ports", json={"port": {
        "network_id": net["id"], "fixed_ips": [{"ip_address": "10.0.0.99"}]}}),
        409, "IpAddressInUse")
    assert message == (f"Unable to complete operation for network {net['id']}. "
                       "The IP address 10.0.0.99 is in use.")


@pytest.mark.parametrize(("fixed_ips", "status", "error_type"), [
    ([{"ip_address": "192.168.0.5"}], 400, "InvalidIpForNetwork"),
    ([{"subnet_id": "SUB", "ip_address": "10.0.1.5"}], 400, "InvalidIpForSubnet"),
    ([{"ip_address": "10.0.0.255"}], 400, "InvalidIpForSubnet"),
    ([{"subnet_id": str(uuid.UUID(int=7))}], 400, "InvalidInput"),
    ([{"ip_address": "10.0.0.300"}], 400, "HTTPBadRequest"),
    ([{"subnet": "x"}], 400, "HTTPBadRequest"),
    ("10.0.0.5", 400, "HTTPBadRequest"),
    ([{"ip_address": "10.0.0.7"}, {"ip_address": "10.0.0.7"}], 409, "IpAddressInUse"),
])
def test_bad_fixed_ips_change_nothing(network: httpx.Client, fixed_ips: Any, status: int,
                                      error_type: str) -> None:
    net = nw.network(network)
    sub = nw.subnet(network, net["id"], "10.0.0.0/24")
    nw.subnet(network, net["id"], "10.0.1.0/24")
    if isinstance(fixed_ips, list):
        fixed_ips = [{k: sub["id"] if v == "SUB" else v for k, v in ip.items()}
                     for ip in fixed_ips]
    resp = network.post("/v2.0/ports", json={"port": {"network_id": net["id"],
                                                      "fixed_ips": fixed_ips}})
    nw.neutron_error(resp, status, error_type)
    assert _all_ports(network) == []
    assert _ips(nw.port(network, net["id"], fixed_ips=[{"ip_address": "10.0.0.7"}])) == \
        ["10.0.0.7"]


@pytest.mark.parametrize(("body", "reason"), [
    # Was a TypeError (500): Neutron refuses null fixed IPs, on create as on update.
    (b'{"port": {"fixed_ips": null}}', "Invalid data format for fixed IP: 'None'"),
    # 1e400 decodes to inf: MySQL's JSON column refused it (500), SQLite kept Infinity.
    (b'{"port": {"binding:profile": {"a": 1e400}}}', "holds a number out of range"),
])
def test_bad_port_updates_change_nothing(network: httpx.Client, body: bytes,
                                         reason: str) -> None:
    net = nw.network(network)
    nw.subnet(network, net["id"], "10.0.0.0/24")
    port = nw.port(network, net["id"], **{"binding:profile": {"a": 1}})
    resp = network.put(f"/v2.0/ports/{port['id']}", content=body,
                       headers={"content-type": "application/json"})
    assert reason in nw.neutron_error(resp, 400, "HTTPBadRequest")
    assert _all_ports(network) == [port]


def test_an_address_with_a_zone_index_is_not_another_address(network: httpx.Client) -> None:
    net = nw.network(network)
    nw.subnet(network, net["id"], "2001:db8::/64")
    held = nw.port(network, net["id"], fixed_ips=[{"ip_address": "2001:db8::5"}])
    for body in ({"port": {"network_id": net["id"],
                           "fixed_ips": [{"ip_address": "2001:db8::5%eth0"}]}},
                 {"port": {"network_id": net["id"],
                           "fixed_ips": [{"ip_address": "2001:db8::6%1"}]}}):
        resp = network.post("/v2.0/ports", json=body)
        assert "is not a valid IP address" in nw.neutron_error(resp, 400, "HTTPBadRequest")
    assert _all_ports(network) == [held]


def test_exhausted_pools(network: httpx.Client) -> None:
    net = nw.network(network)
    sub = nw.subnet(network, net["id"], "10.0.0.0/29",
                    allocation_pools=[{"start": "10.0.0.2", "end": "10.0.0.3"}])
    nw.port(network, net["id"])
    nw.port(network, net["id"])
    message = nw.neutron_error(network.post("/v2.0/ports", json={"port": {
        "network_id": net["id"]}}), 409, "IpAddressGenerationFailure")
    assert message == f"No more IP addresses available on network {net['id']}."
    message = nw.neutron_error(network.post("/v2.0/ports", json={"port": {
        "network_id": net["id"], "fixed_ips": [{"subnet_id": sub["id"]}]}}),
        409, "IpAddressGenerationFailure")
    assert message == f"No more IP addresses available for subnet {sub['id']}."
    assert len(_all_ports(network)) == 2


def test_changing_fixed_ips_keeps_and_frees(network: httpx.Client) -> None:
    net = nw.network(network)
    sub = nw.subnet(network, net["id"], "10.0.0.0/24")
    made = nw.port(network, net["id"])
    url = f"/v2.0/ports/{made['id']}"
    grown = nw.made(network.put(url, json={"port": {"fixed_ips": [
        {"subnet_id": sub["id"], "ip_address": "10.0.0.2"}, {"subnet_id": sub["id"]},
        {"ip_address": "10.0.0.50"}]}}), "port", 200)
    assert _ips(grown) == ["10.0.0.2", "10.0.0.3", "10.0.0.50"]
    shrunk = nw.made(network.put(url, json={"port": {"fixed_ips": [
        {"ip_address": "10.0.0.50"}]}}), "port", 200)
    assert _ips(shrunk) == ["10.0.0.50"]
    assert _ips(nw.port(network, net["id"])) == ["10.0.0.2"]
    nw.neutron_error(network.put(url, json={"port": {"fixed_ips": [
        {"ip_address": "10.0.0.2"}]}}), 409, "IpAddressInUse")
    assert _ips(network.get(url).json()["port"]) == ["10.0.0.50"]


def _race(count: int, attempt: Callable[[], httpx.Response]) -> list[httpx.Response]:
    """`count` threads released at once, each making one request."""
    start = threading.Barrier(count)
    results: list[httpx.Response] = []
    lock = threading.Lock()

    def run() -> None:
        start.wait()
        resp = attempt()
        with lock:
            results.append(resp)

    threads = [threading.Thread(target=run) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    return results


def test_concurrent_creators_never_share_an_address(live_stowage: LiveServer,
                                                    network: httpx.Client) -> None:
    net = nw.network(network)
    nw.subnet(network, net["id"], "10.0.0.0/28")  # 13 addresses in the pool

    def create() -> httpx.Response:
        with api_client(f"{live_stowage.url}/network") as client:
            return client.post("/v2.0/ports", json={"port": {"network_id": net["id"]}})

    results = _race(16, create)
    created = [r.json()["port"] for r in results if r.status_code == 201]
    refused = [r for r in results if r.status_code != 201]
    assert len(created) == 13, [r.text for r in refused]
    assert all(r.json()["NeutronError"]["type"] == "IpAddressGenerationFailure"
               for r in refused)
    addresses = sorted(ip for port in created for ip in _ips(port))
    assert addresses == sorted(f"10.0.0.{n}" for n in range(2, 15))
    assert len({p["mac_address"] for p in created}) == 13
    assert len(_all_ports(network)) == 13


def test_concurrent_claims_of_one_address(live_stowage: LiveServer,
                                          network: httpx.Client) -> None:
    net = nw.network(network)
    nw.subnet(network, net["id"], "10.0.0.0/24")

    def claim() -> httpx.Response:
        with api_client(f"{live_stowage.url}/network") as client:
            return client.post("/v2.0/ports", json={"port": {
                "network_id": net["id"], "fixed_ips": [{"ip_address": "10.0.0.42"}]}})

    results = _race(6, claim)
    assert sorted(r.status_code for r in results) == [201] + [409] * 5
    assert [_ips(p) for p in _all_ports(network)] == [["10.0.0.42"]]


def test_mac_addresses(network: httpx.Client) -> None:
    net, other = nw.network(network, "a"), nw.network(network, "b")
    mine = nw.port(network, net["id"], mac_address="FA:16:3E:00:00:01")
    assert mine["mac_address"] == "fa:16:3e:00:00:01"
    message = nw.neutron_error(network.post("/v2.0/ports", json={"port": {
        "network_id": net["id"], "mac_address": "fa:16:3e:00:00:01"}}),
        409, "MacAddressInUse")
    assert "The mac address fa:16:3e:00:00:01 is in use" in message
    assert nw.port(network, other["id"], mac_address="fa:16:3e:00:00:01")["mac_address"] == \
        "fa:16:3e:00:00:01"
    nw.neutron_error(network.post("/v2.0/ports", json={"port": {
        "network_id": net["id"], "mac_address": "zz:16:3e:00:00:01"}}), 400, "HTTPBadRequest")
    nw.neutron_error(network.put(f"/v2.0/ports/{mine['id']}", json={"port": {
        "mac_address": "fa:16:3e:00:00:02"}}), 400, "HTTPBadRequest")


def test_binding_attributes_decide_vif_and_status(network: httpx.Client) -> None:
    vxlan = nw.network(network, "overlay")
    vlan = nw.physnet(network, "vlan", vlan=100)
    normal = nw.port(network, vxlan["id"], **{"binding:host_id": "host1"})
    assert (normal["binding:vif_type"], normal["status"]) == ("ovs", "ACTIVE")
    assert normal["binding:vif_details"]["bridge_name"] == "br-int"
    sriov = nw.port(network, vlan["id"], **{"binding:host_id": "host1",
                                           "binding:vnic_type": "direct",
                                           "binding:profile": {"pci_slot": "0000:81:00.1"}})
    assert (sriov["binding:vif_type"], sriov["binding:vif_details"]["vlan"]) == \
        ("hw_veb", "100")
    assert sriov["binding:profile"] == {"pci_slot": "0000:81:00.1"}
    failed = nw.port(network, vxlan["id"], **{"binding:host_id": "host1",
                                             "binding:vnic_type": "direct"})
    assert (failed["binding:vif_type"], failed["status"]) == ("binding_failed", "DOWN")
    url = f"/v2.0/ports/{normal['id']}"
    down = nw.made(network.put(url, json={"port": {"admin_state_up": False}}), "port", 200)
    assert down["status"] == "DOWN"
    moved = nw.made(network.put(url, json={"port": {"admin_state_up": True,
                                                    "binding:host_id": "host2"}}), "port", 200)
    assert (moved["binding:host_id"], moved["status"]) == ("host2", "ACTIVE")
    unbound = nw.made(network.put(url, json={"port": {"binding:host_id": None}}), "port", 200)
    assert (unbound["binding:host_id"], unbound["binding:vif_type"]) == ("", "unbound")
    assert network.get("/v2.0/ports", params={"binding:host_id": "host1"}).json()["ports"] \
        != []
    message = nw.neutron_error(network.post("/v2.0/ports", json={"port": {
        "network_id": vxlan["id"], "binding:vnic_type": "fancy"}}), 400, "HTTPBadRequest")
    assert "'fancy' is not in ['normal', 'direct', 'macvtap'" in message


def test_binding_attributes_are_admin_only(live_stowage: LiveServer,
                                           network: httpx.Client) -> None:
    net = nw.network(network, "shared", shared=True)
    with api_client(f"{live_stowage.url}/network", token="demo:p1", roles=MEMBER) as demo:
        for attribute, value in (("binding:host_id", "h"), ("binding:profile", {"a": 1})):
            message = nw.neutron_error(demo.post("/v2.0/ports", json={"port": {
                "network_id": net["id"], attribute: value}}), 403, "PolicyNotAuthorized")
            assert f"create_port:{attribute}" in message
        mine = nw.port(demo, net["id"], **{"binding:vnic_type": "direct"})
        assert mine["binding:vnic_type"] == "direct"
        hidden = {"binding:host_id", "binding:profile", "binding:vif_type",
                  "binding:vif_details", "resource_request"}
        assert not hidden & set(mine)
        nw.neutron_error(demo.put(f"/v2.0/ports/{mine['id']}", json={"port": {
            "binding:host_id": "h"}}), 403, "PolicyNotAuthorized")
    assert _all_ports(network)[0]["binding:host_id"] == ""
    with api_client(f"{live_stowage.url}/network", token="demo:p2", roles=MEMBER) as stranger:
        nw.neutron_error(stranger.get(f"/v2.0/ports/{mine['id']}"), 404, "PortNotFound")
        assert _all_ports(stranger) == []
        nw.neutron_error(stranger.delete(f"/v2.0/ports/{mine['id']}"), 404, "PortNotFound")


def test_network_owner_sees_ports_on_their_network(live_stowage: LiveServer,
                                                   network: httpx.Client) -> None:
    with api_client(f"{live_stowage.url}/network", token="demo:p1", roles=MEMBER) as owner:
        net = nw.network(owner, "mine")
        admins = nw.port(network, net["id"], project_id="p9")
        assert [p["id"] for p in _all_ports(owner)] == [admins["id"]]


def test_port_filters(network: httpx.Client) -> None:
    net = nw.network(network)
    nw.subnet(network, net["id"])
    a = nw.port(network, net["id"], device_id="vm-a", name="a")
    b = nw.port(network, net["id"], device_id="vm-b", name="b")
    assert nw.ids(network.get("/v2.0/ports", params={"device_id": "vm-b"}), "ports") == \
        [b["id"]]
    by_ip = network.get("/v2.0/ports", params={"fixed_ips": "ip_address=10.0.0.2"})
    assert nw.ids(by_ip, "ports") == [a["id"]]
    both = network.get("/v2.0/ports", params=[("network_id", net["id"]), ("fields", "id")])
    assert sorted(p["id"] for p in both.json()["ports"]) == sorted([a["id"], b["id"]])
    assert both.json()["ports"][0].keys() == {"id"}
    nw.neutron_error(network.get("/v2.0/ports", params={"vm": "a"}), 400, "HTTPBadRequest")


def test_unsupported_attributes(network: httpx.Client) -> None:
    net = nw.network(network)
    assert nw.port(network, net["id"], security_groups=[])["security_groups"] == []
    nw.neutron_error(network.post("/v2.0/ports", json={"port": {
        "network_id": net["id"], "security_groups": ["default"]}}), 400, "HTTPBadRequest")
    nw.neutron_error(network.post("/v2.0/ports", json={"port": {
        "network_id": net["id"], "status": "ACTIVE"}}), 400, "HTTPBadRequest")
    nw.neutron_error(network.post("/v2.0/ports", json={"port": {}}), 400, "HTTPBadRequest")
    nw.neutron_error(network.post("/v2.0/ports", json={"port": {
        "network_id": str(uuid.uuid4())}}), 404, "NetworkNotFound")
    nw.neutron_error(network.post("/v2.0/ports", json={"port": {
        "network_id": net["id"], "qos_policy_id": str(uuid.uuid4())}}),
        404, "QosPolicyNotFound")
    assert len(_all_ports(network)) == 1
