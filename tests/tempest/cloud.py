"""The cloud Tempest tests: one `stowage serve` with identity, accounts, images, flavors.

    tempest ──token──▶ /identity/v3 (builtin-identity, accounts from stowage.toml)
       │
       └──catalog──▶ /compute/v2.1  /image/v2  /network/v2.0  /placement
                         │
                         └── host1 .. hostN (simulated, one process)

Most Tempest classes use accounts pre-provisioned here: one admin per worker
plus primary, alt and reader users in projects of their own. Classes that
force tenant isolation (`force_tenant_isolation`, e.g. the quota tests) make
their projects and users on the fly through the identity admin API, as
`IDENTITY_ADMIN` (a settings-file admin that no class holds as a
pre-provisioned account, so it is never locked by a worker).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests.conformance.server import ServerProcess, free_port
from tests.conformance.sidevenv import REPO_ROOT
from tests.conformance.targets import Launch
from tests.tempest.identity_config import identity_section

__all__ = ["Account", "Cloud", "IDENTITY_ADMIN", "running_cloud"]

PASSWORD = "tempest-secret"
NETWORK = "tempest-net"
PUBLIC_NETWORK = "tempest-public"
HOSTS = 4


@dataclass(frozen=True)
class Account:
    username: str
    project: str
    roles: tuple[str, ...]

    @property
    def is_admin(self) -> bool:
        return "admin" in self.roles


IDENTITY_ADMIN = Account("tempest-identity-admin", "tempest-identity-admin", ("admin",))


def accounts(workers: int) -> list[Account]:
    """Enough disjoint accounts that each worker can hold its own set at once:
    per project a member, a reader and a manager (Tempest's personas), admins, and
    service users (admin and service roles)."""
    sets = max(2, workers) * 3
    made = [Account(f"tempest-admin-{i}", f"tempest-admin-{i}", ("admin",))
            for i in range(1, sets + 1)]
    # Tempest's service user (['service_user', 'admin', 'service']): the external events test.
    made += [Account(f"tempest-service-{i}", f"tempest-service-{i}", ("admin", "service"))
             for i in range(1, max(2, workers) + 1)]
    for i in range(1, 2 * sets + 1):
        made += [Account(f"tempest-{role}-{i}", f"tempest-project-{i}", (role,))
                 for role in ("member", "reader", "manager")]
    return made


@dataclass
class Cloud:
    url: str
    accounts: list[Account]
    images: list[str] = field(default_factory=list)
    flavors: list[str] = field(default_factory=list)
    # Tempest runs tests up to this microversion and skips the newer ones.
    max_microversion: str = "2.1"
    # What the network service says it serves; Tempest skips tests of the others.
    network_extensions: list[str] = field(default_factory=list)
    # Tempest's [network] public_network_id: the external network floating IPs come from.
    public_network_id: str = ""

    def admin_client(self) -> httpx.Client:
        """A client holding a token of the first admin account."""
        admin = next(a for a in self.accounts if a.is_admin)
        body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
            "name": admin.username, "domain": {"id": "default"}, "password": PASSWORD}}},
            "scope": {"project": {"name": admin.project, "domain": {"id": "default"}}}}}
        resp = httpx.post(f"{self.url}/identity/v3/auth/tokens", json=body, timeout=30)
        resp.raise_for_status()
        return httpx.Client(timeout=30, headers={"x-auth-token": resp.headers["x-subject-token"],
                                                 "accept": "application/json"})


def _config(workdir: Path, cloud_accounts: list[Account]) -> Path:
    lines = ["[api]", 'auth_strategy = "builtin-identity"', "",
             "[compute]", f"sim_hosts = {HOSTS}", "sim_network_devices = true",
             "update_resources_interval = 5.0",
             # A snapshot lasts long enough that Tempest's second createImage meets the
             # first still saving (ImagesOneServerNegativeTestJSON).
             "sim_snapshot_seconds = 2.0", ""]
    lines += identity_section([*cloud_accounts, IDENTITY_ADMIN], PASSWORD)
    path = workdir / "stowage.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def _launch(port: int, workdir: Path, config: Path) -> Launch:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO_ROOT / "src"), env.get("PYTHONPATH", "")) if p)
    argv = [sys.executable, "-m", "stowage", "serve", "--bind", f"127.0.0.1:{port}",
            "--database", f"sqlite:///{workdir / 'stowage.db'}", "--config", str(config)]
    return Launch(argv, env, workdir)


def _seed_images(client: httpx.Client, url: str) -> list[str]:
    """Two public, active images: Tempest's image_ref and image_ref_alt."""
    made = []
    for name in ("tempest-image", "tempest-image-alt"):
        resp = client.post(f"{url}/image/v2/images", json={
            "name": name, "disk_format": "qcow2", "container_format": "bare",
            "visibility": "public", "min_disk": 0})
        resp.raise_for_status()
        image_id = resp.json()["id"]
        upload = client.put(f"{url}/image/v2/images/{image_id}/file", content=b"\0" * 1024,
                            headers={"content-type": "application/octet-stream"})
        upload.raise_for_status()
        made.append(image_id)
    return made


def _seed_flavors(client: httpx.Client, url: str) -> list[str]:
    """Tempest's flavor_ref and a larger flavor_ref_alt (resize tests grow into it)."""
    made = []
    for flavor_id, ram, vcpus, disk in (("tempest-1", 512, 1, 1), ("tempest-2", 1024, 2, 2)):
        resp = client.post(f"{url}/compute/v2.1/flavors", json={"flavor": {
            "name": flavor_id, "id": flavor_id, "ram": ram, "vcpus": vcpus, "disk": disk}})
        resp.raise_for_status()
        made.append(flavor_id)
    return made


def _seed_network(client: httpx.Client, url: str) -> str:
    """Tempest's `fixed_network_name`: a shared network every project's servers boot on;
    and `public_network_id` (returned): an external network `PUBLIC_NETWORK`, with a
    router from it to the shared network's subnet, as a cloud with floating IPs has."""
    api = f"{url}/network/v2.0"

    def made(path: str, body: dict[str, Any], method: str = "POST") -> dict[str, Any]:
        resp = client.request(method, f"{api}/{path}", json=body)
        resp.raise_for_status()
        return dict(resp.json())

    net = made("networks", {"network": {"name": NETWORK, "shared": True}})["network"]
    sub = made("subnets", {"subnet": {"network_id": net["id"], "cidr": "10.10.0.0/16",
                                      "ip_version": 4}})["subnet"]
    # In a project of its own: no project's server create finds two networks to choose from.
    public = made("networks", {"network": {"name": PUBLIC_NETWORK, "router:external": True,
                                           "project_id": "tempest-external"}})["network"]
    made("subnets", {"subnet": {"network_id": public["id"], "cidr": "172.24.4.0/24",
                                "ip_version": 4}})
    router = made("routers", {"router": {"name": "tempest-router", "external_gateway_info": {
        "network_id": public["id"]}}})["router"]
    made(f"routers/{router['id']}/add_router_interface", {"subnet_id": sub["id"]}, "PUT")
    return str(public["id"])


@contextmanager
def running_cloud(workdir: Path, workers: int) -> Iterator[Cloud]:
    """Start stowage in `workdir`, seed it, yield it, stop it."""
    made_accounts = accounts(workers)
    config = _config(workdir, made_accounts)
    port = free_port()
    server = ServerProcess(_launch(port, workdir, config), port, workdir / "stowage.log")
    server.start()
    try:
        cloud = Cloud(server.base_url, made_accounts)
        with cloud.admin_client() as client:
            versions = client.get(f"{cloud.url}/compute/").json()["versions"]
            cloud.max_microversion = max((v["version"] for v in versions if v["version"]),
                                         key=lambda v: tuple(map(int, v.split("."))))
            cloud.images = _seed_images(client, cloud.url)
            cloud.flavors = _seed_flavors(client, cloud.url)
            cloud.public_network_id = _seed_network(client, cloud.url)
            cloud.network_extensions = sorted(
                e["alias"] for e in client.get(f"{cloud.url}/network/v2.0/extensions"
                                               ).json()["extensions"])
        (workdir / "cloud.json").write_text(json.dumps({"url": cloud.url}))
        yield cloud
    finally:
        server.stop()
