"""Neutron's per-record limits and request validation over HTTP: fixed IPs per port, DNS
nameservers and host routes per subnet, MAC addresses, sorting and boolean filters — each
refused in Neutron's words, with nothing written, and the address allocation a port's
addresses cost linear in their number."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from tests.functional import networking as nw
from tests.functional.conftest import LiveServer


@contextmanager
def _statements(live: LiveServer) -> Iterator[list[str]]:
    """The SQL statements the server runs meanwhile."""
    seen: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        seen.append(statement)

    sa.event.listen(live.db.engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        sa.event.remove(live.db.engine, "before_cursor_execute", record)


def test_a_port_holds_at_most_five_fixed_ips(network: httpx.Client) -> None:
    net = nw.network(network)
    sub = nw.subnet(network, net["id"], "10.0.0.0/24")
    six = [{"subnet_id": sub["id"]}] * 6
    resp = network.post("/v2.0/ports", json={"port": {"network_id": net["id"],
                                                      "fixed_ips": six}})
    assert nw.neutron_error(resp, 400, "InvalidInput") == \
        "Invalid input for operation: Exceeded maximum amount of fixed ips per port."
    assert network.get("/v2.0/ports").json()["ports"] == []
    five = nw.port(network, net["id"], fixed_ips=six[:5])
    assert len(five["fixed_ips"]) == 5
    resp = network.put(f"/v2.0/ports/{five['id']}", json={"port": {"fixed_ips": six}})
    nw.neutron_error(resp, 400, "InvalidInput")
    assert network.get(f"/v2.0/ports/{five['id']}").json()["port"]["fixed_ips"] == \
        five["fixed_ips"]


def test_the_networks_own_ports_are_not_limited(network: httpx.Client) -> None:
    net = nw.network(network)
    sub = nw.subnet(network, net["id"], "10.0.0.0/24")
    made = nw.port(network, net["id"], device_owner="network:dhcp",
                   fixed_ips=[{"subnet_id": sub["id"]}] * 8)
    assert [ip["ip_address"] for ip in made["fixed_ips"]] == \
        [f"10.0.0.{n}" for n in range(2, 10)]


def test_addresses_of_a_port_cost_one_read_of_the_taken_ones(
        live_stowage: LiveServer, network: httpx.Client) -> None:
    """A /20's worth of addresses on one (trusted) port: the subnet's taken addresses are
    read once, not once per address (the issue: 3,000 addresses took 119 s)."""
    net = nw.network(network)
    sub = nw.subnet(network, net["id"], "10.1.0.0/20")
    nw.port(network, net["id"], fixed_ips=[{"subnet_id": sub["id"]}] * 3)
    wanted = 1000
    with _statements(live_stowage) as seen:
        made = nw.port(network, net["id"], device_owner="network:router_interface",
                       fixed_ips=[{"subnet_id": sub["id"]}] * wanted)
    reads = [s for s in seen if s.lstrip().upper().startswith("SELECT")
             and "ip_allocations" in s and "ip_allocations.subnet_id =" in s]
    assert len(reads) == 1, reads[:3]
    inserts = [s for s in seen
               if s.lstrip().upper().startswith("INSERT INTO IP_ALLOCATIONS")]
    assert len(inserts) == wanted
    addresses = [ip["ip_address"] for ip in made["fixed_ips"]]
    assert len(set(addresses)) == wanted
    assert "10.1.0.1" not in addresses and "10.1.0.5" in addresses


def test_a_port_keeps_its_addresses_when_updated_with_them(network: httpx.Client) -> None:
    net = nw.network(network)
    sub = nw.subnet(network, net["id"], "10.0.0.0/24")
    made = nw.port(network, net["id"], fixed_ips=[{"subnet_id": sub["id"]},
                                                  {"ip_address": "10.0.0.9"}])
    assert [ip["ip_address"] for ip in made["fixed_ips"]] == ["10.0.0.2", "10.0.0.9"]
    changed = nw.made(network.put(f"/v2.0/ports/{made['id']}", json={"port": {"fixed_ips": [
        {"subnet_id": sub["id"]}, {"ip_address": "10.0.0.9"}, {"subnet_id": sub["id"]}]}}),
        "port", 200)
    assert [ip["ip_address"] for ip in changed["fixed_ips"]] == \
        ["10.0.0.2", "10.0.0.3", "10.0.0.9"]


@pytest.mark.parametrize(("key", "entries", "error", "limit"), [
    ("dns_nameservers", [f"10.9.{n // 250}.{n % 250 + 1}" for n in range(40_000)],
     "DNSNameServersExhausted", "The number of DNS nameservers exceeds the limit 5."),
    ("host_routes", [{"destination": f"10.{n}.0.0/16", "nexthop": "10.0.0.1"}
                     for n in range(21)],
     "HostRoutesExhausted", "The number of host routes exceeds the limit 20."),
])
def test_subnet_lists_are_limited(network: httpx.Client, key: str, entries: list[Any],
                                  error: str, limit: str) -> None:
    net = nw.network(network)
    body = {"subnet": {"network_id": net["id"], "cidr": "10.0.0.0/24", "ip_version": 4,
                       key: entries}}
    message = nw.neutron_error(network.post("/v2.0/subnets", json=body), 400, error)
    assert message == f"Unable to complete operation for new subnet. {limit}"
    assert network.get("/v2.0/subnets").json()["subnets"] == []
    made = nw.subnet(network, net["id"], "10.0.0.0/24")
    resp = network.put(f"/v2.0/subnets/{made['id']}", json={"subnet": {key: entries[:25]}})
    assert nw.neutron_error(resp, 400, error) == \
        f"Unable to complete operation for {made['id']}. {limit}"
    assert network.get(f"/v2.0/subnets/{made['id']}").json()["subnet"][key] == []
    within = nw.made(network.put(f"/v2.0/subnets/{made['id']}",
                                 json={"subnet": {key: entries[:5]}}), "subnet", 200)
    assert within[key] == entries[:5]


def test_a_duplicate_nameserver_is_still_named(network: httpx.Client) -> None:
    net = nw.network(network)
    body = {"subnet": {"network_id": net["id"], "cidr": "10.0.0.0/24", "ip_version": 4,
                       "dns_nameservers": ["10.0.0.3", "10.0.0.3"]}}
    message = nw.neutron_error(network.post("/v2.0/subnets", json=body), 400, "HTTPBadRequest")
    assert message == "Invalid input for dns_nameservers. Reason: Duplicate nameserver " \
                      "'10.0.0.3'."


@pytest.mark.parametrize("mac", ["ff:ff:ff:ff:ff:ff", "FF-FF-FF-FF-FF-FF",
                                 "00:00:00:00:00:00"])
def test_broadcast_and_zero_macs_are_refused(network: httpx.Client, mac: str) -> None:
    net = nw.network(network)
    resp = network.post("/v2.0/ports", json={"port": {"network_id": net["id"],
                                                      "mac_address": mac}})
    assert nw.neutron_error(resp, 400, "HTTPBadRequest") == \
        f"Invalid input for mac_address. Reason: '{mac}' is not a valid MAC address."
    assert network.get("/v2.0/ports").json()["ports"] == []


def test_a_multicast_mac_is_taken_as_neutron_takes_it(network: httpx.Client) -> None:
    """neutron-lib refuses only the all-zero and broadcast MACs (docs/compatibility.md)."""
    net = nw.network(network)
    assert nw.port(network, net["id"], mac_address="01:00:5e:00:00:01")["mac_address"] == \
        "01:00:5e:00:00:01"


def test_a_port_may_name_the_gateway_address(network: httpx.Client) -> None:
    """Neutron's IPAM hands the gateway out only when asked for it by address (a VM acting
    as the router); automatic allocation never gives it."""
    net = nw.network(network)
    sub = nw.subnet(network, net["id"], "10.0.0.0/24")
    assert nw.port(network, net["id"])["fixed_ips"][0]["ip_address"] == "10.0.0.2"
    router = nw.port(network, net["id"], fixed_ips=[{"ip_address": sub["gateway_ip"]}])
    assert router["fixed_ips"] == [{"subnet_id": sub["id"], "ip_address": "10.0.0.1"}]
    resp = network.post("/v2.0/ports", json={"port": {
        "network_id": net["id"], "fixed_ips": [{"ip_address": "10.0.0.1"}]}})
    nw.neutron_error(resp, 409, "IpAddressInUse")


@pytest.mark.parametrize(("params", "message"), [
    ({"sort_key": "colour", "sort_dir": "asc"}, "['colour'] is invalid attribute for sort_keys"),
    ({"sort_key": "name", "sort_dir": "up"},
     "['up'] is invalid value for sort_dirs, valid value is 'asc' and 'desc'"),
    ({"sort_key": "name"}, "The number of sort_keys and sort_dirs must be same"),
    ({"sort_dir": "desc"}, "The number of sort_keys and sort_dirs must be same"),
])
def test_bad_sorting_is_refused(network: httpx.Client, params: dict[str, str],
                                message: str) -> None:
    for collection in ("networks", "ports", "subnets", "security-groups"):
        resp = network.get(f"/v2.0/{collection}", params=params)
        assert nw.neutron_error(resp, 400, "HTTPBadRequest") == message


def test_sorting_by_a_key_and_direction(network: httpx.Client) -> None:
    for name in "bca":
        nw.network(network, name)
    names = [n["name"] for n in network.get("/v2.0/networks", params={
        "sort_key": "name", "sort_dir": "desc"}).json()["networks"]]
    assert names == ["c", "b", "a"]


@pytest.mark.parametrize(("collection", "key"), [
    ("networks", "admin_state_up"), ("networks", "shared"), ("ports", "admin_state_up"),
    ("subnets", "enable_dhcp")])
def test_a_boolean_filter_must_be_a_boolean(network: httpx.Client, collection: str,
                                            key: str) -> None:
    resp = network.get(f"/v2.0/{collection}", params={key: "notabool"})
    assert nw.neutron_error(resp, 400, "InvalidInput") == \
        "Invalid input for operation: 'notabool' cannot be converted to boolean."
    assert network.get(f"/v2.0/{collection}", params={key: "1"}).status_code == 200
