"""Security groups and rules over the Networking API: the default group, CRUD, rule
checks, duplicates, groups of ports, and who may do what."""

from __future__ import annotations

import httpx

from tests.functional import networking as nw
from tests.functional.conftest import MEMBER, LiveServer, api_client
from tests.functional.test_network_ports import _race

SG = "/v2.0/security-groups"
RULES = "/v2.0/security-group-rules"


def _group(client: httpx.Client, name: str = "web", **fields: object) -> dict[str, object]:
    return nw.made(client.post(SG, json={"security_group": {"name": name, **fields}}),
                   "security_group")


def _rule(client: httpx.Client, group_id: object, **fields: object) -> httpx.Response:
    return client.post(RULES, json={"security_group_rule": {
        "security_group_id": group_id, "direction": "ingress", **fields}})


def _shape(rule: dict[str, object]) -> tuple[object, ...]:
    return (rule["direction"], rule["ethertype"], rule["remote_group_id"] is not None)


def test_default_group_and_group_lifecycle(live_stowage: LiveServer,
                                           network: httpx.Client) -> None:
    with api_client(f"{live_stowage.url}/network", token="demo:p1", roles=MEMBER) as demo:
        listed = demo.get(SG).json()["security_groups"]
        assert [g["name"] for g in listed] == ["default"]
        default = listed[0]
        assert default["project_id"] == "p1"
        assert sorted(_shape(r) for r in default["security_group_rules"]) == [
            ("egress", "IPv4", False), ("egress", "IPv6", False),
            ("ingress", "IPv4", True), ("ingress", "IPv6", True)]
        # Listing again makes no second default group.
        assert nw.ids(demo.get(SG), "security_groups") == [default["id"]]
        made = _group(demo, "web", description="d")
        assert (made["name"], made["description"], made["revision_number"]) == ("web", "d", 0)
        assert sorted(_shape(r) for r in made["security_group_rules"]) == [
            ("egress", "IPv4", False), ("egress", "IPv6", False)]
        changed = nw.made(demo.put(f"{SG}/{made['id']}", json={"security_group": {
            "name": "web2"}}), "security_group", 200)
        assert (changed["name"], changed["revision_number"]) == ("web2", 1)
        nw.neutron_error(demo.post(SG, json={"security_group": {"name": "Default"}}), 409,
                         "SecurityGroupDefaultAlreadyExists")
        nw.neutron_error(demo.put(f"{SG}/{default['id']}", json={"security_group": {
            "name": "x"}}), 409, "SecurityGroupCannotUpdateDefault")
        nw.neutron_error(demo.delete(f"{SG}/{default['id']}"), 409,
                         "SecurityGroupCannotRemoveDefault")
        with api_client(f"{live_stowage.url}/network", token="demo:p2", roles=MEMBER) as stranger:
            nw.neutron_error(stranger.get(f"{SG}/{made['id']}"), 404, "SecurityGroupNotFound")
            nw.neutron_error(stranger.delete(f"{SG}/{made['id']}"), 404,
                             "SecurityGroupNotFound")
            assert made["id"] not in nw.ids(stranger.get(SG), "security_groups")
        assert demo.delete(f"{SG}/{made['id']}").status_code == 204
        nw.neutron_error(demo.get(f"{SG}/{made['id']}"), 404, "SecurityGroupNotFound")
    # An admin sees every project's groups and may filter by project.
    assert default["id"] in nw.ids(network.get(SG, params={"project_id": "p1"}),
                                   "security_groups")


