"""Nova's security group and network proxies over the Compute API: os-security-groups,
os-security-group-rules, a server's groups (its ports'), the add/remove actions, boot-time
groups, and os-networks / os-tenant-networks."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.functional import networking as nw
from tests.functional.conftest import MEMBER, Cloud, api_client
from tests.functional.ports import net_host
from tests.functional.servers import flavor, image, new_uuid, server, settle

V235 = "2.35"
SG = "/os-security-groups"
RULES = "/os-security-group-rules"


@pytest.fixture
def member(cloud: Cloud) -> Iterator[httpx.Client]:
    with cloud.client("demo:p1", version=V235, roles=MEMBER) as client:
        yield client


def _ok(resp: httpx.Response, status: int = 200) -> dict[str, Any]:
    assert resp.status_code == status, resp.text
    return dict(resp.json()) if resp.content else {}


def _error(resp: httpx.Response, status: int, text: str = "") -> None:
    assert resp.status_code == status, resp.text
    message = next(iter(resp.json().values()))["message"]
    assert text in message, message


def _group(client: httpx.Client, name: str) -> dict[str, Any]:
    return dict(_ok(client.post(SG, json={"security_group": {
        "name": name, "description": f"{name} servers"}}))["security_group"])


def _rule(client: httpx.Client, **fields: Any) -> httpx.Response:
    return client.post(RULES, json={"security_group_rule": fields})


def test_groups_and_rules_through_the_proxy(cloud: Cloud, member: httpx.Client) -> None:
    web = _group(member, "web")
    assert web == {"id": web["id"], "name": "web", "description": "web servers",
                   "tenant_id": "p1", "rules": []}  # egress rules are not Nova's
    listed = _ok(member.get(SG))["security_groups"]
    assert [g["name"] for g in listed] == ["default", "web"]
    default = listed[0]
    assert {r["group"]["name"] for r in default["rules"]} == {"default"}
    rule = _ok(_rule(member, parent_group_id=web["id"], ip_protocol="tcp", from_port=22,
                     to_port=22, cidr="10.2.3.124/24"))["security_group_rule"]
    assert rule == {"id": rule["id"], "parent_group_id": web["id"], "ip_protocol": "tcp",
                    "from_port": 22, "to_port": 22, "ip_range": {"cidr": "10.2.3.124/24"},
                    "group": {}}
    by_group = _ok(_rule(member, parent_group_id=web["id"], group_id=default["id"]))
    assert by_group["security_group_rule"]["group"] == {"name": "default", "tenant_id": "p1"}
    assert (by_group["security_group_rule"]["ip_protocol"],
            by_group["security_group_rule"]["from_port"]) == (None, None)
    refused = [
        (dict(parent_group_id=web["id"], ip_protocol="tcp", from_port=22, to_port=22,
              cidr="10.2.3.124/24"), 400, "This rule already exists"),
        (dict(parent_group_id=web["id"], ip_protocol="gre", from_port=1, to_port=2), 400,
         "Invalid IP protocol gre."),
        (dict(parent_group_id=web["id"], ip_protocol="tcp", from_port=65536, to_port=22),
         400, "Invalid port range"),
        (dict(parent_group_id=web["id"], ip_protocol="tcp"), 400, "Not enough parameters"),
        (dict(parent_group_id="nope", ip_protocol="tcp", from_port=1, to_port=2), 400,
         "Security group id should be uuid"),
        (dict(parent_group_id=new_uuid(), ip_protocol="tcp", from_port=1, to_port=2), 404, ""),
    ]
    for fields, status, text in refused:
        _error(_rule(member, **fields), status, text)
    shown = _ok(member.get(f"{SG}/{web['id']}"))["security_group"]
    assert len(shown["rules"]) == 2
    renamed = _ok(member.put(f"{SG}/{web['id']}", json={"security_group": {
        "name": "web2", "description": "d"}}))["security_group"]
    assert (renamed["name"], renamed["description"]) == ("web2", "d")
    with cloud.client("demo:p2", version=V235, roles=MEMBER) as stranger:
        _error(stranger.get(f"{SG}/{web['id']}"), 404, "does not exist")
        _error(stranger.delete(f"{SG}/{web['id']}"), 404)
    admin = _ok(cloud.client("admin", version=V235).get(SG, params={"all_tenants": 1}))
    assert web["id"] in [g["id"] for g in admin["security_groups"]]
    _error(member.delete(f"{SG}/{default['id']}"), 400, "default security group")
    assert member.delete(f"{RULES}/{rule['id']}").status_code == 202
    _error(member.delete(f"{RULES}/{rule['id']}"), 404)
    assert member.delete(f"{SG}/{web['id']}").status_code == 202
    _error(member.get(f"{SG}/{web['id']}"), 404)
    with cloud.client("demo:p1", version="2.36", roles=MEMBER) as newer:
        _error(newer.get(SG), 404)
        _error(newer.post(SG, json={"security_group": {"name": "x", "description": ""}}), 404)


def test_servers_take_their_ports_groups(cloud: Cloud, member: httpx.Client) -> None:
    net_host(cloud, "host1")
    with api_client(f"{cloud.live.url}/network") as network:
        net = nw.physnet(network, "shared-net", shared=True)
        nw.subnet(network, net["id"], "10.0.0.0/24")
    ids = flavor(cloud, "small", 1, 512, 1), image(cloud, visibility="public")
    web = _group(member, "web")
    body: dict[str, Any] = {"server": {"name": "vm", "flavorRef": ids[0], "imageRef": ids[1],
                                       "networks": [{"uuid": net["id"]}]}}
    body["server"]["security_groups"] = [{"name": "nope"}]
    _error(member.post("/servers", json=body), 400,
           "Unable to find security_group with name or id 'nope'")
    body["server"]["security_groups"] = [{"name": "web"}]
    made = _ok(member.post("/servers", json=body), 202)["server"]
    assert made["security_groups"] == [{"name": "web"}]
    settle(cloud)
    vm = made["id"]
    assert server(cloud, vm)["security_groups"] == [{"name": "web"}]
    listed = _ok(member.get(f"/servers/{vm}/os-security-groups"))["security_groups"]
    assert [g["id"] for g in listed] == [web["id"]]
    # A port attached later joins the groups the server was booted with.
    _ok(member.post(f"/servers/{vm}/os-interface", json={"interfaceAttachment": {
        "net_id": net["id"]}}))
    settle(cloud)
    with api_client(f"{cloud.live.url}/network") as network:
        ports = network.get("/v2.0/ports", params={"device_id": vm}).json()["ports"]
    assert [p["security_groups"] for p in ports] == [[web["id"]], [web["id"]]]

    def act(name: str, group: str, status: int = 202) -> httpx.Response:
        resp = member.post(f"/servers/{vm}/action", json={name: {"name": group}})
        assert resp.status_code == status, resp.text
        return resp

    act("addSecurityGroup", "default")
    assert sorted(g["name"] for g in server(cloud, vm)["security_groups"]) == [
        "default", "default", "web", "web"]  # one entry per port and group, as Nova
    _error(member.delete(f"{SG}/{web['id']}"), 400, "in use")
    act("removeSecurityGroup", "web")
    _error(act("removeSecurityGroup", "web", 404), 404, "not associated")
    _error(act("addSecurityGroup", "nope", 404), 404, "is not found for project p1")
    act("removeSecurityGroup", "default")
    assert "security_groups" not in server(cloud, vm)
    assert _ok(member.get(f"/servers/{vm}/os-security-groups"))["security_groups"] == []
    bare = _ok(cloud.compute.post("/servers", json={"server": {
        "name": "bare", "flavorRef": ids[0], "imageRef": ids[1], "networks": "none"}}),
        202)["server"]
    settle(cloud)
    assert "security_groups" not in server(cloud, bare["id"])
    _error(cloud.compute.post(f"/servers/{bare['id']}/action", json={
        "addSecurityGroup": {"name": "web"}}), 404, "could not be found as device id")


def test_network_proxies(cloud: Cloud, member: httpx.Client) -> None:
    with api_client(f"{cloud.live.url}/network") as network:
        shared = nw.network(network, "public", shared=True)
        hidden = nw.network(network, "admin-only")
    with api_client(f"{cloud.live.url}/network", token="demo:p1", roles=MEMBER) as own:
        mine = nw.network(own, "mine")
    listed = _ok(member.get("/os-networks"))["networks"]
    assert sorted(n["label"] for n in listed) == ["mine", "public"]
    assert listed[0] == {"id": listed[0]["id"], "label": listed[0]["label"],
                         **dict.fromkeys(("cidr", "netmask", "gateway", "broadcast", "dns1",
                                          "dns2", "cidr_v6", "gateway_v6", "netmask_v6"))}
    admin_view = _ok(cloud.client("admin", version=V235).get(
        f"/os-networks/{hidden['id']}"))["network"]
    assert (admin_view["label"], admin_view["project_id"], admin_view["mtu"]) == \
        ("admin-only", None, None)
    _error(member.get(f"/os-networks/{hidden['id']}"), 404, "Network not found")
    assert _ok(member.get(f"/os-tenant-networks/{mine['id']}"))["network"] == {
        "id": mine["id"], "cidr": "None", "label": "mine"}
    assert shared["id"] in [n["id"] for n in _ok(member.get("/os-tenant-networks"))["networks"]]
    for resp in (member.post("/os-networks", json={"network": {"label": "x"}}),
                 member.delete(f"/os-tenant-networks/{mine['id']}"),
                 member.post(f"/os-networks/{mine['id']}/action",
                             json={"disassociate": None})):
        assert resp.status_code == 410, resp.text
    with cloud.client("demo:p1", version="2.36", roles=MEMBER) as newer:
        _error(newer.get("/os-networks"), 404)
        _error(newer.get("/os-tenant-networks"), 404)
