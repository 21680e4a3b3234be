"""The stock `openstack` CLI with key pairs, server properties and tags.

    host1 (simulated)

keypair create (imported), keypair list, server set --property --tag, server
show, keypair delete; the flavor, image and server are made over HTTP (faster
than the CLI) with the key pair the CLI created.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.functional.conftest import LiveServer, api_client
from tests.functional.osc import needs_osc, osc, serving_hosts, settle
from tests.functional.servers import image_at

pytestmark = needs_osc

_PUBLIC = ("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl "
           "demo@host")


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with serving_hosts("host1") as live:
        yield live


def test_keypair_and_server_properties(server: LiveServer, tmp_path: Path) -> None:
    key_file = tmp_path / "id.pub"
    key_file.write_text(_PUBLIC + "\n")
    made = osc(server, "keypair", "create", "--public-key", str(key_file), "mykey")
    assert made["name"] == "mykey" and len(made["fingerprint"].split(":")) == 16
    assert [k["Name"] for k in osc(server, "keypair", "list")] == ["mykey"]
    with api_client(f"{server.url}/compute/v2.1") as compute:
        assert compute.post("/flavors", json={"flavor": {
            "name": "m1.small", "id": "1", "ram": 512, "vcpus": 1, "disk": 1}}
        ).status_code == 200
        made_vm = compute.post("/servers", json={"server": {
            "name": "vm", "flavorRef": "1", "imageRef": image_at(server.url),
            "key_name": "mykey"}})
        assert made_vm.status_code == 202, made_vm.text
    settle(server)
    osc(server, "--os-compute-api-version", "2.26", "server", "set", "--property", "role=web",
        "--tag", "blue", "vm", json_out=False)
    shown = osc(server, "--os-compute-api-version", "2.26", "server", "show", "vm")
    assert "role" in str(shown["properties"]) and "blue" in str(shown["tags"])
    assert shown["key_name"] == "mykey"
    osc(server, "keypair", "delete", "mykey", json_out=False)
