"""Helpers for the shelve tests: a booted server on two hosts, images, services, guests.

    host1 (16 VCPU, 8192 MB, 100 GB, zone "nova")   host2 (same)
      vm (small: 1 VCPU, 512 MB, 5 GB)  -- the spread weigher picks host1 first
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

from tests.functional.conftest import Cloud, api_client
from tests.functional.servers import boot, flavor, flavor_amounts, host_of, image

SMALL = flavor_amounts(1, 512, 5)


@dataclass
class Shelf:
    """The two hosts' providers, the booted server and the image it was booted from."""

    nodes: dict[str, str]
    server: str
    flavor: str
    image: str


def two_hosts_and_a_server(cloud: Cloud, offload_time: int = 0,
                           zones: tuple[str, str] = ("nova", "nova")) -> Shelf:
    cloud.configure(shelved_offload_time=offload_time)
    nodes = {name: cloud.add_host(name, vcpus=16, memory_mb=8192, disk_gb=100,
                                  availability_zone=zone)
             for name, zone in zip(("host1", "host2"), zones, strict=True)}
    flavor_id = flavor(cloud, "small", 1, 512, 5)
    image_id = image(cloud)
    server_id = boot(cloud, "vm", flavor_id, image_id)
    assert host_of(cloud, server_id) == "host1"
    return Shelf(nodes, server_id, flavor_id, image_id)


def images_named(cloud: Cloud, name: str) -> list[dict[str, Any]]:
    """The Image API's records of that name (as an admin sees them)."""
    with api_client(f"{cloud.live.url}/image") as client:
        resp = client.get("/v2/images", params={"name": name})
        assert resp.status_code == 200, resp.text
        return list(resp.json()["images"])


def set_service(cloud: Cloud, host: str, status: str) -> None:
    """PUT /os-services/{id} {"status": "enabled" | "disabled"}, as an operator does."""
    found = cloud.compute.get("/os-services", params={"host": host, "binary": "nova-compute"})
    assert found.status_code == 200, found.text
    [service] = found.json()["services"]
    resp = cloud.compute.put(f"/os-services/{service['id']}", json={"status": status})
    assert resp.status_code == 200, resp.text


def guest_power(cloud: Cloud, host: str, server_id: str) -> int:
    """What host's hypervisor says of the guest (0: no guest there)."""
    return cloud.plane.agent(host).driver.power_state(server_id)


def sts(view: dict[str, Any]) -> tuple[Any, ...]:
    """(status, vm_state, task_state, power_state, host) as `openstack server show` lists."""
    return (view["status"], view["OS-EXT-STS:vm_state"], view["OS-EXT-STS:task_state"],
            view["OS-EXT-STS:power_state"], view["OS-EXT-SRV-ATTR:host"])


def post_action(client: httpx.Client, server_id: str, body: dict[str, Any]) -> httpx.Response:
    return client.post(f"/servers/{server_id}/action", json=body)


def event_names(cloud: Cloud, server_id: str, action: str) -> list[tuple[str, str | None]]:
    """(event, result) of the server's newest `action`, oldest event first."""
    actions = cloud.compute.get(f"/servers/{server_id}/os-instance-actions").json()
    request_id = next(a["request_id"] for a in actions["instanceActions"]
                      if a["action"] == action)
    shown = cloud.compute.get(f"/servers/{server_id}/os-instance-actions/{request_id}").json()
    return [(e["event"], e["result"])
            for e in sorted(shown["instanceAction"]["events"], key=lambda e: e["start_time"])]
