"""The stock `openstack` CLI rebooting, pausing, suspending, locking and rebuilding a server.

    host1; one server `vm` (m1.small, cirros), rebuilt from `fedora`
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.functional.conftest import LiveServer
from tests.functional.osc import needs_osc, osc, serving_hosts, settle

pytestmark = needs_osc


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with serving_hosts("host1") as live:
        yield live


def test_guest_actions_lock_and_rebuild_with_the_cli(server: LiveServer) -> None:
    osc(server, "flavor", "create", "m1.small", "--id", "1", "--ram", "512", "--vcpus", "1",
        "--disk", "5")
    osc(server, "image", "create", "cirros")
    fedora = osc(server, "image", "create", "fedora")["id"]
    made = osc(server, "server", "create", "--flavor", "m1.small", "--image", "cirros",
               "--no-network", "--wait", "vm")
    assert made["status"] == "ACTIVE"
    for args in (("reboot", "--hard"), ("suspend",)):
        osc(server, "server", *args, "vm", json_out=False)
    settle(server)
    osc(server, "--os-compute-api-version", "2.73", "server", "lock", "--reason", "audit",
        "vm", json_out=False)
    shown = osc(server, "--os-compute-api-version", "2.73", "server", "show", "vm")
    assert (shown["status"], shown["locked"], shown["locked_reason"]) == (
        "SUSPENDED", True, "audit")
    for args in (("unlock",), ("resume",), ("pause",), ("unpause",)):
        osc(server, "server", *args, "vm", json_out=False)
        settle(server)
    osc(server, "server", "rebuild", "--image", "fedora", "--wait", "vm", json_out=False)
    shown = osc(server, "server", "show", "vm")
    assert shown["status"] == "ACTIVE" and fedora in str(shown["image"])
