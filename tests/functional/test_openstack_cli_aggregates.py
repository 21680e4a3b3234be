"""The stock `openstack` CLI's aggregate and availability zone commands against `stowage serve`.

    host1 ─── aggregate "cli-rack" (zone "cli-az", property ssd=true)
    host2     (default zone "nova")
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.functional.conftest import LiveServer, api_client
from tests.functional.osc import needs_osc, osc, serving_hosts

pytestmark = needs_osc


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with serving_hosts("host1", "host2") as live:
        yield live


def test_aggregate_commands_and_zone_list(server: LiveServer) -> None:
    """Four commands (each CLI start costs seconds); the rest is checked over HTTP."""
    made = osc(server, "aggregate", "create", "--zone", "cli-az", "cli-rack")
    assert (made["name"], made["availability_zone"]) == ("cli-rack", "cli-az")
    added = osc(server, "aggregate", "add", "host", "cli-rack", "host1")
    assert added["hosts"] == ["host1"]
    osc(server, "aggregate", "set", "--property", "ssd=true", "cli-rack", json_out=False)
    with api_client(f"{server.url}/compute/v2.1") as compute:
        shown = compute.get(f"/os-aggregates/{made['id']}").json()["aggregate"]
    assert shown["metadata"] == {"availability_zone": "cli-az", "ssd": "true"}
    hosts = osc(server, "availability", "zone", "list", "--compute", "--long")
    assert {(z["Zone Name"], z["Zone Status"], z["Host Name"]) for z in hosts
            if z["Service Name"] == "nova-compute"} == {("cli-az", "available", "host1"),
                                                        ("nova", "available", "host2")}
