"""The stock `openstack` CLI's quota commands against `stowage serve`.

(`openstack limits show --absolute` also asks the Block Storage service for its
limits, which stowage does not serve; the /limits body is checked over HTTP in
test_quotas.py.)
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator

import pytest

from tests.functional.conftest import LiveServer, serving
from tests.functional.identity import identity_server
from tests.functional.osc import needs_osc, osc

pytestmark = needs_osc


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with serving("sqlite") as live:
        yield live


def test_quota_set_then_show(server: LiveServer) -> None:
    osc(server, "quota", "set", "--cores", "30", "--instances", "4", "--key-pairs", "7",
        "admin", json_out=False)
    shown = {row["Resource"]: row["Limit"] for row in
             osc(server, "quota", "show", "--compute", "admin")}
    assert (shown["cores"], shown["instances"], shown["key-pairs"]) == (30, 4, 7)
    assert (shown["ram"], shown["server-groups"], shown["properties"]) == (51200, 10, 128)


def test_usage_show_of_a_window_where_nothing_ran(server: LiveServer) -> None:
    """Nova answers `{"tenant_usage": {}}` then, which the CLI shows as empty columns."""
    shown = osc(server, "usage", "show", "--project", "admin", "--start", "2024-01-01",
                "--end", "2024-02-01")
    assert shown == {"Project": None, "Servers": None, "RAM MB-Hours": None,
                     "CPU Hours": None, "Disk GB-Hours": None}


def test_quota_show_without_flags_skips_the_absent_volume_service() -> None:
    """Signed in through the catalog (which has no Block Storage service), plain
    `openstack quota show` shows the Compute and Network limits. (With admin_token and
    endpoint overrides the CLI has no catalog and assumes a volume service: see
    docs/compatibility.md.)"""
    with identity_server("sqlite") as live:
        env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
        cmd = ["openstack", "--os-auth-url", f"{live.url}/identity/v3",
               "--os-username", "admin", "--os-password", "admin-pw",
               "--os-project-name", "admin", "--os-user-domain-name", "Default",
               "--os-project-domain-name", "Default", "--os-identity-api-version", "3",
               "--os-region-name", "RegionOne", "quota", "show", "-f", "json"]
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120,
                              check=False, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    shown = {row["Resource"]: row["Limit"] for row in json.loads(done.stdout)}
    assert (shown["networks"], shown["subnets"], shown["ports"]) == (100, 100, 500)
    assert (shown["security_groups"], shown["security_group_rules"]) == (10, 100)
    assert (shown["routers"], shown["floating_ips"], shown["instances"]) == (10, 50, 10)

def test_network_quota_set_then_show(server: LiveServer) -> None:
    osc(server, "quota", "set", "--networks", "7", "--ports", "-1", "admin", json_out=False)
    shown = {row["Resource"]: row["Limit"] for row in
             osc(server, "quota", "show", "--network", "admin")}
    assert (shown["networks"], shown["ports"], shown["subnets"]) == (7, -1, 100)
    used = {row["Resource"]: row for row in
            osc(server, "quota", "show", "--network", "--usage", "admin")}
    assert used["networks"]["In Use"] == 0 and used["networks"]["Limit"] == 7
    osc(server, "quota", "delete", "--network", "admin", json_out=False)
    shown = {row["Resource"]: row["Limit"] for row in
             osc(server, "quota", "show", "--network", "admin")}
    assert shown["networks"] == 100
