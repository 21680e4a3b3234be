"""Subnet pools over HTTP: the record's lifecycle and defaults, Neutron's validation,
policy (admin-only `shared` / `is_default`, a stranger's pool is 404), subnets allocated
from a pool (no overlap, also under concurrent creates), and a pool in use."""

from __future__ import annotations

import ipaddress
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from tests.functional import networking as nw
from tests.functional.conftest import MEMBER, READER, LiveServer, api_client


def _pool(client: httpx.Client, prefixes: list[str], **fields: Any) -> dict[str, Any]:
    return nw.made(client.post("/v2.0/subnetpools", json={"subnetpool": {
        "name": "pool", "prefixes": prefixes, **fields}}), "subnetpool")


def _from_pool(client: httpx.Client, net_id: str, pool_id: str,
               **fields: Any) -> httpx.Response:
    return client.post("/v2.0/subnets", json={"subnet": {
        "network_id": net_id, "ip_version": fields.pop("ip_version", 4),
        "subnetpool_id": pool_id, **fields}})


def test_pool_lifecycle_and_defaults(network: httpx.Client) -> None:
    pool = _pool(network, ["10.10.0.0/16", "10.11.0.0/16", "10.10.5.0/24"])
    assert {k: pool[k] for k in ("prefixes", "ip_version", "min_prefixlen", "max_prefixlen",
                                 "default_prefixlen", "shared", "is_default",
                                 "default_quota", "address_scope_id", "tags")} == {
        "prefixes": ["10.10.0.0/15"], "ip_version": 4, "min_prefixlen": 8,
        "max_prefixlen": 32, "default_prefixlen": 8, "shared": False, "is_default": False,
        "default_quota": None, "address_scope_id": None, "tags": []}
    assert network.get(f"/v2.0/subnetpools/{pool['id']}").json()["subnetpool"] == pool
    assert nw.ids(network.get("/v2.0/subnetpools", params={"ip_version": "4"}),
                  "subnetpools") == [pool["id"]]
    changed = nw.made(network.put(f"/v2.0/subnetpools/{pool['id']}", json={"subnetpool": {
        "name": "renamed", "prefixes": ["10.10.0.0/15", "10.20.0.0/16"],
        "default_prefixlen": 24, "min_prefixlen": 16}}), "subnetpool", 200)
    assert (changed["name"], changed["prefixes"], changed["default_prefixlen"],
            changed["min_prefixlen"], changed["revision_number"]) == \
        ("renamed", ["10.10.0.0/15", "10.20.0.0/16"], 24, 16, 1)
    v6 = _pool(network, ["2001:db8::/48"])
    assert (v6["ip_version"], v6["min_prefixlen"], v6["max_prefixlen"]) == (6, 64, 128)
    assert network.delete(f"/v2.0/subnetpools/{pool['id']}").status_code == 204
    message = nw.neutron_error(network.get(f"/v2.0/subnetpools/{pool['id']}"), 404,
                               "SubnetPoolNotFound")
    assert message == f"Subnet pool {pool['id']} could not be found."


