"""The worlds the drain tests plan and carry out, and the Compute API as a drain calls it.

The varied world (`varied`)::

    host1 16 VCPU 16 GB 200 GB, zone "zoneA"   <- drained; every server starts here
      g1, g2   small, anti-affinity group (max_server_per_host 2)
      az       small, booted into zone "zoneA"
      paused   small, PAUSED (moves live, stays paused)
      stopped  medium, SHUTOFF (moves cold)
    host2 4 VCPU 4 GB 40 GB (cpu ratio 1, ram ratio 1)  g3 of the group (booted there)
    host3 same as host2, zone "zoneA"
    host4 same, its service forced down
    host5 same

Servers are booted while host1 is the only host (g3 after host2 is added and
host1 is disabled), so where each starts is certain.
"""

from __future__ import annotations

from typing import Any

import httpx

from tests.functional.conftest import Cloud
from tests.functional.servers import action, boot, flavor, force_down, image

SMALL = (1, 512, 5)
MEDIUM = (2, 1024, 10)
HOST = {"vcpus": 4, "memory_mb": 4096, "disk_gb": 40, "cpu_allocation_ratio": 1.0,
        "ram_allocation_ratio": 1.0}


class ComputeOverHttp:
    """`execute.ComputeCalls` over an httpx client (admin, latest microversion)."""

    def __init__(self, client: httpx.Client) -> None:
        self.client = client

    def __call__(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        resp = self.client.request(method, path, json=body)
        try:
            return resp.status_code, resp.json() if resp.content else None
        except ValueError:
            return resp.status_code, resp.text


def set_status(cloud: Cloud, host: str, status: str) -> None:
    [service] = [s for s in cloud.compute.get("/os-services").json()["services"]
                 if s["host"] == host and s["binary"] == "nova-compute"]
    resp = cloud.compute.put(f"/os-services/{service['id']}", json={"status": status})
    assert resp.status_code == 200, resp.text


def group(cloud: Cloud, policy: str, rules: dict[str, Any] | None = None) -> str:
    body: dict[str, Any] = {"name": "g", "policy": policy}
    if rules:
        body["rules"] = rules
    resp = cloud.compute.post("/os-server-groups", json={"server_group": body})
    assert resp.status_code == 200, resp.text
    return str(resp.json()["server_group"]["id"])


def varied(cloud: Cloud) -> dict[str, str]:
    """The world above: name -> server id, plus "group" -> the group's id."""
    cloud.add_host("host1", vcpus=16, memory_mb=16384, disk_gb=200,
                   availability_zone="zoneA")
    small, medium = flavor(cloud, "small", *SMALL), flavor(cloud, "medium", *MEDIUM)
    img = image(cloud)
    gid = group(cloud, "anti-affinity", {"max_server_per_host": 2})
    ids = {"group": gid}
    for name in ("g1", "g2"):
        ids[name] = boot(cloud, name, small, img, hints={"group": gid})
    ids["az"] = boot(cloud, "az", small, img, availability_zone="zoneA")
    ids["paused"] = boot(cloud, "paused", small, img)
    action(cloud, ids["paused"], {"pause": None})
    ids["stopped"] = boot(cloud, "stopped", medium, img)
    action(cloud, ids["stopped"], {"os-stop": None})
    cloud.add_host("host2", **HOST)
    set_status(cloud, "host1", "disabled")
    ids["g3"] = boot(cloud, "g3", small, img, hints={"group": gid})
    set_status(cloud, "host1", "enabled")
    cloud.add_host("host3", **{**HOST, "availability_zone": "zoneA"})
    cloud.add_host("host4", **HOST)
    force_down(cloud, "host4")
    cloud.add_host("host5", **HOST)
    return ids
