"""Network quotas over HTTP, as Neutron's `quotas` and `quota_details` extensions answer:
defaults, setting and resetting limits, usage, policy, and the 409 OverQuota of a create
that has no room (also when many of one project create at once)."""

from __future__ import annotations

import threading
from typing import Any

import httpx
import pytest

from tests.functional import networking as nw
from tests.functional.conftest import MEMBER, READER, LiveServer, api_client

DEFAULTS = {"network": 100, "subnet": 100, "port": 500, "router": 10, "floatingip": 50,
            "security_group": 10, "security_group_rule": 100, "subnetpool": -1}


def _set(client: httpx.Client, project: str, **limits: Any) -> dict[str, Any]:
    return nw.made(client.put(f"/v2.0/quotas/{project}", json={"quota": limits}), "quota", 200)


def test_defaults_set_reset_and_list(network: httpx.Client) -> None:
    assert nw.made(network.get("/v2.0/quotas/p1"), "quota", 200) == DEFAULTS
    assert nw.made(network.get("/v2.0/quotas/p1/default"), "quota", 200) == DEFAULTS
    assert network.get("/v2.0/quotas").json() == {"quotas": []}
    assert _set(network, "p1", network=3, port=-1) == {**DEFAULTS, "network": 3, "port": -1}
    assert _set(network, "p1", network="4") == {**DEFAULTS, "network": 4, "port": -1}
    assert nw.made(network.get("/v2.0/quotas/p1"), "quota", 200)["network"] == 4
    assert nw.made(network.get("/v2.0/quotas/p1/default"), "quota", 200) == DEFAULTS
    assert network.get("/v2.0/quotas").json() == {"quotas": [
        {**DEFAULTS, "network": 4, "port": -1, "project_id": "p1", "tenant_id": "p1"}]}
    assert network.delete("/v2.0/quotas/p1").status_code == 204
    assert nw.made(network.get("/v2.0/quotas/p1"), "quota", 200) == DEFAULTS
    assert network.get("/v2.0/quotas").json() == {"quotas": []}


@pytest.mark.parametrize(("body", "status", "error", "message"), [
    ({"quota": {"network": -2}}, 400, "HTTPBadRequest",
     "Invalid input for network. Reason: '-2' is too small - must be at least '-1'."),
    ({"quota": {"network": 2**31}}, 400, "HTTPBadRequest",
     f"Invalid input for network. Reason: '{2**31}' is too large - must be no larger than "
     f"'{2**31 - 1}'."),
    ({"quota": {"network": "many"}}, 400, "InvalidInput",
     "Invalid input for operation: 'many' is not an integer."),
    ({"quota": {"networks": 5}}, 400, "HTTPBadRequest", "Unrecognized attribute(s) 'networks'"),
    ({"quotas": {"network": 5}}, 400, "HTTPBadRequest", "Unable to find 'quota' in request body"),
])
def test_bad_limits_are_refused(network: httpx.Client, body: dict[str, Any], status: int,
                                error: str, message: str) -> None:
    resp = network.put("/v2.0/quotas/p1", json={"quota": {"subnet": 7, **body.get("quota", {})}}
                       if "quota" in body else body)
    assert nw.neutron_error(resp, status, error) == message
    assert nw.made(network.get("/v2.0/quotas/p1"), "quota", 200) == DEFAULTS


def test_a_project_id_too_long_to_keep_is_refused(network: httpx.Client) -> None:
    long_id = "p" * 256
    for resp in (network.put(f"/v2.0/quotas/{long_id}", json={"quota": {"network": 1}}),
                 network.delete(f"/v2.0/quotas/{long_id}")):
        assert "exceeds maximum length of 255" in nw.neutron_error(resp, 400, "HTTPBadRequest")
    assert network.get("/v2.0/quotas").json() == {"quotas": []}


