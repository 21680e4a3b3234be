"""QoS policies, minimum-bandwidth rules and the port's `resource_request`, over HTTP,
in the current (`groups`) format and in the legacy one."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from stowage.config import NetworkSettings
from stowage.network import resource_request
from tests.conftest import BACKENDS
from tests.functional import networking as nw
from tests.functional.conftest import MEMBER, LiveServer, api_client, serving

RULES = "minimum_bandwidth_rules"


def _rules_url(policy: dict[str, Any]) -> str:
    return f"/v2.0/qos/policies/{policy['id']}/{RULES}"


def _group_id(port_id: str, policy: dict[str, Any]) -> str:
    """Neutron's group id, computed here independently of the service."""
    name = ":".join(sorted(rule["id"] for rule in policy["rules"]))
    return str(uuid.uuid5(uuid.UUID(port_id), name))


def test_policy_lifecycle(network: httpx.Client) -> None:
    made = nw.made(network.post("/v2.0/qos/policies", json={"policy": {
        "name": "gold", "description": "bw", "shared": True}}), "policy")
    assert (made["name"], made["shared"], made["rules"], made["revision_number"]) == \
        ("gold", True, [], 0)
    assert network.get(f"/v2.0/qos/policies/{made['id']}").json()["policy"] == made
    assert nw.ids(network.get("/v2.0/qos/policies", params={"name": "gold"}), "policies") \
        == [made["id"]]
    changed = nw.made(network.put(f"/v2.0/qos/policies/{made['id']}", json={"policy": {
        "name": "silver", "shared": False}}), "policy", 200)
    assert (changed["name"], changed["shared"], changed["revision_number"]) == \
        ("silver", False, 1)
    assert network.delete(f"/v2.0/qos/policies/{made['id']}").status_code == 204
    message = nw.neutron_error(network.get(f"/v2.0/qos/policies/{made['id']}"), 404,
                               "QosPolicyNotFound")
    assert message == f"QoS policy {made['id']} could not be found."


def test_rules_lifecycle(network: httpx.Client) -> None:
    policy = nw.qos_policy(network)
    egress = nw.made(network.post(_rules_url(policy), json={"minimum_bandwidth_rule": {
        "min_kbps": 1000}}), "minimum_bandwidth_rule")
    assert (egress["direction"], egress["min_kbps"]) == ("egress", 1000)
    assert egress.keys() == {"id", "min_kbps", "direction"}
    ingress = nw.made(network.post(_rules_url(policy), json={"minimum_bandwidth_rule": {
        "min_kbps": 2000, "direction": "ingress"}}), "minimum_bandwidth_rule")
    message = nw.neutron_error(network.post(_rules_url(policy), json={
        "minimum_bandwidth_rule": {"min_kbps": 5, "direction": "ingress"}}),
        409, "QoSRulesConflict")
    assert message == (f"Rule minimum_bandwidth conflicts with rule {ingress['id']} which "
                       f"already exists in QoS Policy {policy['id']}.")
    listed = network.get(_rules_url(policy)).json()[RULES]
    assert sorted(r["id"] for r in listed) == sorted([egress["id"], ingress["id"]])
    shown = network.get(f"/v2.0/qos/policies/{policy['id']}").json()["policy"]["rules"]
    assert {(r["type"], r["qos_policy_id"]) for r in shown} == \
        {("minimum_bandwidth", policy["id"])}
    one = f"{_rules_url(policy)}/{egress['id']}"
    assert network.get(one).json()["minimum_bandwidth_rule"] == egress
    bigger = nw.made(network.put(one, json={"minimum_bandwidth_rule": {"min_kbps": 1500}}),
                     "minimum_bandwidth_rule", 200)
    assert bigger["min_kbps"] == 1500
    nw.neutron_error(network.put(one, json={"minimum_bandwidth_rule": {
        "direction": "ingress"}}), 409, "QoSRulesConflict")
    assert network.delete(one).status_code == 204
    message = nw.neutron_error(network.get(one), 404, "QosRuleNotFound")
    assert message == f"QoS rule {egress['id']} for policy {policy['id']} could not be found."
    assert network.get(f"/v2.0/qos/policies/{policy['id']}").json()["policy"][
        "revision_number"] == 4


