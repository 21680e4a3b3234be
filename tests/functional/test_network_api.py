"""Networking API over HTTP: version documents, extensions, networks and subnets.

Ports are in test_network_ports.py, QoS and resource requests in
test_network_qos.py, the bindings sub-resource in test_network_bindings.py.
"""

from __future__ import annotations

import threading
import uuid
from typing import Any

import httpx
import pytest

from tests.conftest import BACKENDS
from tests.functional import networking as nw
from tests.functional.conftest import MEMBER, LiveServer, api_client, serving


def test_version_documents_need_no_token(live_stowage: LiveServer) -> None:
    for path in ("/network", "/network/"):
        root = httpx.get(f"{live_stowage.url}{path}")
        assert root.status_code == 200
        (version,) = root.json()["versions"]
        assert (version["id"], version["status"]) == ("v2.0", "CURRENT")
        assert version["links"][0]["href"] == f"{live_stowage.url}/network/v2.0/"
    listed = httpx.get(f"{live_stowage.url}/network/v2.0/").json()["resources"]
    assert {r["collection"] for r in listed} >= {"networks", "subnets", "ports"}
    assert httpx.get(f"{live_stowage.url}/network/v2.0/networks").status_code == 401


def test_served_alone_at_the_root() -> None:
    with serving(BACKENDS[0], ("network",)) as live:
        assert httpx.get(f"{live.url}/").json()["versions"][0]["id"] == "v2.0"
        with api_client(live.url) as client:
            assert nw.network(client, "alone")["name"] == "alone"


def test_extensions_list_what_is_served(network: httpx.Client) -> None:
    listed = network.get("/v2.0/extensions").json()["extensions"]
    aliases = {e["alias"] for e in listed}
    assert {"provider", "binding", "binding-extended", "qos", "qos-bw-minimum-ingress",
            "port-resource-request", "port-resource-request-groups",
            "standard-attr-description", "revision-if-match", "security-group"} <= aliases
    assert {"router", "external-net", "ext-gw-mode", "extraroute", "fip-port-details"} \
        <= aliases
    assert not aliases & {"dhcp_agent_scheduler", "l3-ha", "dvr", "l3-flavors"}
    one = network.get("/v2.0/extensions/binding-extended").json()["extension"]
    assert one["name"] == "Port Bindings Extended"
    nw.neutron_error(network.get("/v2.0/extensions/l3-ha"), 404, "HTTPNotFound")


def test_network_lifecycle(network: httpx.Client) -> None:
    made_net = network.post("/v2.0/networks", json={"network": {
        "name": "net1", "description": "first", "provider:network_type": "vlan",
        "provider:physical_network": "physnet0", "provider:segmentation_id": 100}})
    net = nw.made(made_net, "network")
    assert (net["status"], net["admin_state_up"], net["shared"], net["mtu"]) == \
        ("ACTIVE", True, False, 1500)
    assert (net["provider:physical_network"], net["provider:segmentation_id"]) == \
        ("physnet0", 100)
    assert (net["tenant_id"], net["project_id"], net["revision_number"]) == \
        ("admin", "admin", 0)
    assert net["subnets"] == [] and net["created_at"].endswith("Z")
    shown = network.get(f"/v2.0/networks/{net['id']}").json()["network"]
    assert shown == net
    changed = nw.made(network.put(f"/v2.0/networks/{net['id']}", json={"network": {
        "name": "net1b", "admin_state_up": False, "mtu": 1400}}), "network", 200)
    assert (changed["name"], changed["admin_state_up"], changed["mtu"]) == \
        ("net1b", False, 1400)
    assert changed["revision_number"] == 1
    assert network.delete(f"/v2.0/networks/{net['id']}").status_code == 204
    nw.neutron_error(network.get(f"/v2.0/networks/{net['id']}"), 404, "NetworkNotFound")
    nw.neutron_error(network.delete(f"/v2.0/networks/{net['id']}"), 404, "NetworkNotFound")


