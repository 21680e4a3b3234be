"""Helpers for the live migration tests: the request, waiting for the copy, what each host runs.

    host1 (16 VCPU, 8192 MB, 100 GB)   host2 (same)   host3 (same)
      server (small: 1 VCPU, 512 MB, 5 GB)

The spread weigher breaks ties by name, so the server boots on host1 and a
scheduled live migration goes to host2 first, host3 being its alternate.
"""

from __future__ import annotations

import time
from typing import Any

import httpx

from tests.functional.conftest import Cloud
from tests.functional.servers import boot, flavor, flavor_amounts, image, settle

SMALL = flavor_amounts(1, 512, 5)
MIB = 1 << 20
HOSTS = ("host1", "host2", "host3")


def three_hosts(cloud: Cloud, hosts: tuple[str, ...] = HOSTS) -> dict[str, str]:
    """The hosts above, the small flavor, and the server on host1: name -> node uuid,
    plus "server" -> the server's id."""
    nodes = {name: cloud.add_host(name, vcpus=16, memory_mb=8192, disk_gb=100)
             for name in hosts}
    small = flavor(cloud, "small", 1, 512, 5)
    nodes["server"] = boot(cloud, "vm", small, image(cloud))
    return nodes


def live_migrate(cloud: Cloud, server_id: str, host: str | None = None,
                 version: str = "latest", wait: bool = True, **extra: Any) -> httpx.Response:
    """POST os-migrateLive at `version` (block_migration "auto" from 2.25, else false +
    disk_over_commit false); waits for the control plane unless `wait` is False."""
    minor = 200 if version == "latest" else int(version.split(".")[1])
    body: dict[str, Any] = {"host": host, "block_migration": "auto" if minor >= 25 else False}
    if minor < 25:
        body["disk_over_commit"] = False
    body.update(extra)
    with cloud.client("admin", version) as client:
        resp = client.post(f"/servers/{server_id}/action", json={"os-migrateLive": body})
    if wait:
        settle(cloud)
    return resp


def in_progress(cloud: Cloud, server_id: str) -> list[dict[str, Any]]:
    resp = cloud.compute.get(f"/servers/{server_id}/migrations")
    assert resp.status_code == 200, resp.text
    return list(resp.json()["migrations"])


def wait_copying(cloud: Cloud, server_id: str, timeout: float = 20) -> dict[str, Any]:
    """Poll GET /servers/{id}/migrations until the copy runs and has moved some memory."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = in_progress(cloud, server_id)
        if found and found[0]["status"] == "running" and found[0]["memory_processed_bytes"]:
            return found[0]
        time.sleep(0.05)
    raise AssertionError(f"no running live migration for {server_id}: "
                         f"{in_progress(cloud, server_id)}")


def guests(cloud: Cloud, host: str) -> list[str]:
    """The instances whose guest the host's hypervisor runs (or holds set aside)."""
    driver: Any = cloud.plane.agent(host).driver
    return sorted(set(driver.guests) | {key[0] for key in driver.leftovers})


def events(cloud: Cloud, server_id: str, action: str) -> list[tuple[str, str | None, str]]:
    """(event, host, result) of the server's last `action`, in the order they started."""
    listed = cloud.compute.get(f"/servers/{server_id}/os-instance-actions").json()
    request_id = next(a["request_id"] for a in listed["instanceActions"]
                      if a["action"] == action)
    shown = cloud.compute.get(f"/servers/{server_id}/os-instance-actions/{request_id}").json()
    found = sorted(shown["instanceAction"]["events"], key=lambda e: e["start_time"])
    return [(e["event"], e.get("host"), e["result"]) for e in found]