def test_over_quota_is_409_and_writes_nothing(network: httpx.Client) -> None:
    _set(network, "admin", network=2, subnet=1, port=1, security_group=2,
         security_group_rule=5)
    first = nw.network(network, "a")
    nw.network(network, "b")
    resp = network.post("/v2.0/networks", json={"network": {"name": "c"}})
    assert nw.neutron_error(resp, 409, "OverQuota") == \
        "Quota exceeded for resources: ['network']."
    assert len(network.get("/v2.0/networks").json()["networks"]) == 2
    nw.subnet(network, first["id"], "10.0.0.0/24")
    resp = network.post("/v2.0/subnets", json={"subnet": {
        "network_id": first["id"], "cidr": "10.0.1.0/24", "ip_version": 4}})
    nw.neutron_error(resp, 409, "OverQuota")
    nw.port(network, first["id"])
    nw.neutron_error(network.post("/v2.0/ports", json={"port": {"network_id": first["id"]}}),
                     409, "OverQuota")
    # The default group (made with the first port) counts: one more group fits.
    group = nw.made(network.post("/v2.0/security-groups", json={
        "security_group": {"name": "web"}}), "security_group")
    resp = network.post("/v2.0/security-groups", json={"security_group": {"name": "db"}})
    assert nw.neutron_error(resp, 409, "OverQuota") == \
        "Quota exceeded for resources: ['security_group']."
    used = nw.made(network.get("/v2.0/quotas/admin/details"), "quota", 200)
    rules_used = used["security_group_rule"]["used"]
    assert rules_used >= 5
    resp = network.post("/v2.0/security-group-rules", json={"security_group_rule": {
        "security_group_id": group["id"], "direction": "ingress", "protocol": "tcp",
        "port_range_min": 22, "port_range_max": 22}})
    nw.neutron_error(resp, 409, "OverQuota")
    assert used == {
        "network": {"limit": 2, "used": 2, "reserved": 0},
        "subnet": {"limit": 1, "used": 1, "reserved": 0},
        "port": {"limit": 1, "used": 1, "reserved": 0},
        "router": {"limit": 10, "used": 0, "reserved": 0},
        "floatingip": {"limit": 50, "used": 0, "reserved": 0},
        "security_group": {"limit": 2, "used": 2, "reserved": 0},
        "security_group_rule": {"limit": 5, "used": rules_used, "reserved": 0},
        "subnetpool": {"limit": -1, "used": 0, "reserved": 0}}
    _set(network, "admin", network=-1)
    nw.network(network, "c")


def test_check_limit_refuses_a_limit_below_usage(network: httpx.Client) -> None:
    nw.network(network, "a")
    nw.network(network, "b")
    resp = network.put("/v2.0/quotas/admin", json={"quota": {"network": 1,
                                                             "check_limit": True}})
    assert nw.neutron_error(resp, 400, "HTTPBadRequest") == \
        "Quota limit 1 for network must be greater than or equal to already used 2"
    assert _set(network, "admin", network=1, force=True)["network"] == 1


def test_policy_a_project_reads_only_its_own(live_stowage: LiveServer,
                                              network: httpx.Client) -> None:
    _set(network, "p1", network=7)
    with api_client(f"{live_stowage.url}/network", token="p1", roles=MEMBER) as member:
        assert nw.made(member.get("/v2.0/quotas/p1"), "quota", 200)["network"] == 7
        assert nw.made(member.get("/v2.0/quotas/p1/details"), "quota",
                       200)["network"]["limit"] == 7
        assert member.get("/v2.0/quotas/project").json() == {"project": {"project_id": "p1"}}
    # As in Neutron, a project reads its own quota without any rule (or role).
    for roles in (READER, None):
        with api_client(f"{live_stowage.url}/network", token="p1", roles=roles) as caller:
            assert nw.made(caller.get("/v2.0/quotas/p1"), "quota", 200)["network"] == 7
            resp = caller.get("/v2.0/quotas/p2")
            assert nw.neutron_error(resp, 403, "PolicyNotAuthorized") == \
                "rule:get_quota is disallowed by policy"
    with api_client(f"{live_stowage.url}/network", token="p1", roles=MEMBER) as member:
        for method, path, rule in (("GET", "/v2.0/quotas/p2", "get_quota"),
                                   ("GET", "/v2.0/quotas", "get_quota"),
                                   ("GET", "/v2.0/quotas/p2/default", "get_quota"),
                                   ("PUT", "/v2.0/quotas/p1", "update_quota"),
                                   ("DELETE", "/v2.0/quotas/p1", "delete_quota")):
            resp = member.request(method, path, json={"quota": {"network": 50}})
            assert nw.neutron_error(resp, 403, "PolicyNotAuthorized") == \
                f"rule:{rule} is disallowed by policy"
    assert nw.made(network.get("/v2.0/quotas/p1"), "quota", 200)["network"] == 7


