"""Helpers for the Networking API tests: create records over HTTP, check Neutron's error bodies.

Every helper takes an httpx client rooted at `/network` (the `network`
fixture, or `api_client(live.url + "/network", token=...)` for another
caller) and asserts the status it expects, so a test reads as the calls a
user makes and what they see.
"""

from __future__ import annotations

from typing import Any

import httpx

__all__ = ["made", "network", "physnet", "subnet", "port", "qos_policy", "neutron_error", "ids",
           "COMPUTE"]

COMPUTE = "compute:nova"


def made(resp: httpx.Response, key: str, status: int = 201) -> dict[str, Any]:
    assert resp.status_code == status, resp.text
    return dict(resp.json()[key])


def network(client: httpx.Client, name: str = "net", **fields: Any) -> dict[str, Any]:
    return made(client.post("/v2.0/networks", json={"network": {"name": name, **fields}}),
                "network")


def physnet(client: httpx.Client, name: str = "net", physnet_name: str = "physnet0",
            vlan: int | None = None, **fields: Any) -> dict[str, Any]:
    """A VLAN network on a physnet (flat when `vlan` is None)."""
    provider: dict[str, Any] = {"provider:network_type": "vlan" if vlan else "flat",
                                "provider:physical_network": physnet_name}
    if vlan:
        provider["provider:segmentation_id"] = vlan
    return network(client, name, **provider, **fields)


def subnet(client: httpx.Client, network_id: str, cidr: str = "10.0.0.0/24",
           **fields: Any) -> dict[str, Any]:
    version = 6 if ":" in cidr else 4
    body = {"subnet": {"network_id": network_id, "cidr": cidr, "ip_version": version,
                       **fields}}
    return made(client.post("/v2.0/subnets", json=body), "subnet")


def port(client: httpx.Client, network_id: str, **fields: Any) -> dict[str, Any]:
    return made(client.post("/v2.0/ports", json={"port": {"network_id": network_id,
                                                          **fields}}), "port")


def qos_policy(client: httpx.Client, name: str = "qp", **min_kbps: int) -> dict[str, Any]:
    """A policy with a minimum-bandwidth rule per direction given (egress=1000, ...)."""
    policy = made(client.post("/v2.0/qos/policies", json={"policy": {"name": name}}),
                  "policy")
    for direction, kbps in min_kbps.items():
        made(client.post(f"/v2.0/qos/policies/{policy['id']}/minimum_bandwidth_rules",
                         json={"minimum_bandwidth_rule": {"min_kbps": kbps,
                                                          "direction": direction}}),
             "minimum_bandwidth_rule")
    return made(client.get(f"/v2.0/qos/policies/{policy['id']}"), "policy", 200)


def neutron_error(resp: httpx.Response, status: int, error_type: str) -> str:
    """Assert Neutron's error body; returns its message."""
    assert resp.status_code == status, resp.text
    body = resp.json()["NeutronError"]
    assert body["type"] == error_type, body
    assert body["detail"] == ""
    return str(body["message"])


def ids(resp: httpx.Response, key: str) -> list[str]:
    assert resp.status_code == 200, resp.text
    return [item["id"] for item in resp.json()[key]]
