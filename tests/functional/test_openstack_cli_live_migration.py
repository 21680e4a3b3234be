"""The stock `openstack` CLI live-migrating a server against `stowage serve`.

    host1, host2, host3 (simulated); copies last 30 s unless forced or aborted

server create -> server migrate --live-migration (scheduled) -> server
migration list / show while it copies -> server migration abort -> back on
host1; server migrate --live-migration --host host3 -> server migration
force complete -> on host3. python-openstackclient sends the microversion
given with --os-compute-api-version (--host needs 2.30 or later, abort 2.24,
force complete 2.22, show 2.24; show by UUID 2.59).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from stowage.config import ComputeSettings
from tests.functional.conftest import LiveServer
from tests.functional.osc import needs_osc, osc, serving_hosts, settle

pytestmark = needs_osc

V = ("--os-compute-api-version", "2.80")


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with serving_hosts("host1", "host2", "host3",
                       compute=ComputeSettings(sim_live_migration_seconds=30.0)) as live:
        yield live


def _copying(live: LiveServer) -> dict[str, Any]:
    """The server's live migration once `server migration show` says it is copying."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        listed = osc(live, *V, "server", "migration", "list", "--server", "vm",
                     "--type", "live-migration")
        running = [m for m in listed if m["Status"] == "running"]
        if running:
            # By UUID: OSC 10.5.0 swaps server and migration when showing by ID (the
            # SDK's get_server_migration takes the migration first); by UUID it lists
            # GET /servers/{id}/migrations and picks the one.
            shown = osc(live, *V, "server", "migration", "show", "vm", running[0]["UUID"])
            if shown["Memory Processed Bytes"]:
                return dict(shown)
        time.sleep(0.2)
    raise AssertionError("the live migration never started copying")


def test_live_migrate_abort_and_force_complete(server: LiveServer) -> None:
    osc(server, "flavor", "create", "m1.small", "--id", "1", "--ram", "512", "--vcpus", "1",
        "--disk", "5")
    osc(server, "image", "create", "cirros")
    osc(server, "server", "create", "--flavor", "m1.small", "--image", "cirros",
        "--no-network", "--wait", "vm")
    assert osc(server, "server", "show", "vm")["OS-EXT-SRV-ATTR:host"] == "host1"

    osc(server, *V, "server", "migrate", "--live-migration", "vm", json_out=False)
    copying = _copying(server)
    assert (copying["Source Compute"], copying["Dest Compute"]) == ("host1", "host2")
    assert copying["Memory Total Bytes"] == 512 * 1024 * 1024
    assert osc(server, "server", "show", "vm")["status"] == "MIGRATING"
    osc(server, *V, "server", "migration", "abort", "vm", str(copying["ID"]), json_out=False)
    settle(server)
    shown = osc(server, "server", "show", "vm")
    assert (shown["status"], shown["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", "host1")

    osc(server, *V, "server", "migrate", "--live-migration", "--host", "host3", "vm",
        json_out=False)
    copying = _copying(server)
    assert copying["Dest Compute"] == "host3"
    osc(server, *V, "server", "migration", "force", "complete", "vm", str(copying["ID"]),
        json_out=False)
    settle(server)
    shown = osc(server, "server", "show", "vm")
    assert (shown["status"], shown["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", "host3")

    listed = osc(server, *V, "server", "migration", "list", "--server", "vm")
    assert sorted((m["Type"], m["Status"]) for m in listed) == [
        ("live-migration", "cancelled"), ("live-migration", "completed")]