@pytest.mark.parametrize("rule", [
    {"min_kbps": -1}, {"min_kbps": "lots"}, {"min_kbps": 2**31},
    {"min_kbps": 10, "direction": "any"}, {"direction": "egress"},
    {"min_kbps": 10, "max_kbps": 20},
])
def test_bad_rules_change_nothing(network: httpx.Client, rule: dict[str, Any]) -> None:
    policy = nw.qos_policy(network)
    nw.neutron_error(network.post(_rules_url(policy), json={"minimum_bandwidth_rule": rule}),
                     400, "HTTPBadRequest")
    assert network.get(_rules_url(policy)).json()[RULES] == []


def test_rule_of_another_policy_is_not_found(network: httpx.Client) -> None:
    first, second = nw.qos_policy(network, "a", egress=10), nw.qos_policy(network, "b")
    rule_id = first["rules"][0]["id"]
    nw.neutron_error(network.get(f"{_rules_url(second)}/{rule_id}"), 404, "QosRuleNotFound")
    nw.neutron_error(network.delete(f"{_rules_url(second)}/{rule_id}"), 404,
                     "QosRuleNotFound")
    nw.neutron_error(network.get(f"/v2.0/qos/policies/{uuid.uuid4()}/{RULES}"), 404,
                     "QosPolicyNotFound")


def test_rule_types(network: httpx.Client) -> None:
    assert network.get("/v2.0/qos/rule-types").json() == \
        {"rule_types": [{"type": "minimum_bandwidth"}]}
    detail = network.get("/v2.0/qos/rule-types/minimum_bandwidth").json()["rule_type"]
    assert {d["name"] for d in detail["drivers"]} == {"openvswitch", "sriovnicswitch"}
    nw.neutron_error(network.get("/v2.0/qos/rule-types/dscp_marking"), 404,
                     "QosRuleTypeNotFound")


def test_qos_writes_are_admin_only(live_stowage: LiveServer, network: httpx.Client) -> None:
    shared = nw.made(network.post("/v2.0/qos/policies", json={"policy": {
        "name": "shared", "shared": True}}), "policy")
    private = nw.qos_policy(network, "private", egress=10)
    with api_client(f"{live_stowage.url}/network", token="demo:p1", roles=MEMBER) as demo:
        nw.neutron_error(demo.post("/v2.0/qos/policies", json={"policy": {"name": "x"}}),
                         403, "PolicyNotAuthorized")
        nw.neutron_error(demo.post(_rules_url(shared), json={"minimum_bandwidth_rule": {
            "min_kbps": 1}}), 403, "PolicyNotAuthorized")
        nw.neutron_error(demo.delete(f"/v2.0/qos/policies/{shared['id']}"), 403,
                         "PolicyNotAuthorized")
        assert nw.ids(demo.get("/v2.0/qos/policies"), "policies") == [shared["id"]]
        nw.neutron_error(demo.get(f"/v2.0/qos/policies/{private['id']}"), 404,
                         "QosPolicyNotFound")
        net = nw.network(demo)
        nw.neutron_error(demo.post("/v2.0/ports", json={"port": {
            "network_id": net["id"], "qos_policy_id": private["id"]}}), 404,
            "QosPolicyNotFound")
        assert nw.port(demo, net["id"], qos_policy_id=shared["id"])["qos_policy_id"] == \
            shared["id"]


def test_policy_in_use_cannot_be_deleted(network: httpx.Client) -> None:
    policy = nw.qos_policy(network, egress=10)
    net = nw.network(network, qos_policy_id=policy["id"])
    url = f"/v2.0/qos/policies/{policy['id']}"
    message = nw.neutron_error(network.delete(url), 409, "QosPolicyInUse")
    assert message == f"QoS Policy {policy['id']} is used by network {net['id']}."
    network.put(f"/v2.0/networks/{net['id']}", json={"network": {"qos_policy_id": None}})
    port = nw.port(network, net["id"], qos_policy_id=policy["id"])
    message = nw.neutron_error(network.delete(url), 409, "QosPolicyInUse")
    assert message == f"QoS Policy {policy['id']} is used by port {port['id']}."
    assert network.get(url).status_code == 200
    network.delete(f"/v2.0/ports/{port['id']}")
    assert network.delete(url).status_code == 204


