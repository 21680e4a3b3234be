"""Tags on networks, subnets, ports and security groups (extension `standard-attr-tag`),
over HTTP: the tag routes with Neutron's statuses, validation, tag filters on lists,
policy (a project's reader sees, a member changes, a stranger gets 404) and concurrent
writers."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import sqlalchemy as sa

from tests.functional import networking as nw
from tests.functional.conftest import MEMBER, READER, LiveServer, api_client


def _records(client: httpx.Client) -> dict[str, str]:
    net = nw.network(client)
    sub = nw.subnet(client, net["id"])
    port = nw.port(client, net["id"])
    group = nw.made(client.post("/v2.0/security-groups", json={"security_group": {
        "name": "web"}}), "security_group")
    router = nw.made(client.post("/v2.0/routers", json={"router": {"name": "r"}}), "router")
    return {"networks": net["id"], "subnets": sub["id"], "ports": port["id"],
            "security-groups": group["id"], "routers": router["id"],
            "floatingips": _floating_ip(client)["id"]}


def _floating_ip(client: httpx.Client) -> dict[str, Any]:
    public = nw.network(client, "public", **{"router:external": True})
    nw.subnet(client, public["id"], cidr="172.24.4.0/24")
    return nw.made(client.post("/v2.0/floatingips", json={"floatingip": {
        "floating_network_id": public["id"]}}), "floatingip")


def test_tag_routes_on_every_resource(network: httpx.Client) -> None:
    for collection, record_id in _records(network).items():
        base = f"/v2.0/{collection}/{record_id}/tags"
        assert network.put(f"{base}/red").status_code == 201
        assert network.put(f"{base}/red").status_code == 201  # again: no error
        assert network.get(f"{base}/red").status_code == 204
        assert network.get(base).json() == {"tags": ["red"]}
        replaced = network.put(base, json={"tags": ["b", "a", "c"]})
        assert replaced.status_code == 200
        assert sorted(replaced.json()["tags"]) == ["a", "b", "c"]
        added = network.post(base, json={"tags": ["d", "a"]})
        assert added.status_code == 201
        assert sorted(added.json()["tags"]) == ["a", "b", "c", "d"]
        assert network.delete(f"{base}/a").status_code == 204
        assert nw.neutron_error(network.get(f"{base}/a"), 404, "TagNotFound") == \
            "Tag a could not be found."
        nw.neutron_error(network.delete(f"{base}/a"), 404, "TagNotFound")
        shown = network.get(f"/v2.0/{collection}/{record_id}").json()
        assert sorted(next(iter(shown.values()))["tags"]) == ["b", "c", "d"]
        assert network.delete(base).status_code == 204
        assert network.get(base).json() == {"tags": []}


def test_tag_changes_bump_the_revision(network: httpx.Client) -> None:
    net = nw.network(network)
    network.put(f"/v2.0/networks/{net['id']}/tags/x")
    after = network.get(f"/v2.0/networks/{net['id']}").json()["network"]
    assert after["revision_number"] == net["revision_number"] + 1
    assert after["tags"] == ["x"]


def test_bad_tags_are_refused_and_change_nothing(network: httpx.Client) -> None:
    net = nw.network(network)
    base = f"/v2.0/networks/{net['id']}/tags"
    network.put(f"{base}/keep")
    long = "x" * 256
    message = nw.neutron_error(network.put(f"{base}/{long}"), 400, "InvalidInput")
    assert message == f"Invalid input for operation: '{long}' exceeds maximum length of 255."
    assert network.put(f"{base}/{'y' * 255}").status_code == 201
    network.delete(f"{base}/{'y' * 255}")
    for body, reason in (({"tag": ["a"]}, "Invalid tags body"),
                         ({"tags": "a"}, "'a' is not a list"),
                         ({"tags": [1]}, "'1' is not a valid string"),
                         ({"tags": ["a", "a"]}, "Duplicate items in the list: 'a'")):
        message = nw.neutron_error(network.put(base, json=body), 400, "InvalidInput")
        assert message == f"Invalid input for operation: {reason}."
    assert network.get(base).json() == {"tags": ["keep"]}
    missing = "/v2.0/networks/00000000-0000-0000-0000-000000000000/tags/a"
    nw.neutron_error(network.put(missing), 404, "NetworkNotFound")
    message = nw.neutron_error(network.post("/v2.0/networks", json={"network": {
        "name": "n", "tags": ["a"]}}), 400, "HTTPBadRequest")
    assert "tags" in message


def test_tag_filters(network: httpx.Client) -> None:
    nets = {name: nw.network(network, name)["id"] for name in ("ab", "a", "b", "none")}
    for name, record_id in nets.items():
        if name != "none":
            network.put(f"/v2.0/networks/{record_id}/tags", json={"tags": list(name)})

    def names(**params: str) -> set[str]:
        found = network.get("/v2.0/networks", params=params).json()["networks"]
        return {n["name"] for n in found}

    assert names(tags="a,b") == {"ab"}
    assert names(tags="a") == {"ab", "a"}
    assert names(**{"tags-any": "a,b"}) == {"ab", "a", "b"}
    assert names(**{"not-tags": "a,b"}) == {"a", "b", "none"}
    assert names(**{"not-tags-any": "a,b"}) == {"none"}
    assert names(tags="a", **{"not-tags": "b"}) == {"a"}
    ports = network.get("/v2.0/ports", params={"tags": "nothing"}).json()["ports"]
    assert ports == []


def test_policy(live_stowage: LiveServer, network: httpx.Client) -> None:
    url = f"{live_stowage.url}/network"
    with api_client(url, token="demo:p1", roles=MEMBER) as member:
        net = nw.network(member)
        base = f"/v2.0/networks/{net['id']}/tags"
        assert member.put(f"{base}/mine").status_code == 201
        with api_client(url, token="demo:p1", roles=READER) as reader:
            assert reader.get(base).json() == {"tags": ["mine"]}
            assert reader.get(f"{base}/mine").status_code == 204
            message = nw.neutron_error(reader.put(f"{base}/no"), 403, "PolicyNotAuthorized")
            assert message == "rule:update_networks_tags is disallowed by policy"
            nw.neutron_error(reader.delete(base), 403, "PolicyNotAuthorized")
        with api_client(url, token="demo:p2", roles=MEMBER) as stranger:
            nw.neutron_error(stranger.get(base), 404, "NetworkNotFound")
            nw.neutron_error(stranger.put(f"{base}/theirs"), 404, "NetworkNotFound")
        assert member.get(base).json() == {"tags": ["mine"]}


def test_concurrent_tag_writers(network: httpx.Client) -> None:
    net = nw.network(network)
    base = f"/v2.0/networks/{net['id']}/tags"
    with ThreadPoolExecutor(4) as pool:
        codes = list(pool.map(lambda i: network.put(f"{base}/t{i % 4}").status_code,
                              range(12)))
    assert set(codes) == {201}
    assert network.get(base).json() == {"tags": ["t0", "t1", "t2", "t3"]}
    after = network.get(f"/v2.0/networks/{net['id']}").json()["network"]
    assert after["revision_number"] == net["revision_number"] + 12


def test_tags_go_with_their_record(network: httpx.Client) -> None:
    net = nw.network(network)
    network.put(f"/v2.0/networks/{net['id']}/tags/gone")
    assert network.delete(f"/v2.0/networks/{net['id']}").status_code == 204
    again = network.get(f"/v2.0/networks/{net['id']}/tags")
    nw.neutron_error(again, 404, "NetworkNotFound")


def test_ports_tagged_at_creation(network: httpx.Client) -> None:
    net = nw.network(network)
    one = nw.port(network, net["id"], tags=["web", "blue"])
    assert sorted(one["tags"]) == ["blue", "web"]
    assert one["revision_number"] == 0
    bulk = network.post("/v2.0/ports", json={"ports": [
        {"network_id": net["id"], "tags": ["a"]}, {"network_id": net["id"]}]})
    assert bulk.status_code == 201, bulk.text
    assert [p["tags"] for p in bulk.json()["ports"]] == [["a"], []]
    refused = network.post("/v2.0/ports", json={"port": {"network_id": net["id"],
                                                         "tags": ["x", "x"]}})
    assert "Duplicate items in the list: 'x'" in nw.neutron_error(refused, 400,
                                                                 "HTTPBadRequest")
    assert len(network.get("/v2.0/ports").json()["ports"]) == 3
    message = nw.neutron_error(network.put(f"/v2.0/ports/{one['id']}", json={"port": {
        "tags": ["z"]}}), 400, "HTTPBadRequest")
    assert "tags" in message


def test_routers_and_floating_ips_take_tags(live_stowage: LiveServer,
                                            network: httpx.Client) -> None:
    """Tags shown on show/list/update, tag filters on their lists, forgotten on delete."""
    fip = _floating_ip(network)
    routers = [nw.made(network.post("/v2.0/routers", json={"router": {"name": n}}), "router")
               for n in ("r1", "r2")]
    for kind, record_id in (("routers", routers[0]["id"]), ("floatingips", fip["id"])):
        assert network.put(f"/v2.0/{kind}/{record_id}/tags",
                           json={"tags": ["red", "blue"]}).status_code == 200
        shown = next(iter(network.get(f"/v2.0/{kind}/{record_id}").json().values()))
        assert sorted(shown["tags"]) == ["blue", "red"]
        listed = network.get(f"/v2.0/{kind}", params={"tags": "red,blue"}).json()[kind]
        assert [r["id"] for r in listed] == [record_id]
        assert network.get(f"/v2.0/{kind}", params={"not-tags-any": "red"}).json()[kind] \
            == ([] if kind == "floatingips" else [r for r in network.get(
                f"/v2.0/{kind}").json()[kind] if r["id"] == routers[1]["id"]])
    renamed = network.put(f"/v2.0/routers/{routers[0]['id']}", json={"router": {
        "name": "r1b"}}).json()["router"]
    assert sorted(renamed["tags"]) == ["blue", "red"]
    assert network.delete(f"/v2.0/routers/{routers[0]['id']}").status_code == 204
    assert network.delete(f"/v2.0/floatingips/{fip['id']}").status_code == 204
    with live_stowage.db.read() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM network_tags")).scalar() == 0
