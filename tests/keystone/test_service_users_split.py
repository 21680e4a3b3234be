"""Service users through a real Keystone, no shared database::

                         Keystone (catalog: placement, network, image -> A; compute -> B)
                      password ^  placement, neutron        ^ password nova
                               |                            |
    B  compute + one simulated host   -- Keystone token -->   A  placement, network, image
       database B, [placement] and    <-- Keystone token --      database A, [nova]
       [network] tables, no *_url         (vif-deleted)          table, no compute_url

`stowage manage keystone register` puts both in Keystone (twice: the second
run changes nothing) and prints the tables each side's settings file takes,
`[api] auth_strategy = "keystone"` included: both sides check every token
with Keystone. Neither side names the other's URL: each finds it in the
catalog; A and B share no database, so no token table. Each side keeps the
tokens it was sent, which Keystone itself reads back as the service users.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from stowage import config
from stowage.compute.hosts import HostConfig
from stowage.manage_bootstrap import bootstrap
from tests.dbs import throwaway_database
from tests.functional.conftest import LiveServer, free_port
from tests.keystone.fixture import Keystone
from tests.keystone.service_users import TokenLog, register, start_logged


@dataclass
class Split:
    a: LiveServer
    b: LiveServer
    a_log: TokenLog
    b_log: TokenLog
    image_id: str
    admin: dict[str, str]  # headers with a Keystone token of the cloud's admin


def _settings(tmp: Path, name: str, url: str, services: str, tables: str) -> config.Settings:
    path = tmp / f"{name}.toml"
    listed = ", ".join(f'"{s}"' for s in services.split(","))
    path.write_text(f'database = "{url}"\nservices = [{listed}]\n{tables}\n')
    return config.load(str(path))


@pytest.fixture(scope="module")
def split(keystone: Keystone, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Split]:
    keystone.ensure_running()
    tmp = tmp_path_factory.mktemp("split")
    port_a, port_b = free_port(), free_port()
    status, for_b, _ = register(keystone, f"http://127.0.0.1:{port_a}", "placement,network,image")
    assert status == 0
    status, for_a, _ = register(keystone, f"http://127.0.0.1:{port_b}", "compute")
    assert status == 0
    with throwaway_database("sqlite") as url_a, throwaway_database("sqlite") as url_b:
        settings_a = _settings(tmp, "a", url_a, "placement,network,image", for_a)
        settings_b = _settings(tmp, "b", url_b, "compute", for_b)
        assert settings_a.service_user("nova").configured
        assert settings_b.service_user("placement").configured
        assert settings_a.api.auth_strategy == settings_b.api.auth_strategy == "keystone"
        assert not (settings_b.compute.placement_url or settings_a.network.compute_url)
        a, a_log = start_logged(settings_a, port_a)
        b, b_log = start_logged(settings_b, port_b)
        made = bootstrap(settings_b, b.db)
        image_id = re.search(r"image cirros created \((\S+)\)", "\n".join(made))
        assert image_id is not None
        try:
            admin = {"x-auth-token": keystone.admin.admin_token(),
                     "accept": "application/json"}
            yield Split(a, b, a_log, b_log, image_id.group(1), admin)
        finally:
            b.close()
            a.close()


def test_register_again_changes_nothing(keystone: Keystone, split: Split) -> None:
    status, out, err = register(keystone, split.a.url, "placement,network,image")
    assert status == 0, err
    assert "created" not in err and "moved" not in err
    assert err.count("(unchanged)") == 6  # three services, public and internal
    assert '[placement]' in out and 'username = "placement"' in out
    endpoints = keystone.admin.session.get(f"{keystone.auth_url}/endpoints").json()
    placement = [e for e in endpoints["endpoints"] if e["url"] == f"{split.a.url}/placement"]
    assert sorted(e["interface"] for e in placement) == ["internal", "public"]


def _whose(keystone: Keystone, tokens: set[str]) -> set[str]:
    return {keystone.admin.validate(token)["user"]["name"] for token in tokens}


def _wait(check: object, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def test_compute_reaches_placement_and_network_as_service_users_from_the_catalog(
        keystone: Keystone, split: Split) -> None:
    a, b = split.a, split.b
    assert b.plane is not None
    b.plane.add_host(HostConfig(name="kshost"))
    try:
        with httpx.Client(base_url=a.url, headers=split.admin, timeout=30) as on_a, \
                httpx.Client(base_url=f"{b.url}/compute/v2.1", timeout=30, headers={
                    **split.admin, "openstack-api-version": "compute 2.90"}) as on_b:
            placement = {"openstack-api-version": "placement 1.39"}
            _wait(lambda: on_a.get("/placement/resource_providers", headers=placement)
                  .json()["resource_providers"])
            provider = on_a.get("/placement/resource_providers",
                                headers=placement).json()["resource_providers"][0]
            assert provider["name"] == "kshost"
            booted = on_b.post("/servers", json={"server": {
                "name": "ks", "flavorRef": "1", "imageRef": split.image_id,
                "networks": "none"}})
            assert booted.status_code == 202, booted.text
            assert b.plane.drain(60)
            server_id = booted.json()["server"]["id"]
            assert on_b.get(f"/servers/{server_id}").json()["server"]["status"] == "ACTIVE"
            held = on_a.get(f"/placement/allocations/{server_id}",
                            headers=placement).json()["allocations"]
            assert held[provider["uuid"]]["resources"] == {"VCPU": 1, "MEMORY_MB": 512,
                                                           "DISK_GB": 1}
            # The server's interfaces are its ports: asked of the Network service.
            listed = on_b.get(f"/servers/{server_id}/os-interface")
            assert listed.status_code == 200 and listed.json()["interfaceAttachments"] == []
    finally:
        b.plane.stop_host("kshost")
    ours = {split.admin["x-auth-token"]}  # the test's own calls
    assert _whose(keystone, split.a_log.tokens("/placement/") - ours) == {"placement"}
    assert _whose(keystone, split.a_log.tokens("/network/") - ours) == {"neutron"}


def test_the_network_service_tells_compute_as_nova_from_the_catalog(
        keystone: Keystone, split: Split) -> None:
    a = split.a
    assert not split.b_log.tokens("/os-server-external-events")
    with httpx.Client(base_url=f"{a.url}/network/v2.0", headers=split.admin,
                      timeout=30) as net:
        network = net.post("/networks", json={"network": {"name": "n"}}).json()["network"]
        port = net.post("/ports", json={"port": {
            "network_id": network["id"], "device_owner": "compute:nova",
            "device_id": str(uuid.uuid4())}}).json()["port"]
        assert net.delete(f"/ports/{port['id']}").status_code == 204
    _wait(lambda: split.b_log.tokens("/os-server-external-events"))
    assert _whose(keystone, split.b_log.tokens("/os-server-external-events")) == {"nova"}