def test_tenant_networks_get_the_lowest_free_tunnel_id(network: httpx.Client) -> None:
    first, second = nw.network(network, "a"), nw.network(network, "b")
    assert (first["provider:network_type"], first["provider:segmentation_id"]) == ("vxlan", 1)
    assert second["provider:segmentation_id"] == 2
    assert first["mtu"] == 1450
    geneve = nw.network(network, "g", **{"provider:network_type": "geneve"})
    assert (geneve["provider:segmentation_id"], geneve["mtu"]) == (1, 1442)
    local = nw.network(network, "l", **{"provider:network_type": "local"})
    assert local["provider:segmentation_id"] is None
    vlan = nw.network(network, "v", **{"provider:network_type": "vlan",
                                    "provider:physical_network": "physnet1"})
    assert vlan["provider:segmentation_id"] == 1


@pytest.mark.parametrize(("provider", "reason"), [
    ({"provider:network_type": "flat"}, "physical_network required for flat"),
    ({"provider:network_type": "vlan", "provider:physical_network": "p",
      "provider:segmentation_id": 4095}, "segmentation_id out of range (1 through 4094)"),
    ({"provider:network_type": "vxlan", "provider:physical_network": "p"},
     "provider:physical_network specified for vxlan network"),
    ({"provider:network_type": "flat", "provider:physical_network": "p",
      "provider:segmentation_id": 3}, "segmentation_id prohibited for flat"),
    ({"provider:network_type": "gre"}, "network_type value 'gre' not supported"),
])
def test_bad_provider_attributes_change_nothing(network: httpx.Client,
                                                provider: dict[str, Any],
                                                reason: str) -> None:
    message = nw.neutron_error(network.post("/v2.0/networks", json={"network": provider}),
                            400, "InvalidInput")
    assert message.startswith("Invalid input for operation: ") and reason in message
    assert network.get("/v2.0/networks").json()["networks"] == []


def test_segments_are_claimed_once(network: httpx.Client) -> None:
    nw.physnet(network, "flat0")
    nw.neutron_error(network.post("/v2.0/networks", json={"network": {
        "provider:network_type": "flat", "provider:physical_network": "physnet0"}}),
        409, "FlatNetworkInUse")
    nw.physnet(network, "vlan7", vlan=7)
    message = nw.neutron_error(network.post("/v2.0/networks", json={"network": {
        "provider:network_type": "vlan", "provider:physical_network": "physnet0",
        "provider:segmentation_id": 7}}), 409, "VlanIdInUse")
    assert message == ("Unable to create the network. The VLAN 7 on physical network "
                       "physnet0 is in use.")
    nw.physnet(network, "vlan7-elsewhere", physnet_name="physnet1", vlan=7)
    nw.network(network, "t", **{"provider:network_type": "vxlan",
                             "provider:segmentation_id": 5000})
    nw.neutron_error(network.post("/v2.0/networks", json={"network": {
        "provider:network_type": "vxlan", "provider:segmentation_id": 5000}}),
        409, "TunnelIdInUse")
    assert len(network.get("/v2.0/networks").json()["networks"]) == 4


@pytest.mark.parametrize(("body", "message"), [
    ({"network": {"nmae": "x"}}, "Unrecognized attribute(s) 'nmae'"),
    ({"network": {"status": "DOWN"}}, "Attribute 'status' not allowed in POST"),
    ({"network": {"admin_state_up": "maybe"}},
     "Invalid input for admin_state_up. Reason: 'maybe' cannot be converted to boolean."),
    ({"network": {"mtu": "big"}}, "Invalid input for mtu. Reason: 'big' is not an integer."),
    ({"network": {"name": "x" * 256}}, "exceeds maximum length of 255"),
    ({"network": {"qos_policy_id": "nope"}}, "'nope' is not a valid UUID"),
    ({"netwrok": {}}, "Unable to find 'network' in request body"),
    ({}, "Resource body required"),
])
def test_malformed_network_bodies(network: httpx.Client, body: dict[str, Any],
                                  message: str) -> None:
    assert message in nw.neutron_error(network.post("/v2.0/networks", json=body),
                                    400, "HTTPBadRequest")
    assert network.get("/v2.0/networks").json()["networks"] == []


