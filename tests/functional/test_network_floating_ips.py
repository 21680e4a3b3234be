"""Floating IPs over HTTP: allocation from an external network, association through a
router, port_details, Neutron's errors, policy, quota, disassociation when the port is
deleted, and two creators racing for a subnet's last address."""

from __future__ import annotations

import threading
from typing import Any

import httpx

from tests.functional import networking as nw
from tests.functional.conftest import MEMBER, LiveServer, api_client
from tests.functional.test_network_routers import interface, public, router


def _fip(client: httpx.Client, network_id: str, **fields: Any) -> httpx.Response:
    return client.post("/v2.0/floatingips", json={"floatingip": {
        "floating_network_id": network_id, **fields}})


def _routed(client: httpx.Client) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """An external network, a tenant subnet routed to it, and a port on that subnet."""
    ext, _ = public(client)
    made = router(client, external_gateway_info={"network_id": ext["id"]})
    net = nw.network(client)
    sub = nw.subnet(client, net["id"], "10.0.0.0/24")
    assert interface(client, made["id"], subnet_id=sub["id"]).status_code == 200
    port = nw.port(client, net["id"], device_id="vm1", device_owner=nw.COMPUTE)
    return ext, made, port


def test_floating_ip_lifecycle(network: httpx.Client) -> None:
    ext, made, port = _routed(network)
    fip = nw.made(_fip(network, ext["id"], description="d"), "floatingip")
    assert (fip["floating_ip_address"], fip["status"], fip["port_id"], fip["router_id"],
            fip["fixed_ip_address"], fip["port_details"]) == \
        ("172.24.4.3", "DOWN", None, None, None, None)
    assert (fip["floating_network_id"], fip["description"], fip["tenant_id"]) == \
        (ext["id"], "d", "admin")
    path = f"/v2.0/floatingips/{fip['id']}"
    bound = nw.made(network.put(path, json={"floatingip": {"port_id": port["id"]}}),
                    "floatingip", 200)
    assert (bound["status"], bound["port_id"], bound["router_id"],
            bound["fixed_ip_address"]) == ("ACTIVE", port["id"], made["id"], "10.0.0.2")
    assert bound["port_details"] == {
        "name": "", "network_id": port["network_id"], "mac_address": port["mac_address"],
        "admin_state_up": True, "status": "DOWN", "device_id": "vm1",
        "device_owner": nw.COMPUTE}
    assert network.get(path).json()["floatingip"] == bound
    assert nw.ids(network.get("/v2.0/floatingips", params={"port_id": port["id"]}),
                  "floatingips") == [fip["id"]]
    # the router interface and gateway are in use while the floating IP goes through them
    nw.neutron_error(interface(network, made["id"], "remove",
                               subnet_id=port["fixed_ips"][0]["subnet_id"]),
                     409, "RouterInterfaceInUseByFloatingIP")
    nw.neutron_error(network.put(f"/v2.0/routers/{made['id']}", json={"router": {
        "external_gateway_info": None}}), 409, "RouterExternalGatewayInUseByFloatingIp")
    fip_port = network.get("/v2.0/ports", params={"device_id": fip["id"]}).json()["ports"][0]
    nw.neutron_error(network.delete(f"/v2.0/ports/{fip_port['id']}"), 409,
                     "ServicePortInUse")
    unbound = nw.made(network.put(path, json={"floatingip": {"port_id": None}}),
                      "floatingip", 200)
    assert (unbound["status"], unbound["port_id"], unbound["router_id"]) == \
        ("DOWN", None, None)
    assert network.delete(path).status_code == 204
    nw.neutron_error(network.get(path), 404, "FloatingIPNotFound")
    nw.neutron_error(network.get(f"/v2.0/ports/{fip_port['id']}"), 404, "PortNotFound")


def test_association_errors(network: httpx.Client) -> None:
    ext, _, port = _routed(network)
    lonely_net = nw.network(network, "lonely")
    nw.subnet(network, lonely_net["id"], "10.5.0.0/24")
    lonely = nw.port(network, lonely_net["id"])
    msg = nw.neutron_error(_fip(network, ext["id"], port_id=lonely["id"]), 404,
                           "ExternalGatewayForFloatingIPNotFound")
    assert msg == (f"External network {ext['id']} is not reachable from subnet "
                   f"{lonely['fixed_ips'][0]['subnet_id']}.  Therefore, cannot associate "
                   f"Port {lonely['id']} with a Floating IP.")
    # nothing was made by the refused create
    assert network.get("/v2.0/floatingips").json()["floatingips"] == []
    first = nw.made(_fip(network, ext["id"], port_id=port["id"]), "floatingip")
    assert first["fixed_ip_address"] == "10.0.0.2"
    nw.neutron_error(_fip(network, ext["id"], port_id=port["id"]), 409,
                     "FloatingIPPortAlreadyAssociated")
    nw.neutron_error(_fip(network, ext["id"], port_id=port["id"],
                          fixed_ip_address="10.0.0.99"), 400, "BadRequest")
    plain = nw.network(network, "plain")
    msg = nw.neutron_error(_fip(network, plain["id"]), 400, "BadRequest")
    assert msg == f"Bad floatingip request: Network {plain['id']} is not a valid external " \
                  "network."
    nw.neutron_error(_fip(network, "9b8ab5f8-4b0c-4c5f-bf7d-3a0c1d5f0e11"), 404,
                     "NetworkNotFound")
    chosen = nw.made(_fip(network, ext["id"], floating_ip_address="172.24.4.77"), "floatingip")
    assert chosen["floating_ip_address"] == "172.24.4.77"
    nw.neutron_error(_fip(network, ext["id"], floating_ip_address="172.24.4.77"), 409,
                     "IpAddressInUse")


