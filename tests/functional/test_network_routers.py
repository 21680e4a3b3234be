"""Routers over HTTP: external networks, the gateway, interfaces by subnet and by port,
static routes, the errors Neutron gives, policy and the router quota."""

from __future__ import annotations

from typing import Any

import httpx

from tests.functional import networking as nw
from tests.functional.conftest import MEMBER, READER, LiveServer, api_client


def public(client: httpx.Client, cidr: str = "172.24.4.0/24") -> tuple[dict[str, Any],
                                                                     dict[str, Any]]:
    """An external network (admin-made, in another project) and its subnet."""
    net = nw.network(client, "public", **{"router:external": True}, project_id="adminproj")
    return net, nw.subnet(client, net["id"], cidr)


def router(client: httpx.Client, **fields: Any) -> dict[str, Any]:
    return nw.made(client.post("/v2.0/routers", json={"router": {"name": "r", **fields}}),
                   "router")


def interface(client: httpx.Client, router_id: str, verb: str = "add",
              **info: str) -> httpx.Response:
    return client.put(f"/v2.0/routers/{router_id}/{verb}_router_interface", json=info)


def test_external_network_attribute(network: httpx.Client, live_stowage: LiveServer) -> None:
    ext, _ = public(network)
    plain = nw.network(network, "plain")
    assert (ext["router:external"], plain["router:external"]) == (True, False)
    assert nw.ids(network.get("/v2.0/networks", params={"router:external": "true"}),
                  "networks") == [ext["id"]]
    with api_client(f"{live_stowage.url}/network", token="demo", roles=MEMBER) as member:
        # Every project sees external networks, as Neutron's rule:external says.
        assert ext["id"] in nw.ids(member.get("/v2.0/networks"), "networks")
        nw.neutron_error(member.post("/v2.0/networks", json={"network": {
            "name": "x", "router:external": True}}), 403, "PolicyNotAuthorized")
        own = nw.network(member, "own")
        nw.neutron_error(member.put(f"/v2.0/networks/{own['id']}", json={"network": {
            "router:external": True}}), 403, "PolicyNotAuthorized")
    changed = nw.made(network.put(f"/v2.0/networks/{plain['id']}", json={"network": {
        "router:external": True}}), "network", 200)
    assert changed["router:external"] is True


def test_router_lifecycle_with_gateway(network: httpx.Client) -> None:
    ext, ext_sub = public(network)
    made = router(network, description="d", external_gateway_info={"network_id": ext["id"]})
    gateway = made["external_gateway_info"]
    assert gateway == {"network_id": ext["id"], "enable_snat": True, "external_fixed_ips": [
        {"subnet_id": ext_sub["id"], "ip_address": "172.24.4.2"}]}
    assert (made["status"], made["admin_state_up"], made["routes"]) == ("ACTIVE", True, [])
    assert (made["description"], made["revision_number"], made["tenant_id"]) == \
        ("d", 0, "admin")
    gw_ports = network.get("/v2.0/ports", params={"device_id": made["id"]}).json()["ports"]
    assert [(p["device_owner"], p["tenant_id"]) for p in gw_ports] == \
        [("network:router_gateway", "")]
    assert network.get(f"/v2.0/routers/{made['id']}").json()["router"] == made
    # the gateway port cannot be deleted through the port API
    msg = nw.neutron_error(network.delete(f"/v2.0/ports/{gw_ports[0]['id']}"), 409,
                           "ServicePortInUse")
    assert msg.endswith("has device owner network:router_gateway.")
    # a non-external network cannot be a gateway
    plain = nw.network(network, "plain")
    msg = nw.neutron_error(network.put(f"/v2.0/routers/{made['id']}", json={"router": {
        "external_gateway_info": {"network_id": plain["id"]}}}), 400, "BadRequest")
    assert msg == f"Bad router request: Network {plain['id']} is not an external network."
    # an external network with a gateway on it stays external
    nw.neutron_error(network.put(f"/v2.0/networks/{ext['id']}", json={"network": {
        "router:external": False}}), 409, "ExternalNetworkInUse")
    cleared = nw.made(network.put(f"/v2.0/routers/{made['id']}", json={"router": {
        "name": "r2", "external_gateway_info": {}}}), "router", 200)
    assert (cleared["name"], cleared["external_gateway_info"]) == ("r2", None)
    assert network.get("/v2.0/ports", params={"device_id": made["id"]}).json()["ports"] == []
    assert network.delete(f"/v2.0/routers/{made['id']}").status_code == 204
    nw.neutron_error(network.get(f"/v2.0/routers/{made['id']}"), 404, "RouterNotFound")