def test_not_json_is_refused(network: httpx.Client) -> None:
    resp = network.post("/v2.0/networks", content=b"{nope",
                        headers={"content-type": "application/json"})
    assert nw.neutron_error(resp, 400, "HTTPBadRequest") == "Malformed request body"
    resp = network.post("/v2.0/networks", content=b"{}", headers={"content-type": "text/plain"})
    assert resp.status_code == 415


def test_mtu_bounds(network: httpx.Client) -> None:
    message = nw.neutron_error(network.post("/v2.0/networks", json={"network": {"mtu": 1500}}),
                            400, "InvalidInput")
    assert "Requested MTU is too big, maximum is 1450" in message
    net = nw.physnet(network, mtu=1500)
    assert net["mtu"] == 1500


def test_list_filters_and_fields(network: httpx.Client) -> None:
    a = nw.network(network, "a")
    b = nw.network(network, "b", admin_state_up=False)
    nw.network(network, "c", shared=True)
    assert nw.ids(network.get("/v2.0/networks", params={"name": "b"}), "networks") == [b["id"]]
    both = network.get("/v2.0/networks", params=[("id", a["id"]), ("id", b["id"])])
    assert sorted(nw.ids(both, "networks")) == sorted([a["id"], b["id"]])
    assert nw.ids(network.get("/v2.0/networks", params={"admin_state_up": "false"}),
               "networks") == [b["id"]]
    shared = network.get("/v2.0/networks", params={"shared": "True"}).json()["networks"]
    assert [n["name"] for n in shared] == ["c"]
    slim = network.get("/v2.0/networks", params=[("fields", "id"), ("fields", "name"),
                                                  ("name", "a")]).json()["networks"]
    assert slim == [{"id": a["id"], "name": "a"}]
    message = nw.neutron_error(network.get("/v2.0/networks", params={"colour": "red"}),
                            400, "HTTPBadRequest")
    assert message == "[colour] is invalid attribute for filtering"


def test_pages_follow_next_links(network: httpx.Client) -> None:
    for name in "abcde":
        nw.network(network, name)
    seen: list[str] = []
    url: str | None = "/v2.0/networks?limit=2&sort_key=name&sort_dir=asc"
    while url:
        body = network.get(url).json()
        seen += [n["name"] for n in body["networks"]]
        links = [link["href"] for link in body.get("networks_links", [])
                 if link["rel"] == "next"]
        url = links[0] if links else None
    assert seen == list("abcde")


def test_if_match_compares_and_swaps_the_revision(network: httpx.Client) -> None:
    net = nw.network(network, "cas")
    url = f"/v2.0/networks/{net['id']}"
    stale = {"if-match": "revision_number=5"}
    message = nw.neutron_error(network.put(url, json={"network": {"name": "x"}}, headers=stale),
                            412, "HTTPPreconditionFailed")
    assert message == "Constrained to 5, but current revision is 0"
    ok = network.put(url, json={"network": {"name": "y"}},
                     headers={"if-match": "revision_number=0"})
    assert nw.made(ok, "network", 200)["revision_number"] == 1
    nw.neutron_error(network.delete(url, headers={"if-match": "revision_number=0"}),
                  412, "HTTPPreconditionFailed")
    assert network.get(url).json()["network"]["name"] == "y"
    nw.neutron_error(network.put(url, json={"network": {}}, headers={"if-match": "etag"}),
                  400, "HTTPBadRequest")
    assert network.delete(url, headers={"if-match": "revision_number=1"}).status_code == 204


def test_if_match_values_no_revision_can_have(network: httpx.Client) -> None:
    net = nw.network(network, "cas")
    url = f"/v2.0/networks/{net['id']}"
    # Beyond BIGINT: a 500 on SQLite, which cannot bind such an integer.
    huge = "9" * 30
    message = nw.neutron_error(network.put(url, json={"network": {"name": "x"}},
                                           headers={"if-match": f"revision_number={huge}"}),
                               412, "HTTPPreconditionFailed")
    assert message == f"Constrained to {huge}, but current revision is 0"
    # Header bytes read as Latin-1: b'\xb2' is '\u00b2', which passes str.isdigit() but
    # not int(): a 500 before.
    nw.neutron_error(network.delete(url, headers={"if-match": b"revision_number=\xb2"}), 400,
                     "HTTPBadRequest")
    assert network.get(url).json()["network"]["revision_number"] == 0


