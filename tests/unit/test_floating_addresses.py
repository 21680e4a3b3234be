"""The floating addresses compute caches and shows: what it asks of the Network service
(`GET /floatingips`), how a port's vif carries them, and the server view's `addresses`
and Nova's floating-IP view built from them."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from stowage.compute.api.floating_ips import floating_view
from stowage.compute.api.server_views import addresses
from stowage.compute.floating_addresses import floating_of_ports, with_floating
from stowage.compute.instance_ports import InstancePort
from stowage.network.client import NetworkClient, NetworkError
from stowage.web.service_client import Answer

PORT_A, PORT_B = "port-a", "port-b"


def _client(status: int, body: dict[str, Any],
            seen: list[tuple[str, str, Sequence[tuple[str, str]] | None]]) -> NetworkClient:
    def send(method: str, path: str, content: bytes | None,
             params: Sequence[tuple[str, str]] | None) -> Answer:
        seen.append((method, path, params))
        return Answer(status, json.dumps(body).encode())
    return NetworkClient(send)


def _fip(address: str, port_id: str | None, fixed: str | None) -> dict[str, Any]:
    return {"id": f"id-{address}", "floating_ip_address": address, "port_id": port_id,
            "fixed_ip_address": fixed, "floating_network_id": "ext"}


def test_floating_of_ports_groups_by_port_and_fixed_address() -> None:
    seen: list[Any] = []
    client = _client(200, {"floatingips": [
        _fip("172.24.4.9", PORT_A, "10.0.0.5"), _fip("172.24.4.3", PORT_A, "10.0.0.5"),
        _fip("172.24.4.4", PORT_B, "10.0.1.7"), _fip("172.24.4.5", None, None),
        _fip("172.24.4.6", "someone-else", "10.9.9.9")]}, seen)
    found = floating_of_ports(client, [PORT_B, PORT_A, PORT_A])
    assert found == {PORT_A: {"10.0.0.5": ["172.24.4.3", "172.24.4.9"]},
                     PORT_B: {"10.0.1.7": ["172.24.4.4"]}}
    assert seen == [("GET", "/v2.0/floatingips", [("port_id", PORT_A), ("port_id", PORT_B)])]


def test_no_ports_asks_nothing_and_no_l3_api_is_no_floating_ip() -> None:
    seen: list[Any] = []
    assert floating_of_ports(_client(200, {}, seen), []) == {}
    assert seen == []
    missing = _client(404, {"NeutronError": {"type": "HTTPNotFound", "message": "nope",
                                             "detail": ""}}, seen)
    assert floating_of_ports(missing, [PORT_A]) == {}
    broken = _client(500, {"NeutronError": {"type": "Boom", "message": "x", "detail": ""}}, [])
    with pytest.raises(NetworkError):
        floating_of_ports(broken, [PORT_A])


def _port(position: int, port_id: str, vif: dict[str, Any] | None) -> InstancePort:
    return InstancePort(position, "vm", position, port_id, None, None, True, None, vif)


def test_addresses_show_floating_after_the_fixed_ones_of_their_network() -> None:
    first = with_floating({"network": "private", "mac": "fa:16:3e:00:00:01", "ips": [
        {"address": "10.0.0.5", "version": 4}, {"address": "fd00::5", "version": 6}]},
        {"10.0.0.5": ["172.24.4.3"]})
    assert first["ips"][0]["floating"] == ["172.24.4.3"]
    assert first["ips"][1]["floating"] == []
    second = {"network": "private", "mac": "fa:16:3e:00:00:02",
              "ips": [{"address": "10.0.0.6", "version": 4}]}  # cached before floating IPs
    other = with_floating({"network": "other", "mac": "fa:16:3e:00:00:03",
                           "ips": [{"address": "10.1.0.2", "version": 4}]}, {})
    shown = addresses([_port(0, PORT_A, first), _port(1, PORT_B, second),
                       _port(2, "c", other), _port(3, "d", None)])
    assert list(shown) == ["private", "other"]
    assert [(a["addr"], a["OS-EXT-IPS:type"], a["OS-EXT-IPS-MAC:mac_addr"])
            for a in shown["private"]] == [
        ("10.0.0.5", "fixed", "fa:16:3e:00:00:01"), ("fd00::5", "fixed", "fa:16:3e:00:00:01"),
        ("10.0.0.6", "fixed", "fa:16:3e:00:00:02"),
        ("172.24.4.3", "floating", "fa:16:3e:00:00:01")]
    assert shown["private"][-1]["version"] == 4
    assert [a["OS-EXT-IPS:type"] for a in shown["other"]] == ["fixed"]


def test_nova_floating_ip_view() -> None:
    pools = {"ext": {"id": "ext", "name": "public"}}
    free = _fip("172.24.4.3", None, None)
    assert floating_view(free, pools, {}) == {
        "id": "id-172.24.4.3", "ip": "172.24.4.3", "pool": "public", "fixed_ip": None,
        "instance_id": None}
    on_port = _fip("172.24.4.4", PORT_A, "10.0.0.5")
    assert floating_view(on_port, {}, {PORT_A: {"device_id": "vm-1"}}) == {
        "id": "id-172.24.4.4", "ip": "172.24.4.4", "pool": "ext", "fixed_ip": "10.0.0.5",
        "instance_id": "vm-1"}
    detailed = {**on_port, "port_details": {"device_id": "vm-2"}}
    assert floating_view(detailed, pools, {PORT_A: {"device_id": "vm-1"}})["instance_id"] == (
        "vm-2")