def test_resource_request_groups(network: httpx.Client) -> None:
    policy = nw.qos_policy(network, egress=1000, ingress=2000)
    net = nw.physnet(network, physnet_name="phys-net.1", vlan=100)
    port = nw.port(network, net["id"], qos_policy_id=policy["id"],
                   **{"binding:vnic_type": "direct-physical"})
    group = _group_id(port["id"], policy)
    assert port["resource_request"] == {
        "request_groups": [{"id": group,
                            "required": ["CUSTOM_PHYSNET_PHYS_NET_1",
                                         "CUSTOM_VNIC_TYPE_DIRECT_PHYSICAL"],
                            "resources": {"NET_BW_EGR_KILOBIT_PER_SEC": 1000,
                                          "NET_BW_IGR_KILOBIT_PER_SEC": 2000}}],
        "same_subtree": [group]}
    listed = network.get("/v2.0/ports", params={"id": port["id"]}).json()["ports"][0]
    assert listed["resource_request"] == port["resource_request"]
    read = resource_request.read(port["id"], port["resource_request"])
    assert [g.requester_id for g in read.groups] == [group]
    assert read.same_subtree == (group,)


def test_group_id_follows_the_rules_not_their_values(network: httpx.Client) -> None:
    policy = nw.qos_policy(network, egress=1000)
    net = nw.physnet(network)
    port = nw.port(network, net["id"], qos_policy_id=policy["id"])
    first = port["resource_request"]["request_groups"][0]["id"]
    rule_url = f"{_rules_url(policy)}/{policy['rules'][0]['id']}"
    network.put(rule_url, json={"minimum_bandwidth_rule": {"min_kbps": 3000}})
    again = network.get(f"/v2.0/ports/{port['id']}").json()["port"]["resource_request"]
    assert again["request_groups"][0]["id"] == first
    assert again["request_groups"][0]["resources"] == {"NET_BW_EGR_KILOBIT_PER_SEC": 3000}
    network.post(_rules_url(policy), json={"minimum_bandwidth_rule": {
        "min_kbps": 5, "direction": "ingress"}})
    grown = network.get(f"/v2.0/ports/{port['id']}").json()["port"]["resource_request"]
    assert grown["request_groups"][0]["id"] != first


def test_network_policy_applies_unless_the_port_has_its_own(network: httpx.Client) -> None:
    on_network = nw.qos_policy(network, "net", egress=100)
    on_port = nw.qos_policy(network, "port", ingress=200)
    without_rules = nw.qos_policy(network, "empty")
    net = nw.physnet(network, qos_policy_id=on_network["id"])
    inherits = nw.port(network, net["id"])
    assert (inherits["qos_policy_id"], inherits["qos_network_policy_id"]) == \
        (None, on_network["id"])
    assert inherits["resource_request"]["request_groups"][0]["resources"] == \
        {"NET_BW_EGR_KILOBIT_PER_SEC": 100}
    own = nw.port(network, net["id"], qos_policy_id=on_port["id"])
    assert own["resource_request"]["request_groups"][0]["resources"] == \
        {"NET_BW_IGR_KILOBIT_PER_SEC": 200}
    assert nw.port(network, net["id"], qos_policy_id=without_rules["id"])[
        "resource_request"] is None


def test_tunnel_networks_ask_for_a_tunnel_provider(network: httpx.Client) -> None:
    policy = nw.qos_policy(network, egress=100)
    port = nw.port(network, nw.network(network)["id"], qos_policy_id=policy["id"])
    assert port["resource_request"]["request_groups"][0]["required"] == \
        ["CUSTOM_NETWORK_TUNNEL_PROVIDER", "CUSTOM_VNIC_TYPE_NORMAL"]