def test_pool_validation_changes_nothing(network: httpx.Client) -> None:
    pool = _pool(network, ["10.10.0.0/16"], default_prefixlen=24)
    cases = [
        ({"prefixes": []}, "EmptySubnetPoolPrefixList", "Empty subnet pool prefix list."),
        ({"prefixes": ["10.0.0.0/8", "2001:db8::/32"]}, "PrefixVersionMismatch",
         "Cannot mix IPv4 and IPv6 prefixes in a subnet pool."),
        ({"prefixes": ["10.0.0.0/8"], "min_prefixlen": 24, "max_prefixlen": 16},
         "IllegalSubnetPoolPrefixBounds",
         "Illegal prefix bounds: min_prefixlen=24, max_prefixlen=16."),
        ({"prefixes": ["10.0.0.0/8"], "max_prefixlen": 33}, "IllegalSubnetPoolPrefixBounds",
         "Illegal prefix bounds: max_prefixlen=33, ip_version_max=32."),
        ({"prefixes": ["10.0.0.0/8"], "default_prefixlen": 4},
         "IllegalSubnetPoolPrefixBounds",
         "Illegal prefix bounds: default_prefixlen=4, min_prefixlen=8."),
    ]
    for body, error_type, message in cases:
        got = nw.neutron_error(network.post("/v2.0/subnetpools", json={"subnetpool": body}),
                               400, error_type)
        assert got == message
    bad = network.post("/v2.0/subnetpools", json={"subnetpool": {"prefixes": ["nope"]}})
    assert "'nope' is not a valid IP subnet" in nw.neutron_error(bad, 400, "HTTPBadRequest")
    shrink = network.put(f"/v2.0/subnetpools/{pool['id']}", json={"subnetpool": {
        "prefixes": ["10.10.0.0/24"]}})
    assert nw.neutron_error(shrink, 400, "IllegalSubnetPoolPrefixUpdate") == (
        "Illegal update to prefixes: Existing prefixes must be a subset of the new prefixes.")
    assert nw.ids(network.get("/v2.0/subnetpools"), "subnetpools") == [pool["id"]]
    assert network.get(f"/v2.0/subnetpools/{pool['id']}").json()["subnetpool"] == pool


def test_one_default_pool_per_ip_version(network: httpx.Client) -> None:
    first = _pool(network, ["10.0.0.0/8"], is_default=True)
    assert first["is_default"] is True
    refused = network.post("/v2.0/subnetpools", json={"subnetpool": {
        "prefixes": ["172.16.0.0/12"], "is_default": True}})
    assert "Only one default may exist per IP family" in nw.neutron_error(
        refused, 400, "InvalidInput")
    assert _pool(network, ["2001:db8::/32"], is_default=True)["is_default"] is True
    network.put(f"/v2.0/subnetpools/{first['id']}", json={"subnetpool": {
        "is_default": False}})
    assert _pool(network, ["172.16.0.0/12"], is_default=True)["is_default"] is True


def test_subnets_from_a_pool(network: httpx.Client) -> None:
    net = nw.network(network)
    pool = _pool(network, ["10.10.0.0/22"], default_prefixlen=24, min_prefixlen=23,
                 max_prefixlen=28)
    first = nw.made(_from_pool(network, net["id"], pool["id"]), "subnet")
    assert (first["cidr"], first["subnetpool_id"], first["gateway_ip"]) == \
        ("10.10.0.0/24", pool["id"], "10.10.0.1")
    small = nw.made(_from_pool(network, net["id"], pool["id"], prefixlen=28), "subnet")
    assert small["cidr"] == "10.10.1.0/28"
    asked = nw.made(_from_pool(network, net["id"], pool["id"], cidr="10.10.2.0/24"),
                    "subnet")
    assert asked["cidr"] == "10.10.2.0/24"
    taken = _from_pool(network, net["id"], pool["id"], cidr="10.10.2.0/25")
    assert "Cannot allocate requested subnet" in nw.neutron_error(taken, 409,
                                                                  "SubnetAllocationError")
    for fields, error_type in (({"prefixlen": 29}, "MaxPrefixSubnetAllocationError"),
                               ({"prefixlen": 22}, "MinPrefixSubnetAllocationError"),
                               ({"ip_version": 6}, "BadRequest"),
                               ({"prefixlen": 24, "cidr": "10.10.3.0/24"}, "BadRequest")):
        nw.neutron_error(_from_pool(network, net["id"], pool["id"], **fields), 400,
                         error_type)
    full = _from_pool(network, net["id"], pool["id"], prefixlen=23)
    assert nw.neutron_error(full, 409, "SubnetAllocationError") == (
        "Failed to allocate subnet: Insufficient prefix space to allocate subnet size /23.")
    listed = network.get("/v2.0/subnets", params={"subnetpool_id": pool["id"]})
    assert sorted(nw.ids(listed, "subnets")) == sorted([first["id"], small["id"],
                                                        asked["id"]])
    in_use = network.delete(f"/v2.0/subnetpools/{pool['id']}")
    assert nw.neutron_error(in_use, 409, "SubnetPoolInUse") == (
        f"Unable to complete operation on subnet pool {pool['id']}. Subnet pool has "
        "existing allocations.")
    for subnet in (first, small, asked):
        assert network.delete(f"/v2.0/subnets/{subnet['id']}").status_code == 204
    assert network.delete(f"/v2.0/subnetpools/{pool['id']}").status_code == 204


