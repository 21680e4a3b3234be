"""The stock `openstack` CLI with password auth against Keystone, endpoints from its catalog::

    openstack (OS_AUTH_URL, admin / password, project admin; no endpoint given)
        |  token from Keystone; placement, compute, network, image found in the catalog
        v
    stowage (every service, auth_strategy keystone, host1..host3 simulated),
    registered by `stowage manage keystone register` and configured with what it prints

What an operator of a cloud with Keystone does: resource providers,
inventories, traits and allocation candidates (osc-placement); a server
created, resized and confirmed, cold-migrated, live-migrated; a network
and a port.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from stowage import config
from stowage.compute.hosts import HostConfig
from tests.dbs import throwaway_database
from tests.functional.conftest import LiveServer, free_port
from tests.functional.osc import _command, needs_osc, settle
from tests.keystone.fixture import Keystone
from tests.keystone.service_users import register, start_logged

pytestmark = needs_osc
HOSTS = ("host1", "host2", "host3")


@pytest.fixture(scope="module")
def cloud(keystone: Keystone, tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[LiveServer]:
    keystone.ensure_running()
    port = free_port()
    status, tables, err = register(keystone, f"http://127.0.0.1:{port}",
                                   "placement,compute,network,image")
    assert status == 0, err
    path = tmp_path_factory.mktemp("osc-keystone") / "stowage.toml"
    with throwaway_database("sqlite") as url:
        path.write_text(f'database = "{url}"\n{tables}\n')
        live, _ = start_logged(config.load(str(path)), port)
        assert live.plane is not None
        for name in HOSTS:
            live.plane.add_host(HostConfig(name=name))
        try:
            yield live
        finally:
            live.close()


def _osc(keystone: Keystone, *args: str, json_out: bool = True) -> Any:
    """One command as Keystone's admin with password auth: no endpoint, no token given."""
    env = {"OS_AUTH_URL": keystone.auth_url, "OS_AUTH_TYPE": "password",
           "OS_USERNAME": keystone.admin_username, "OS_PASSWORD": keystone.admin_password,
           "OS_PROJECT_NAME": keystone.admin_project, "OS_USER_DOMAIN_NAME": "Default",
           "OS_PROJECT_DOMAIN_NAME": "Default", "OS_REGION_NAME": keystone.region,
           "OS_IDENTITY_API_VERSION": "3", "OS_INTERFACE": "public"}
    argv = [*args] + (["-f", "json"] if json_out else [])
    rc, stdout, stderr = _command(argv, env)
    assert rc == 0, f"openstack {' '.join(argv)}\n{stdout}\n{stderr}"
    return json.loads(stdout) if json_out and stdout.strip() else None


def test_placement_through_the_catalog(keystone: Keystone, cloud: LiveServer) -> None:
    made = _osc(keystone, "resource", "provider", "create", "ks-rp")
    rp = made["uuid"]
    assert rp in {p["uuid"] for p in _osc(keystone, "resource", "provider", "list")}
    _osc(keystone, "resource", "provider", "inventory", "set", rp,
         "--resource", "VCPU=8", "--resource", "MEMORY_MB=4096")
    traits = {t["name"] for t in _osc(keystone, "trait", "list")}
    assert "HW_CPU_X86_AVX2" in traits
    candidates = _osc(keystone, "allocation", "candidate", "list", "--resource", "VCPU=2",
                      "--resource", "MEMORY_MB=1024")
    assert rp in {c["resource provider"] for c in candidates}
    _osc(keystone, "resource", "provider", "delete", rp, json_out=False)


def test_servers_moved_through_the_catalog(keystone: Keystone, cloud: LiveServer) -> None:
    _osc(keystone, "flavor", "create", "ks.small", "--ram", "512", "--vcpus", "1",
         "--disk", "1")
    _osc(keystone, "flavor", "create", "ks.large", "--ram", "1024", "--vcpus", "2",
         "--disk", "1")
    _osc(keystone, "image", "create", "ks-cirros")
    made = _osc(keystone, "server", "create", "--flavor", "ks.small", "--image", "ks-cirros",
                "--no-network", "--wait", "ks-vm")
    assert made["status"] == "ACTIVE"
    _osc(keystone, "server", "resize", "--flavor", "ks.large", "--wait", "ks-vm",
         json_out=False)
    assert _osc(keystone, "server", "show", "ks-vm")["status"] == "VERIFY_RESIZE"
    _osc(keystone, "server", "resize", "confirm", "ks-vm", json_out=False)
    settle(cloud)
    here = _osc(keystone, "server", "show", "ks-vm")["OS-EXT-SRV-ATTR:host"]
    _osc(keystone, "server", "migrate", "--wait", "ks-vm", json_out=False)
    _osc(keystone, "server", "resize", "confirm", "ks-vm", json_out=False)
    settle(cloud)
    moved = _osc(keystone, "server", "show", "ks-vm")
    assert moved["status"] == "ACTIVE" and moved["OS-EXT-SRV-ATTR:host"] != here
    target = next(h for h in HOSTS if h != moved["OS-EXT-SRV-ATTR:host"])
    _osc(keystone, "--os-compute-api-version", "2.30", "server", "migrate",
         "--live-migration", "--host", target, "--wait", "ks-vm", json_out=False)
    settle(cloud)
    shown = _osc(keystone, "server", "show", "ks-vm")
    assert shown["status"] == "ACTIVE" and shown["OS-EXT-SRV-ATTR:host"] == target


def test_network_and_port_through_the_catalog(keystone: Keystone, cloud: LiveServer) -> None:
    network = _osc(keystone, "network", "create", "ks-net")
    _osc(keystone, "subnet", "create", "--network", "ks-net", "--subnet-range",
         "10.9.0.0/24", "ks-subnet")
    port = _osc(keystone, "port", "create", "--network", "ks-net", "ks-port")
    assert port["network_id"] == network["id"]
    assert port["fixed_ips"][0]["ip_address"].startswith("10.9.0.")


def test_stowage_is_in_the_catalog_the_cli_reads(keystone: Keystone,
                                                 cloud: LiveServer) -> None:
    listed = _osc(keystone, "catalog", "list")
    urls = {entry["Type"]: str(entry["Endpoints"]) for entry in listed}
    for kind, path in (("placement", "/placement"), ("compute", "/compute/v2.1"),
                       ("network", "/network"), ("image", "/image")):
        assert f"{cloud.url}{path}" in urls[kind]