def test_rule_checks_and_duplicates(network: httpx.Client) -> None:
    group = _group(network)
    gid = group["id"]
    rule = nw.made(_rule(network, gid, protocol="TCP", port_range_min=22, port_range_max=22,
                         remote_ip_prefix="10.0.0.0/8"), "security_group_rule")
    assert (rule["protocol"], rule["port_range_min"], rule["ethertype"]) == ("tcp", 22, "IPv4")
    # A prefix with host bits is kept as given, and is the same rule as its network's.
    hosty = nw.made(_rule(network, gid, protocol="udp", port_range_min=53, port_range_max=53,
                          remote_ip_prefix="10.1.2.3/16"), "security_group_rule")
    assert hosty["remote_ip_prefix"] == "10.1.2.3/16"
    nw.neutron_error(_rule(network, gid, protocol="udp", port_range_min=53, port_range_max=53,
                           remote_ip_prefix="10.1.0.0/16"), 409, "SecurityGroupRuleExists")
    assert network.get(f"{SG}/{gid}").json()["security_group"]["revision_number"] == 2
    nw.neutron_error(_rule(network, gid, protocol="6", port_range_min=22, port_range_max=22,
                           remote_ip_prefix="10.0.0.0/8"), 409, "SecurityGroupRuleExists")
    refused = [
        (dict(protocol="tcp", port_range_min=30, port_range_max=20), 400,
         "SecurityGroupInvalidPortRange"),
        (dict(protocol="udp", port_range_min=0, port_range_max=20), 400,
         "SecurityGroupInvalidPortValue"),
        (dict(port_range_min=1, port_range_max=2), 400,
         "SecurityGroupProtocolRequiredWithPorts"),
        (dict(protocol="icmp", port_range_min=300), 400, "SecurityGroupInvalidIcmpValue"),
        (dict(protocol="icmp", port_range_max=3), 400, "SecurityGroupMissingIcmpType"),
        (dict(protocol="gre", port_range_min=1, port_range_max=2), 400,
         "SecurityGroupInvalidProtocolForPortRange"),
        (dict(protocol="bogus"), 400, "SecurityGroupRuleInvalidProtocol"),
        (dict(ethertype="IPv5"), 400, "SecurityGroupRuleInvalidEtherType"),
        (dict(ethertype="IPv6", remote_ip_prefix="10.0.0.0/8"), 400,
         "SecurityGroupRuleParameterConflict"),
        (dict(remote_ip_prefix="10.0.0.0/8", remote_group_id=gid), 400,
         "SecurityGroupRemoteGroupAndRemoteIpPrefix"),
        (dict(remote_ip_prefix="10.0.0.1"), 400, "HTTPBadRequest"),
        (dict(remote_group_id="3b1d1a0e-0d5e-4d8a-9d6b-1f1f1f1f1f1f"), 404,
         "SecurityGroupNotFound"),
        (dict(direction="sideways"), 400, "HTTPBadRequest"),
        (dict(protocol="tcp", port_range_min=-16), 400, "SecurityGroupInvalidPortValue"),
        (dict(remote_group_id="bad_group_id"), 404, "SecurityGroupNotFound"),
    ]
    for fields, status, error_type in refused:
        nw.neutron_error(_rule(network, gid, **fields), status, error_type)
    after = network.get(f"{SG}/{gid}").json()["security_group"]
    assert len(after["security_group_rules"]) == 4  # two egress defaults, TCP and UDP
    assert network.delete(f"{RULES}/{rule['id']}").status_code == 204
    nw.neutron_error(network.get(f"{RULES}/{rule['id']}"), 404, "SecurityGroupRuleNotFound")


def test_ports_join_groups(live_stowage: LiveServer, network: httpx.Client) -> None:
    net = nw.network(network, shared=True)
    nw.subnet(network, net["id"], "10.0.0.0/24")
    with api_client(f"{live_stowage.url}/network", token="demo:p1", roles=MEMBER) as demo:
        port = nw.port(demo, net["id"])
        default = demo.get(SG, params={"name": "default"}).json()["security_groups"][0]
        assert port["security_groups"] == [default["id"]]
        web = _group(demo)
        changed = nw.made(demo.put(f"/v2.0/ports/{port['id']}", json={"port": {
            "security_groups": [web["id"]]}}), "port", 200)
        assert changed["security_groups"] == [web["id"]]
        assert nw.ids(demo.get("/v2.0/ports", params={"security_groups": web["id"]}),
                      "ports") == [port["id"]]
        nw.neutron_error(demo.delete(f"{SG}/{web['id']}"), 409, "SecurityGroupInUse")
        bare = nw.port(demo, net["id"], security_groups=[])
        assert bare["security_groups"] == []
        with api_client(f"{live_stowage.url}/network", token="demo:p2", roles=MEMBER) as stranger:
            nw.neutron_error(stranger.post("/v2.0/ports", json={"port": {
                "network_id": net["id"], "security_groups": [web["id"]]}}), 404,
                "SecurityGroupNotFound")
        assert demo.put(f"/v2.0/ports/{port['id']}", json={"port": {
            "security_groups": None}}).json()["port"]["security_groups"] == []
        assert demo.delete(f"{SG}/{web['id']}").status_code == 204


def test_concurrent_first_uses_make_one_default_group(live_stowage: LiveServer,
                                                      network: httpx.Client) -> None:
    net = nw.network(network, shared=True)
    nw.subnet(network, net["id"], "10.0.0.0/24")
    rule = {"security_group_id": None, "direction": "ingress", "protocol": "tcp",
            "port_range_min": 80, "port_range_max": 80}

    def create_port() -> httpx.Response:
        with api_client(f"{live_stowage.url}/network", token="demo:p9", roles=MEMBER) as demo:
            return demo.post("/v2.0/ports", json={"port": {"network_id": net["id"]}})

    ports = _race(6, create_port)
    assert [r.status_code for r in ports] == [201] * 6, [r.text for r in ports]
    defaults = network.get(SG, params={"project_id": "p9"}).json()["security_groups"]
    assert [g["name"] for g in defaults] == ["default"]
    assert {tuple(r.json()["port"]["security_groups"]) for r in ports} == {
        (defaults[0]["id"],)}
    rule["security_group_id"] = defaults[0]["id"]
    rules = _race(6, lambda: network.post(RULES, json={"security_group_rule": rule}))
    assert sorted(r.status_code for r in rules) == [201] + [409] * 5, [r.text for r in rules]