def test_concurrent_allocations_never_overlap(network: httpx.Client) -> None:
    net = nw.network(network)
    pool = _pool(network, ["10.30.0.0/24"], default_prefixlen=28)

    def create(_: int) -> httpx.Response:
        return _from_pool(network, net["id"], pool["id"])

    with ThreadPoolExecutor(4) as workers:
        answers = list(workers.map(create, range(18)))
    made = [r.json()["subnet"]["cidr"] for r in answers if r.status_code == 201]
    assert len(made) == 16
    assert {r.status_code for r in answers} == {201, 409}
    nets = [ipaddress.ip_network(c) for c in made]
    assert all(not a.overlaps(b) for i, a in enumerate(nets) for b in nets[i + 1:])


def test_subnetpool_quota(network: httpx.Client) -> None:
    """Unlimited by default (Neutron's -1); a limit set is held like the others."""
    assert network.get("/v2.0/quotas/p1").json()["quota"]["subnetpool"] == -1
    network.put("/v2.0/quotas/admin", json={"quota": {"subnetpool": 1}})
    _pool(network, ["10.60.0.0/16"])
    over = network.post("/v2.0/subnetpools", json={"subnetpool": {
        "prefixes": ["10.61.0.0/16"]}})
    nw.neutron_error(over, 409, "OverQuota")
    assert len(nw.ids(network.get("/v2.0/subnetpools"), "subnetpools")) == 1
    network.delete("/v2.0/quotas/admin")


def test_policy(live_stowage: LiveServer, network: httpx.Client) -> None:
    url = f"{live_stowage.url}/network"
    shared = _pool(network, ["192.168.0.0/16"], shared=True, default_prefixlen=24)
    with api_client(url, token="demo:p1", roles=MEMBER) as member:
        mine = _pool(member, ["10.40.0.0/16"])
        for flag in ("shared", "is_default"):
            refused = member.post("/v2.0/subnetpools", json={"subnetpool": {
                "prefixes": ["10.50.0.0/16"], flag: True}})
            assert nw.neutron_error(refused, 403, "PolicyNotAuthorized") == \
                f"(rule:create_subnetpool and rule:create_subnetpool:{flag}) is " \
                "disallowed by policy"
        seen = set(nw.ids(member.get("/v2.0/subnetpools"), "subnetpools"))
        assert seen == {mine["id"], shared["id"]}
        nw.neutron_error(member.put(f"/v2.0/subnetpools/{shared['id']}", json={
            "subnetpool": {"name": "x"}}), 403, "PolicyNotAuthorized")
        net = nw.network(member)
        from_shared = nw.made(_from_pool(member, net["id"], shared["id"]), "subnet")
        assert from_shared["cidr"] == "192.168.0.0/24"
        with api_client(url, token="demo:p1", roles=READER) as reader:
            assert reader.get(f"/v2.0/subnetpools/{mine['id']}").status_code == 200
            nw.neutron_error(reader.delete(f"/v2.0/subnetpools/{mine['id']}"), 403,
                             "PolicyNotAuthorized")
    with api_client(url, token="demo:p2", roles=MEMBER) as stranger:
        nw.neutron_error(stranger.get(f"/v2.0/subnetpools/{mine['id']}"), 404,
                         "SubnetPoolNotFound")
        nw.neutron_error(stranger.delete(f"/v2.0/subnetpools/{mine['id']}"), 404,
                         "SubnetPoolNotFound")
        other_net = nw.network(stranger)
        nw.neutron_error(_from_pool(stranger, other_net["id"], mine["id"]), 404,
                         "SubnetPoolNotFound")
