"""The stock `openstack` CLI's network, subnet, port and QoS commands against `stowage serve`.

Configured as the README tells a user to: a token and endpoint overrides,
`OS_NETWORK_ENDPOINT_OVERRIDE` among them; no Keystone anywhere.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tests.functional.conftest import LiveServer, serving
from tests.functional.osc import needs_osc, osc

pytestmark = needs_osc


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with serving("sqlite") as live:  # every service mounted, as plain `stowage serve`
        yield live


def _qos_with_bandwidth(server: LiveServer) -> dict[str, str]:
    """A QoS policy `qp0` with 1000 kbps egress and 2000 kbps ingress; rule id per direction."""
    osc(server, "network", "qos", "policy", "create", "qp0")
    rules = {}
    for direction, kbps in (("--egress", "1000"), ("--ingress", "2000")):
        rule = osc(server, "network", "qos", "rule", "create", "--type", "minimum-bandwidth",
                   "--min-kbps", kbps, direction, "qp0")
        assert (rule["min_kbps"], rule["direction"]) == (int(kbps), direction[2:])
        rules[direction[2:]] = rule["id"]
    listed = osc(server, "network", "qos", "rule", "list", "qp0")
    assert sorted((r["Type"], r["Min Kbps"]) for r in listed) == \
        [("minimum_bandwidth", 1000), ("minimum_bandwidth", 2000)]
    assert [p["Name"] for p in osc(server, "network", "qos", "policy", "list")] == ["qp0"]
    assert osc(server, "network", "qos", "rule", "type", "list") == \
        [{"Type": "minimum_bandwidth"}]
    return rules


def test_qos_port_on_a_physnet(server: LiveServer) -> None:
    net = osc(server, "network", "create", "net0", "--provider-network-type", "vlan",
              "--provider-physical-network", "physnet0", "--provider-segment", "100")
    assert (net["provider:physical_network"], net["provider:segmentation_id"]) == \
        ("physnet0", 100)
    sub = osc(server, "subnet", "create", "sub0", "--network", "net0",
              "--subnet-range", "10.0.4.0/24")
    assert (sub["gateway_ip"], sub["network_id"]) == ("10.0.4.1", net["id"])
    rules = _qos_with_bandwidth(server)
    port = osc(server, "port", "create", "port0", "--network", "net0", "--vnic-type",
               "direct", "--qos-policy", "qp0", "--host", "compute1",
               "--binding-profile", "trusted=true",
               "--fixed-ip", "subnet=sub0,ip-address=10.0.4.10")
    assert port["fixed_ips"] == [{"subnet_id": sub["id"], "ip_address": "10.0.4.10"}]
    assert (port["binding_vnic_type"], port["binding_host_id"], port["binding_vif_type"]) == \
        ("direct", "compute1", "hw_veb")
    shown = osc(server, "port", "show", "port0", "-c", "resource_request")
    group = str(uuid.uuid5(uuid.UUID(port["id"]), ":".join(sorted(rules.values()))))
    assert shown["resource_request"] == {
        "request_groups": [{"id": group,
                            "required": ["CUSTOM_PHYSNET_PHYSNET0", "CUSTOM_VNIC_TYPE_DIRECT"],
                            "resources": {"NET_BW_EGR_KILOBIT_PER_SEC": 1000,
                                          "NET_BW_IGR_KILOBIT_PER_SEC": 2000}}],
        "same_subtree": [group]}
    listed = osc(server, "port", "list", "--network", "net0")
    assert [(p["Name"], p["Status"]) for p in listed] == [("port0", "ACTIVE")]

    osc(server, "port", "set", "port0", "--name", "port1", "--binding-profile", "k=v",
        "--fixed-ip", "subnet=sub0", json_out=False)
    changed = osc(server, "port", "show", "port1")
    assert changed["binding_profile"] == {"trusted": "true", "k": "v"}
    assert sorted(ip["ip_address"] for ip in changed["fixed_ips"]) == \
        ["10.0.4.10", "10.0.4.2"]
    osc(server, "port", "unset", "port1", "--binding-profile", "trusted", "--qos-policy",
        "--fixed-ip", f"subnet={sub['id']},ip-address=10.0.4.10", json_out=False)
    unset = osc(server, "port", "show", "port1")
    assert (unset["binding_profile"], unset["qos_policy_id"], unset["resource_request"]) == \
        ({"k": "v"}, None, None)
    assert [ip["ip_address"] for ip in unset["fixed_ips"]] == ["10.0.4.2"]

    osc(server, "network", "qos", "rule", "delete", "qp0", rules["ingress"], json_out=False)
    assert len(osc(server, "network", "qos", "rule", "list", "qp0")) == 1
    osc(server, "port", "delete", "port1", json_out=False)
    osc(server, "subnet", "delete", "sub0", json_out=False)
    osc(server, "network", "delete", "net0", json_out=False)
    osc(server, "network", "qos", "policy", "delete", "qp0", json_out=False)
    assert osc(server, "port", "list") == []
    assert osc(server, "subnet", "list") == []
    assert osc(server, "network", "list") == []
    assert osc(server, "network", "qos", "policy", "list") == []


def test_network_and_subnet_commands(server: LiveServer) -> None:
    made = osc(server, "network", "create", "tenant", "--description", "overlay")
    assert (made["provider:network_type"], made["mtu"]) == ("vxlan", 1450)
    osc(server, "network", "set", "tenant", "--name", "tenant2", "--disable", json_out=False)
    shown = osc(server, "network", "show", "tenant2")
    assert (shown["admin_state_up"], shown["description"]) == (False, "overlay")
    osc(server, "subnet", "create", "v6", "--network", "tenant2", "--ip-version", "6",
        "--subnet-range", "2001:db8::/64")
    assert [s["Subnet"] for s in osc(server, "subnet", "list", "--network", "tenant2")] == \
        ["2001:db8::/64"]
    assert osc(server, "subnet", "show", "v6")["ip_version"] == 6
    assert [n["Name"] for n in osc(server, "network", "list")] == ["tenant2"]
    osc(server, "subnet", "delete", "v6", json_out=False)
    osc(server, "network", "delete", "tenant2", json_out=False)
    assert osc(server, "network", "list") == []


def test_router_and_floating_ip(server: LiveServer) -> None:
    """The tutorial's network part: an external network, a router to it, a floating IP."""
    public = osc(server, "network", "create", "public0", "--external")
    assert public["router:external"] is True
    osc(server, "subnet", "create", "public0-sub", "--network", "public0",
        "--subnet-range", "172.24.8.0/24")
    osc(server, "network", "create", "private0")
    osc(server, "subnet", "create", "private0-sub", "--network", "private0",
        "--subnet-range", "10.0.8.0/24")
    router = osc(server, "router", "create", "router0")
    osc(server, "router", "set", "router0", "--external-gateway", "public0",
        json_out=False)
    osc(server, "router", "add", "subnet", "router0", "private0-sub", json_out=False)
    shown = osc(server, "router", "show", "router0")
    assert shown["id"] == router["id"]
    assert shown["external_gateway_info"]["network_id"] == public["id"]
    port = osc(server, "port", "create", "vm0-port", "--network", "private0")
    fip = osc(server, "floating", "ip", "create", "public0", "--port", "vm0-port")
    assert (fip["port_id"], fip["fixed_ip_address"], fip["router_id"]) == \
        (port["id"], "10.0.8.2", router["id"])
    listed = osc(server, "floating", "ip", "list")
    assert [f["Floating IP Address"] for f in listed] == [fip["floating_ip_address"]]
    osc(server, "floating", "ip", "unset", "--port", fip["id"], json_out=False)
    osc(server, "floating", "ip", "delete", fip["id"], json_out=False)
    osc(server, "router", "remove", "subnet", "router0", "private0-sub", json_out=False)
    osc(server, "router", "delete", "router0", json_out=False)
    assert osc(server, "router", "list") == []