def test_deleting_the_port_disassociates(network: httpx.Client) -> None:
    ext, _, port = _routed(network)
    fip = nw.made(_fip(network, ext["id"], port_id=port["id"]), "floatingip")
    assert network.delete(f"/v2.0/ports/{port['id']}").status_code == 204
    after = network.get(f"/v2.0/floatingips/{fip['id']}").json()["floatingip"]
    assert (after["port_id"], after["fixed_ip_address"], after["router_id"],
            after["status"]) == (None, None, None, "DOWN")
    assert after["revision_number"] > fip["revision_number"]


def test_policy_and_quota(network: httpx.Client, live_stowage: LiveServer) -> None:
    ext, _ = public(network)
    theirs = nw.made(_fip(network, ext["id"]), "floatingip")
    with api_client(f"{live_stowage.url}/network", token="demo", roles=MEMBER) as member:
        nw.neutron_error(_fip(member, ext["id"], floating_ip_address="172.24.4.90"), 403,
                         "PolicyNotAuthorized")
        mine = nw.made(_fip(member, ext["id"]), "floatingip")
        assert mine["tenant_id"] == "demo"
        assert nw.ids(member.get("/v2.0/floatingips"), "floatingips") == [mine["id"]]
        nw.neutron_error(member.get(f"/v2.0/floatingips/{theirs['id']}"), 404,
                         "FloatingIPNotFound")
        nw.neutron_error(member.delete(f"/v2.0/floatingips/{theirs['id']}"), 404,
                         "FloatingIPNotFound")
        assert network.put("/v2.0/quotas/demo", json={"quota": {"floatingip": 1}}) \
            .status_code == 200
        nw.neutron_error(_fip(member, ext["id"]), 409, "OverQuota")
        assert len(member.get("/v2.0/floatingips").json()["floatingips"]) == 1
    quota = network.get("/v2.0/quotas/demo/details").json()["quota"]["floatingip"]
    assert quota == {"limit": 1, "used": 1, "reserved": 0}


def test_two_creators_of_the_last_address(network: httpx.Client,
                                          live_stowage: LiveServer) -> None:
    net = nw.network(network, "tiny", **{"router:external": True})
    nw.subnet(network, net["id"], "192.0.2.0/30")  # one address beside the gateway
    results: list[int] = []

    def create() -> None:
        with api_client(f"{live_stowage.url}/network") as client:
            results.append(_fip(client, net["id"]).status_code)

    threads = [threading.Thread(target=create) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == [201, 409]
    fips = network.get("/v2.0/floatingips").json()["floatingips"]
    assert [f["floating_ip_address"] for f in fips] == ["192.0.2.2"]
    owners = [p["device_owner"] for p in network.get(
        "/v2.0/ports", params={"network_id": net["id"]}).json()["ports"]]
    assert owners == ["network:floatingip"]


def test_deleting_the_external_network_deletes_free_floating_ips(network: httpx.Client) -> None:
    ext, _, port = _routed(network)
    free = nw.made(_fip(network, ext["id"]), "floatingip")
    bound = nw.made(_fip(network, ext["id"], port_id=port["id"]), "floatingip")
    # the router's gateway and the associated floating IP keep the network in use
    nw.neutron_error(network.delete(f"/v2.0/networks/{ext['id']}"), 409, "NetworkInUse")
    assert nw.ids(network.get("/v2.0/floatingips"), "floatingips") == [free["id"], bound["id"]]
    network.put(f"/v2.0/floatingips/{bound['id']}", json={"floatingip": {"port_id": None}})
    routers = network.get("/v2.0/routers").json()["routers"]
    network.put(f"/v2.0/routers/{routers[0]['id']}", json={"router": {
        "external_gateway_info": None}})
    assert network.delete(f"/v2.0/networks/{ext['id']}").status_code == 204
    assert network.get("/v2.0/floatingips").json()["floatingips"] == []


def test_two_floating_ips_for_one_fixed_ip_at_once(network: httpx.Client,
                                                   live_stowage: LiveServer) -> None:
    ext, _, port = _routed(network)
    fips = [nw.made(_fip(network, ext["id"]), "floatingip") for _ in range(2)]
    barrier = threading.Barrier(2)
    results: list[int] = []

    def associate(fip_id: str) -> None:
        with api_client(f"{live_stowage.url}/network") as client:
            barrier.wait()
            results.append(client.put(f"/v2.0/floatingips/{fip_id}", json={
                "floatingip": {"port_id": port["id"]}}).status_code)

    threads = [threading.Thread(target=associate, args=(f["id"],)) for f in fips]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == [200, 409]
    bound = [f for f in network.get("/v2.0/floatingips").json()["floatingips"]
             if f["port_id"] == port["id"]]
    assert len(bound) == 1


def test_association_refusals_in_neutrons_words(network: httpx.Client) -> None:
    ext, _, port = _routed(network)
    msg = nw.neutron_error(_fip(network, ext["id"], fixed_ip_address="10.0.0.2"), 400,
                           "BadRequest")
    assert msg == "Bad floatingip request: fixed_ip_address cannot be specified without a " \
                  "port_id."
    msg = nw.neutron_error(_fip(network, ext["id"], port_id=port["id"],
                                fixed_ip_address="2001:db8::5"), 400, "BadRequest")
    assert "since that is not an IPv4 address" in msg
    v6_only = nw.network(network, "v6", **{"router:external": True})
    nw.subnet(network, v6_only["id"], "2001:db8:1::/64")
    msg = nw.neutron_error(_fip(network, v6_only["id"]), 400, "BadRequest")
    assert msg == f"Bad floatingip request: Network {v6_only['id']} does not contain any " \
                  "IPv4 subnet."
    assert network.get("/v2.0/floatingips").json()["floatingips"] == []
