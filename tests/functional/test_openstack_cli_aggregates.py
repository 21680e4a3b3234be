"""The stock `openstack` CLI's aggregate and availability zone commands against `stowage serve`.

    host1 ─── aggregate "cli-rack" (zone "cli-az", property ssd=true)
    host2     (default zone "nova")
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.functional.conftest import LiveServer
from tests.functional.osc import needs_osc, osc, serving_hosts

pytestmark = needs_osc


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with serving_hosts("host1", "host2") as live:
        yield live


def test_aggregate_lifecycle_and_zones(server: LiveServer) -> None:
    made = osc(server, "aggregate", "create", "--zone", "cli-az", "cli-rack")
    assert (made["name"], made["availability_zone"]) == ("cli-rack", "cli-az")
    added = osc(server, "aggregate", "add", "host", "cli-rack", "host1")
    assert added["hosts"] == ["host1"]
    osc(server, "aggregate", "set", "--property", "ssd=true", "cli-rack", json_out=False)
    shown = osc(server, "aggregate", "show", "cli-rack")
    assert shown["properties"] == {"ssd": "true"}
    assert shown["hosts"] == ["host1"]
    zones = {z["Zone Name"]: z for z in osc(server, "availability", "zone", "list",
                                            "--compute")}
    assert set(zones) >= {"cli-az", "nova"}
    assert zones["cli-az"]["Zone Status"] == "available"
    hosts = osc(server, "availability", "zone", "list", "--compute", "--long")
    assert {(z["Zone Name"], z["Host Name"]) for z in hosts if z["Service Name"] ==
            "nova-compute"} == {("cli-az", "host1"), ("nova", "host2")}
    osc(server, "aggregate", "remove", "host", "cli-rack", "host1")
    osc(server, "aggregate", "delete", "cli-rack", json_out=False)