def test_provider_attributes_cannot_change(network: httpx.Client) -> None:
    net = nw.physnet(network, vlan=10)
    url = f"/v2.0/networks/{net['id']}"
    same = network.put(url, json={"network": {"provider:segmentation_id": 10}})
    assert same.status_code == 200
    message = nw.neutron_error(network.put(url, json={"network": {
        "provider:segmentation_id": 11}}), 400, "InvalidInput")
    assert "Plugin does not support updating provider attributes" in message


def test_network_in_use_until_its_ports_go(network: httpx.Client) -> None:
    net = nw.network(network)
    sub = nw.subnet(network, net["id"])
    dhcp = nw.port(network, net["id"], device_owner="network:dhcp")
    vm = nw.port(network, net["id"], device_owner="compute:nova")
    url = f"/v2.0/networks/{net['id']}"
    message = nw.neutron_error(network.delete(url), 409, "NetworkInUse")
    assert message == (f"Unable to complete operation on network {net['id']}. There are one "
                       "or more ports still in use on the network.")
    assert network.get(f"/v2.0/subnets/{sub['id']}").status_code == 200
    assert network.delete(f"/v2.0/ports/{vm['id']}").status_code == 204
    assert network.delete(url).status_code == 204
    for path in (f"/v2.0/ports/{dhcp['id']}", f"/v2.0/subnets/{sub['id']}"):
        assert network.get(path).status_code == 404


def test_subnet_lifecycle_and_defaults(network: httpx.Client) -> None:
    net = nw.network(network)
    sub = nw.subnet(network, net["id"], "10.0.4.0/24", name="s1", dns_nameservers=["8.8.8.8"])
    assert (sub["gateway_ip"], sub["allocation_pools"]) == \
        ("10.0.4.1", [{"start": "10.0.4.2", "end": "10.0.4.254"}])
    assert (sub["enable_dhcp"], sub["ip_version"], sub["dns_nameservers"]) == \
        (True, 4, ["8.8.8.8"])
    assert network.get(f"/v2.0/networks/{net['id']}").json()["network"]["subnets"] == \
        [sub["id"]]
    v6 = nw.subnet(network, net["id"], "2001:db8::/64", gateway_ip=None)
    assert v6["gateway_ip"] is None
    assert v6["allocation_pools"] == [{"start": "2001:db8::1",
                                       "end": "2001:db8::ffff:ffff:ffff:ffff"}]
    changed = nw.made(network.put(f"/v2.0/subnets/{sub['id']}", json={"subnet": {
        "name": "s1b", "allocation_pools": [{"start": "10.0.4.100", "end": "10.0.4.110"}],
        "enable_dhcp": False}}), "subnet", 200)
    assert (changed["name"], changed["enable_dhcp"], changed["revision_number"]) == \
        ("s1b", False, 1)
    assert changed["allocation_pools"] == [{"start": "10.0.4.100", "end": "10.0.4.110"}]
    listed = network.get("/v2.0/subnets", params={"network_id": net["id"], "ip_version": 6})
    assert nw.ids(listed, "subnets") == [v6["id"]]
    assert network.delete(f"/v2.0/subnets/{sub['id']}").status_code == 204
    nw.neutron_error(network.get(f"/v2.0/subnets/{sub['id']}"), 404, "SubnetNotFound")