def test_gateway_fixed_ips_and_snat_are_admins_only(network: httpx.Client,
                                                    live_stowage: LiveServer) -> None:
    ext, ext_sub = public(network)
    made = router(network, external_gateway_info={
        "network_id": ext["id"], "enable_snat": False,
        "external_fixed_ips": [{"subnet_id": ext_sub["id"], "ip_address": "172.24.4.50"}]})
    assert made["external_gateway_info"]["enable_snat"] is False
    assert made["external_gateway_info"]["external_fixed_ips"][0]["ip_address"] == \
        "172.24.4.50"
    with api_client(f"{live_stowage.url}/network", token="demo", roles=MEMBER) as member:
        mine = router(member, external_gateway_info={"network_id": ext["id"]})
        assert mine["external_gateway_info"]["external_fixed_ips"][0]["ip_address"] == \
            "172.24.4.2"
        for extra in ({"enable_snat": False},
                      {"external_fixed_ips": [{"ip_address": "172.24.4.60"}]}):
            nw.neutron_error(member.post("/v2.0/routers", json={"router": {
                "external_gateway_info": {"network_id": ext["id"], **extra}}}),
                403, "PolicyNotAuthorized")
        assert nw.ids(member.get("/v2.0/routers"), "routers") == [mine["id"]]
        nw.neutron_error(member.get(f"/v2.0/routers/{made['id']}"), 404, "RouterNotFound")
    with api_client(f"{live_stowage.url}/network", token="demo", roles=READER) as reader:
        assert nw.ids(reader.get("/v2.0/routers"), "routers") == [mine["id"]]
        nw.neutron_error(reader.put(f"/v2.0/routers/{mine['id']}", json={"router": {
            "name": "x"}}), 403, "PolicyNotAuthorized")
        nw.neutron_error(reader.delete(f"/v2.0/routers/{mine['id']}"), 403,
                         "PolicyNotAuthorized")