def test_concurrent_creators_do_not_exceed_the_limit(live_stowage: LiveServer,
                                                     network: httpx.Client) -> None:
    _set(network, "admin", network=3)
    statuses: list[int] = []

    def create(n: int) -> None:
        with api_client(f"{live_stowage.url}/network") as client:
            resp = client.post("/v2.0/networks", json={"network": {"name": f"n{n}"}})
            statuses.append(resp.status_code)

    threads = [threading.Thread(target=create, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(statuses) == [201] * 3 + [409] * 5
    assert len(network.get("/v2.0/networks").json()["networks"]) == 3


def test_novas_security_group_proxy_answers_403_over_quota(compute: httpx.Client,
                                                           network: httpx.Client) -> None:
    """Nova turns Neutron's OverQuota into 403 (SecurityGroupLimitExceeded)."""
    _set(network, "admin", security_group=1)
    assert network.get("/v2.0/security-groups").status_code == 200  # makes `default`
    resp = compute.post("/os-security-groups", json={"security_group": {
        "name": "web", "description": "d"}},
        headers={"openstack-api-version": "compute 2.35"})
    assert resp.status_code == 403, resp.text
    assert "Quota exceeded for resources: ['security_group']." in resp.text
    assert [g["name"] for g in network.get("/v2.0/security-groups").json()[
        "security_groups"]] == ["default"]


def test_bulk_create_is_all_or_nothing_within_the_quota(network: httpx.Client) -> None:
    """Neutron's bulk create (`{"networks": [...]}`) makes every record in one transaction;
    the quota counts each, so a batch that does not fit writes none of it."""
    made = network.post("/v2.0/networks", json={"networks": [
        {"name": "a"}, {"network": {"name": "b"}}]})
    assert made.status_code == 201, made.text
    assert [n["name"] for n in made.json()["networks"]] == ["a", "b"]
    _set(network, "admin", network=3)
    resp = network.post("/v2.0/networks", json={"networks": [{"name": "c"}, {"name": "d"}]})
    assert nw.neutron_error(resp, 409, "OverQuota") == \
        "Quota exceeded for resources: ['network']."
    resp = network.post("/v2.0/networks", json={"networks": [{"name": "c"}, {"nmae": "d"}]})
    assert nw.neutron_error(resp, 400, "HTTPBadRequest") == "Unrecognized attribute(s) 'nmae'"
    assert sorted(n["name"] for n in network.get("/v2.0/networks").json()["networks"]) == \
        ["a", "b"]
    net_id = made.json()["networks"][0]["id"]
    nw.subnet(network, net_id, "10.0.0.0/24")
    resp = network.post("/v2.0/ports", json={"ports": [
        {"network_id": net_id, "name": "p1"}, {"port": {"network_id": net_id, "name": "p2"}}]})
    assert resp.status_code == 201, resp.text
    assert [(p["name"], p["fixed_ips"][0]["ip_address"]) for p in resp.json()["ports"]] == \
        [("p1", "10.0.0.2"), ("p2", "10.0.0.3")]
    group = resp.json()["ports"][0]["security_groups"][0]
    rules = [{"security_group_id": group, "direction": "ingress", "protocol": "tcp",
              "port_range_min": n, "port_range_max": n} for n in (22, 80)]
    resp = network.post("/v2.0/security-group-rules", json={"security_group_rules": rules})
    assert resp.status_code == 201, resp.text
    assert [r["port_range_min"] for r in resp.json()["security_group_rules"]] == [22, 80]


@pytest.mark.parametrize(("body", "message"), [
    ({"networks": []}, "Resources required"),
    ({"networks": {}}, "Resources required"),
    ({"networks": {"name": "a"}}, "Body contains invalid data"),
    ({"networks": ["a"]}, "Body contains invalid data"),
])
def test_malformed_bulk_bodies(network: httpx.Client, body: dict[str, Any],
                               message: str) -> None:
    resp = network.post("/v2.0/networks", json=body)
    assert nw.neutron_error(resp, 400, "HTTPBadRequest") == message
    assert network.get("/v2.0/networks").json()["networks"] == []


def test_a_members_creates_pass_the_rules_then_the_quota(live_stowage: LiveServer,
                                                         network: httpx.Client) -> None:
    """A member's create is held to the rules and to the project's quota; a reader's is
    refused by the rules before any count."""
    _set(network, "p1", network=2)
    with api_client(f"{live_stowage.url}/network", token="demo:p1", roles=READER) as reader:
        resp = reader.post("/v2.0/networks", json={"networks": [{"name": "a"}]})
        assert nw.neutron_error(resp, 403, "PolicyNotAuthorized") == \
            "rule:create_network is disallowed by policy"
    with api_client(f"{live_stowage.url}/network", token="demo:p1", roles=MEMBER) as member:
        resp = member.post("/v2.0/networks", json={"networks": [
            {"name": "a"}, {"name": "b"}, {"name": "c"}]})
        assert nw.neutron_error(resp, 409, "OverQuota") == \
            "Quota exceeded for resources: ['network']."
        assert member.get("/v2.0/networks").json()["networks"] == []
        made = member.post("/v2.0/networks", json={"networks": [{"name": "a"}, {"name": "b"}]})
        assert made.status_code == 201, made.text
        resp = member.post("/v2.0/networks", json={"network": {"name": "c"}})
        assert nw.neutron_error(resp, 409, "OverQuota") == \
            "Quota exceeded for resources: ['network']."
        details = nw.made(member.get("/v2.0/quotas/p1/details"), "quota", 200)
        assert details["network"] == {"limit": 2, "used": 2, "reserved": 0}
