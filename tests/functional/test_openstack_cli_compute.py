"""The stock `openstack` CLI's flavor and image commands against `stowage serve`.

Configured as the README tells a user to: a token, and endpoint overrides for
compute, identity and image; no Keystone anywhere.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.functional.conftest import LiveServer, serving
from tests.functional.osc import needs_osc, osc

pytestmark = needs_osc


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with serving("sqlite") as live:  # every service mounted, as plain `stowage serve`
        yield live


def test_flavor_lifecycle(server: LiveServer) -> None:
    made = osc(server, "flavor", "create", "cli.small", "--id", "cli-1", "--ram", "1024",
               "--vcpus", "2", "--disk", "10", "--description", "two cpus",
               "--property", "resources:VCPU=2", "--property", "hw:cpu_policy=dedicated")
    assert (made["id"], made["ram"], made["vcpus"], made["disk"]) == ("cli-1", 1024, 2, 10)
    assert made["properties"] == {"resources:VCPU": "2", "hw:cpu_policy": "dedicated"}
    osc(server, "flavor", "create", "cli.private", "--id", "cli-2", "--ram", "512",
        "--vcpus", "1", "--disk", "1", "--private")
    osc(server, "flavor", "set", "--project", "proj-a", "cli.private", json_out=False)

    public = osc(server, "flavor", "list")
    assert [f["ID"] for f in public] == ["cli-1"]
    every = {f["ID"]: f for f in osc(server, "flavor", "list", "--long", "--all")}
    assert set(every) == {"cli-1", "cli-2"}
    assert every["cli-2"]["Is Public"] is False
    assert every["cli-1"]["Properties"] == made["properties"]

    private = osc(server, "flavor", "show", "cli.private")
    assert private["access_project_ids"] == ["proj-a"]

    osc(server, "flavor", "set", "--property", "trait:HW_CPU_X86_AVX2=required", "cli-1",
        json_out=False)
    osc(server, "flavor", "unset", "--property", "hw:cpu_policy", "cli-1", json_out=False)
    shown = osc(server, "flavor", "show", "cli.small")
    assert shown["properties"] == {"resources:VCPU": "2", "trait:HW_CPU_X86_AVX2": "required"}
    assert shown["description"] == "two cpus"

    osc(server, "flavor", "delete", "cli.small", "cli.private", json_out=False)
    assert osc(server, "flavor", "list", "--all") == []


def test_image_create_list_show(server: LiveServer) -> None:
    made = osc(server, "image", "create", "cli-cirros",
               "--property", "trait:HW_CPU_X86_AVX2=required")
    assert made["status"] == "active"
    assert made["properties"]["trait:HW_CPU_X86_AVX2"] == "required"
    listed = osc(server, "image", "list")
    assert [(i["ID"], i["Name"], i["Status"]) for i in listed] == [
        (made["id"], "cli-cirros", "active")]
    shown = osc(server, "image", "show", "cli-cirros")
    assert shown["id"] == made["id"]
    assert shown["properties"]["trait:HW_CPU_X86_AVX2"] == "required"
