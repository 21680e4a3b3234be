"""Helpers for the evacuate tests: the server on a host about to die, and the request.

    host1 (dies)                         host2              host3 (when asked for)
      server (small: 1 VCPU, 512 MB, 5 GB)

The hosts are equal; the spread weigher breaks the tie by name, so the
server boots on host1 and an evacuation goes to host2 first, host3 being
its alternate.
"""

from __future__ import annotations

from typing import Any

import httpx

from tests.functional.conftest import Cloud
from tests.functional.servers import (
    boot,
    flavor,
    flavor_amounts,
    image,
    migrations_of,
    server,
    settle,
)

SMALL = flavor_amounts(1, 512, 5)


def server_on_host1(cloud: Cloud, hosts: tuple[str, ...] = ("host1", "host2")) -> dict[str, str]:
    """The hosts above and the small flavor's server on host1: name -> node uuid, plus
    "small" -> the flavor's id and "server" -> the server's id."""
    nodes = {name: cloud.add_host(name, vcpus=16, memory_mb=8192, disk_gb=100)
             for name in hosts}
    nodes["small"] = flavor(cloud, "small", 1, 512, 5)
    nodes["server"] = boot(cloud, "vm", nodes["small"], image(cloud))
    assert server(cloud, nodes["server"])["OS-EXT-SRV-ATTR:host"] == "host1"
    return nodes


def evacuate(cloud: Cloud, server_id: str, body: dict[str, Any] | None = None,
             status: int = 200, version: str = "latest") -> httpx.Response:
    """POST the evacuate action as the admin at `version`, expect `status`, and wait for
    the control plane."""
    with cloud.client("admin", version=version) as client:
        resp = client.post(f"/servers/{server_id}/action", json={"evacuate": body or {}})
    assert resp.status_code == status, resp.text
    settle(cloud)
    return resp


def the_migration(cloud: Cloud, server_id: str) -> dict[str, Any]:
    """The server's one migration, an evacuation, as the API lists it."""
    [mig] = migrations_of(cloud, server_id)
    assert mig["migration_type"] == "evacuation"
    return mig