@pytest.mark.parametrize(("fields", "status", "error_type", "reason"), [
    ({"cidr": "10.0.0.0/33"}, 400, "InvalidInput", "is not a valid IP subnet"),
    ({"cidr": "10.0.0.1/24"}, 400, "InvalidInput",
     "'10.0.0.1/24' isn't a recommended CIDR, use '10.0.0.0/24' instead"),
    ({"cidr": "10.0.0.0/24", "ip_version": 6}, 400, "InvalidInput", "does not match IP"),
    ({"cidr": "10.0.0.0/24", "ip_version": 5}, 400, "HTTPBadRequest", "'5' is not in [4, 6]"),
    ({"cidr": "10.0.0.0/24", "gateway_ip": "10.0.1.1"}, 400, "InvalidInput",
     "Gateway IP 10.0.1.1 is not valid on subnet"),
    ({"cidr": "10.0.0.0/24", "allocation_pools": [{"start": "10.0.0.2", "end": "10.0.1.9"}]},
     400, "OutOfBoundsAllocationPool", "spans beyond the subnet cidr 10.0.0.0/24"),
    ({"cidr": "10.0.0.0/24", "allocation_pools": [{"start": "10.0.0.1", "end": "10.0.0.9"}]},
     409, "GatewayConflictWithAllocationPools", "Gateway ip 10.0.0.1 conflicts"),
    ({"cidr": "10.0.0.0/24", "allocation_pools": [{"start": "10.0.0.2", "end": "10.0.0.9"},
                                                  {"start": "10.0.0.5", "end": "10.0.0.20"}]},
     409, "OverlappingAllocationPools", "Found overlapping allocation pools"),
    ({"cidr": "10.0.0.0/24", "allocation_pools": [{"start": "10.0.0.9"}]},
     400, "HTTPBadRequest", "Invalid data format for IP pool"),
    ({"cidr": "10.0.0.0/24", "dns_nameservers": ["dns.example"]}, 400, "HTTPBadRequest",
     "'dns.example' is not a valid nameserver"),
    ({"ip_version": 4}, 400, "BadRequest", "a subnetpool must be specified"),
])
def test_bad_subnets_change_nothing(network: httpx.Client, fields: dict[str, Any],
                                    status: int, error_type: str, reason: str) -> None:
    net = nw.network(network)
    body = {"subnet": {"network_id": net["id"], "ip_version": 4, **fields}}
    assert reason in nw.neutron_error(network.post("/v2.0/subnets", json=body), status,
                                   error_type)
    assert network.get("/v2.0/subnets").json()["subnets"] == []
    assert network.get(f"/v2.0/networks/{net['id']}").json()["network"]["revision_number"] == 0


def test_overlapping_subnets_on_one_network(network: httpx.Client) -> None:
    net, other = nw.network(network, "a"), nw.network(network, "b")
    nw.subnet(network, net["id"], "10.0.0.0/24")
    message = nw.neutron_error(network.post("/v2.0/subnets", json={"subnet": {
        "network_id": net["id"], "cidr": "10.0.0.128/25", "ip_version": 4}}),
        400, "InvalidInput")
    assert "overlaps with another subnet" in message
    nw.subnet(network, other["id"], "10.0.0.0/24")
    nw.neutron_error(network.post("/v2.0/subnets", json={"subnet": {
        "network_id": str(uuid.uuid4()), "cidr": "10.9.0.0/24", "ip_version": 4}}),
        404, "NetworkNotFound")


def test_subnet_in_use(network: httpx.Client) -> None:
    net = nw.network(network)
    sub = nw.subnet(network, net["id"])
    vm = nw.port(network, net["id"])
    message = nw.neutron_error(network.delete(f"/v2.0/subnets/{sub['id']}"), 409, "SubnetInUse")
    assert "One or more ports have an IP allocation from this subnet" in message
    network.delete(f"/v2.0/ports/{vm['id']}")
    assert network.delete(f"/v2.0/subnets/{sub['id']}").status_code == 204