def test_interfaces_by_subnet_and_port(network: httpx.Client) -> None:
    made = router(network)
    net = nw.network(network)
    sub = nw.subnet(network, net["id"], "10.0.0.0/24")
    added = interface(network, made["id"], subnet_id=sub["id"])
    assert added.status_code == 200, added.text
    answer = added.json()
    assert (answer["id"], answer["subnet_id"], answer["subnet_ids"], answer["network_id"]) \
        == (made["id"], sub["id"], [sub["id"]], net["id"])
    port = network.get(f"/v2.0/ports/{answer['port_id']}").json()["port"]
    assert (port["device_owner"], port["device_id"], port["fixed_ips"]) == (
        "network:router_interface", made["id"],
        [{"subnet_id": sub["id"], "ip_address": "10.0.0.1"}])
    msg = nw.neutron_error(interface(network, made["id"], subnet_id=sub["id"]), 400,
                           "BadRequest")
    assert msg == f"Bad router request: Router already has a port on subnet {sub['id']}."
    other = nw.network(network, "other")
    overlapping = nw.subnet(network, other["id"], "10.0.0.0/16")
    msg = nw.neutron_error(interface(network, made["id"], subnet_id=overlapping["id"]),
                           400, "BadRequest")
    assert "overlaps with cidr 10.0.0.0/24" in msg
    no_gw = nw.subnet(network, other["id"], "10.9.0.0/24", gateway_ip=None)
    msg = nw.neutron_error(interface(network, made["id"], subnet_id=no_gw["id"]), 400,
                           "BadRequest")
    assert msg == "Bad router request: Subnet for router interface must have a gateway IP."
    nw.neutron_error(interface(network, made["id"], subnet_id=sub["id"], port_id=port["id"]),
                     400, "BadRequest")
    nw.neutron_error(network.delete(f"/v2.0/routers/{made['id']}"), 409, "RouterInUse")
    nw.neutron_error(network.delete(f"/v2.0/ports/{port['id']}"), 409, "ServicePortInUse")
    # by port: a port with no device becomes the interface; one with a device is in use
    third = nw.network(network, "third")
    nw.subnet(network, third["id"], "10.3.0.0/24")
    free = nw.port(network, third["id"])
    busy = nw.port(network, third["id"], device_id="vm")
    nw.neutron_error(interface(network, made["id"], port_id=busy["id"]), 409, "PortInUse")
    by_port = interface(network, made["id"], port_id=free["id"])
    assert by_port.status_code == 200, by_port.text
    assert network.get(f"/v2.0/ports/{free['id']}").json()["port"]["device_owner"] == \
        "network:router_interface"
    removed = interface(network, made["id"], "remove", port_id=free["id"])
    assert removed.status_code == 200 and removed.json()["port_id"] == free["id"]
    nw.neutron_error(network.get(f"/v2.0/ports/{free['id']}"), 404, "PortNotFound")
    nw.neutron_error(interface(network, made["id"], "remove", subnet_id=no_gw["id"]), 404,
                     "RouterInterfaceNotFoundForSubnet")
    assert interface(network, made["id"], "remove", subnet_id=sub["id"]).status_code == 200
    assert network.delete(f"/v2.0/routers/{made['id']}").status_code == 204


def test_routes_need_a_connected_nexthop(network: httpx.Client) -> None:
    made = router(network)
    net = nw.network(network)
    sub = nw.subnet(network, net["id"], "10.0.0.0/24")
    assert interface(network, made["id"], subnet_id=sub["id"]).status_code == 200
    path = f"/v2.0/routers/{made['id']}"
    msg = nw.neutron_error(network.put(path, json={"router": {"routes": [
        {"destination": "192.0.2.0/24", "nexthop": "10.1.0.5"}]}}), 400, "InvalidRoutes")
    assert msg.endswith("the nexthop is not connected with router")
    nw.neutron_error(network.put(path, json={"router": {"routes": [
        {"destination": "192.0.2.0/24", "nexthop": "10.0.0.1"}]}}), 400, "InvalidRoutes")
    route = {"destination": "192.0.2.0/24", "nexthop": "10.0.0.5"}
    changed = nw.made(network.put(path, json={"router": {"routes": [route]}}), "router", 200)
    assert changed["routes"] == [route]
    nw.neutron_error(interface(network, made["id"], "remove", subnet_id=sub["id"]), 409,
                     "RouterInterfaceInUseByRoute")
    more = {"destination": "198.51.100.0/24", "nexthop": "10.0.0.6"}
    added = nw.made(network.put(f"{path}/add_extraroutes", json={"router": {
        "routes": [more, route]}}), "router", 200)
    assert added["routes"] == [route, more]
    left = nw.made(network.put(f"{path}/remove_extraroutes", json={"router": {
        "routes": [route]}}), "router", 200)
    assert left["routes"] == [more]


def test_router_quota(network: httpx.Client) -> None:
    assert network.put("/v2.0/quotas/admin", json={"quota": {"router": 1}}).status_code == 200
    router(network)
    nw.neutron_error(network.post("/v2.0/routers", json={"router": {"name": "x"}}), 409,
                     "OverQuota")
    assert len(network.get("/v2.0/routers").json()["routers"]) == 1
    details = network.get("/v2.0/quotas/admin/details").json()["quota"]
    assert details["router"] == {"limit": 1, "used": 1, "reserved": 0}
    assert network.get("/v2.0/quotas/other").json()["quota"]["router"] == 10