def test_resource_request_is_admin_only(live_stowage: LiveServer,
                                        network: httpx.Client) -> None:
    policy = nw.made(network.post("/v2.0/qos/policies", json={"policy": {
        "name": "shared", "shared": True}}), "policy")
    network.post(_rules_url(policy), json={"minimum_bandwidth_rule": {"min_kbps": 10}})
    net = nw.physnet(network, shared=True)
    with api_client(f"{live_stowage.url}/network", token="demo:p1", roles=MEMBER) as demo:
        port = nw.port(demo, net["id"], qos_policy_id=policy["id"])
        assert "resource_request" not in port
    assert network.get(f"/v2.0/ports/{port['id']}").json()["port"]["resource_request"]


def test_rules_in_use_by_a_server_port_are_frozen(network: httpx.Client) -> None:
    policy = nw.qos_policy(network, egress=1000)
    net = nw.physnet(network, qos_policy_id=policy["id"])
    nw.port(network, net["id"], device_owner=nw.COMPUTE, device_id="vm1")
    rule_url = f"{_rules_url(policy)}/{policy['rules'][0]['id']}"
    message = nw.neutron_error(network.put(rule_url, json={"minimum_bandwidth_rule": {
        "min_kbps": 5}}), 501, "NotImplementedError")
    assert message == "Cannot update QoS policies/rules backed by resources tracked in " \
                      "Placement"
    nw.neutron_error(network.delete(rule_url), 501, "NotImplementedError")
    nw.neutron_error(network.post(_rules_url(policy), json={"minimum_bandwidth_rule": {
        "min_kbps": 5, "direction": "ingress"}}), 501, "NotImplementedError")
    assert network.get(f"/v2.0/qos/policies/{policy['id']}").json()["policy"]["rules"] == \
        policy["rules"]


def test_placed_port_keeps_its_bandwidth(network: httpx.Client) -> None:
    small, big = nw.qos_policy(network, "small", egress=10), nw.qos_policy(network, "big",
                                                                           egress=99)
    same = nw.qos_policy(network, "same", egress=10)
    net = nw.physnet(network)
    port = nw.port(network, net["id"], qos_policy_id=small["id"],
                   **{"binding:profile": {"allocation": str(uuid.uuid4())}})
    url = f"/v2.0/ports/{port['id']}"
    nw.neutron_error(network.put(url, json={"port": {"qos_policy_id": big["id"]}}),
                     501, "NotImplementedError")
    assert network.get(url).json()["port"]["qos_policy_id"] == small["id"]
    moved = network.put(url, json={"port": {"qos_policy_id": same["id"]}})
    assert nw.made(moved, "port", 200)["qos_policy_id"] == same["id"]


@pytest.fixture(scope="module", params=BACKENDS)
def legacy(request: pytest.FixtureRequest) -> Iterator[LiveServer]:
    """The Network service alone at `/`, rendering resource requests the legacy way."""
    settings = NetworkSettings(resource_request_format="legacy")
    with serving(request.param, ("network",), network=settings) as live:
        yield live


def test_legacy_resource_request(legacy: LiveServer) -> None:
    with api_client(legacy.url) as client:
        aliases = {e["alias"] for e in client.get("/v2.0/extensions").json()["extensions"]}
        assert "port-resource-request" in aliases
        assert "port-resource-request-groups" not in aliases
        policy = nw.qos_policy(client, egress=1000, ingress=2000)
        net = nw.physnet(client, physnet_name="physnet0")
        port = nw.port(client, net["id"], qos_policy_id=policy["id"],
                       **{"binding:vnic_type": "direct"})
        assert port["resource_request"] == {
            "required": ["CUSTOM_PHYSNET_PHYSNET0", "CUSTOM_VNIC_TYPE_DIRECT"],
            "resources": {"NET_BW_EGR_KILOBIT_PER_SEC": 1000,
                          "NET_BW_IGR_KILOBIT_PER_SEC": 2000}}
        read = resource_request.read(port["id"], port["resource_request"])
        assert [(g.requester_id, dict(g.resources)) for g in read.groups] == \
            [(port["id"], {"NET_BW_EGR_KILOBIT_PER_SEC": 1000,
                           "NET_BW_IGR_KILOBIT_PER_SEC": 2000})]
        tunnelled = nw.port(client, nw.network(client)["id"], qos_policy_id=policy["id"])
        assert tunnelled["resource_request"] is None