def test_projects_see_their_own_and_shared_networks(live_stowage: LiveServer,
                                                    network: httpx.Client) -> None:
    shared = nw.network(network, "public", shared=True)
    nw.network(network, "admins")
    with api_client(f"{live_stowage.url}/network", token="demo:p1", roles=MEMBER) as demo:
        mine = nw.network(demo, "mine")
        assert mine["project_id"] == "p1"
        assert "provider:network_type" not in mine
        names = {n["name"] for n in demo.get("/v2.0/networks").json()["networks"]}
        assert names == {"public", "mine"}
        nw.neutron_error(demo.put(f"/v2.0/networks/{shared['id']}",
                               json={"network": {"name": "x"}}), 403, "PolicyNotAuthorized")
        nw.neutron_error(demo.post("/v2.0/subnets", json={"subnet": {
            "network_id": shared["id"], "cidr": "10.0.0.0/24", "ip_version": 4}}),
            403, "PolicyNotAuthorized")
        message = nw.neutron_error(demo.post("/v2.0/networks", json={"network": {
            "provider:network_type": "flat", "provider:physical_network": "p"}}),
            403, "PolicyNotAuthorized")
        assert "create_network:provider:network_type" in message
        nw.neutron_error(demo.post("/v2.0/networks", json={"network": {"shared": True}}),
                      403, "PolicyNotAuthorized")
        other = demo.post("/v2.0/networks", json={"network": {"project_id": "p2"}})
        assert "requires admin privileges" in nw.neutron_error(other, 400, "HTTPBadRequest")
    with api_client(f"{live_stowage.url}/network", token="demo:p2", roles=MEMBER) as stranger:
        nw.neutron_error(stranger.get(f"/v2.0/networks/{mine['id']}"), 404, "NetworkNotFound")
        nw.neutron_error(stranger.delete(f"/v2.0/networks/{mine['id']}"), 404, "NetworkNotFound")


def test_unsharing_a_network_other_projects_use(live_stowage: LiveServer,
                                                network: httpx.Client) -> None:
    net = nw.network(network, "public", shared=True)
    with api_client(f"{live_stowage.url}/network", token="demo:p1", roles=MEMBER) as demo:
        nw.port(demo, net["id"])
    nw.neutron_error(network.put(f"/v2.0/networks/{net['id']}",
                              json={"network": {"shared": False}}),
                  409, "InvalidSharedSetting")


def test_unknown_paths_and_methods(network: httpx.Client) -> None:
    nw.neutron_error(network.get("/v2.0/trunks"), 404, "HTTPNotFound")
    nw.neutron_error(network.patch("/v2.0/networks", json={}), 405, "HTTPMethodNotAllowed")


def _at_once(count: int, work: Any) -> list[httpx.Response]:
    """`count` threads released together, each calling `work(index)` once."""
    start = threading.Barrier(count)
    results: list[httpx.Response] = []

    def run(index: int) -> None:
        start.wait()
        results.append(work(index))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    return results


def test_concurrent_tenant_networks_get_distinct_ids(live_stowage: LiveServer,
                                                     network: httpx.Client) -> None:
    def create(index: int) -> httpx.Response:
        with api_client(f"{live_stowage.url}/network") as client:
            return client.post("/v2.0/networks", json={"network": {"name": f"n{index}"}})

    results = _at_once(8, create)
    assert [r.status_code for r in results] == [201] * 8, [r.text for r in results]
    vnis = sorted(r.json()["network"]["provider:segmentation_id"] for r in results)
    assert vnis == list(range(1, 9))


def test_network_deleted_while_ports_are_created(live_stowage: LiveServer,
                                                 network: httpx.Client) -> None:
    net = nw.network(network)
    nw.subnet(network, net["id"])

    def act(index: int) -> httpx.Response:
        with api_client(f"{live_stowage.url}/network") as client:
            if index == 0:
                return client.delete(f"/v2.0/networks/{net['id']}")
            return client.post("/v2.0/ports", json={"port": {"network_id": net["id"]}})

    results = _at_once(6, act)
    assert all(r.status_code in (201, 204, 404, 409) for r in results), \
        [r.text for r in results]
    ports = network.get("/v2.0/ports").json()["ports"]
    exists = network.get(f"/v2.0/networks/{net['id']}").status_code == 200
    created = [r for r in results if r.request.method == "POST" and r.status_code == 201]
    assert len(ports) == (len(created) if exists else 0)
    assert exists == bool(created)
