"""`stowage manage bootstrap` (and `serve --demo`): DevStack's flavors, image and networks.

Run twice on each backend: the first run creates m1.tiny..m1.xlarge, the public
`cirros` image with its placeholder data in the store, the shared `private`
network with its subnet, the external `public` network with DevStack's
floating range and `router1` between them; the second finds them and changes
nothing.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa

from stowage.compute import flavors
from stowage.config import ImageSettings, NetworkSettings, PolicySettings, Settings
from stowage.context import RequestContext
from stowage.db import Database
from stowage.image import data, images
from stowage.manage_bootstrap import PLACEHOLDER
from stowage.network import networks, policy, routers, subnets
from stowage.web.auth import ADMIN_ROLES
from tests.conftest import BACKENDS
from tests.dbs import throwaway_database

ADMIN = RequestContext(user_id="admin", project_id="admin", roles=ADMIN_ROLES)
DEVSTACK = [("1", "m1.tiny", 512, 1, 1), ("2", "m1.small", 2048, 1, 20),
            ("3", "m1.medium", 4096, 2, 40), ("4", "m1.large", 8192, 4, 80),
            ("5", "m1.xlarge", 16384, 8, 160)]


def _bootstrap(url: str, store: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run the command; with `store`, a --config file puts the image store there."""
    config: list[str] = []
    if store is not None:
        conf = store.with_suffix(".toml")
        conf.write_text(f'[image]\nstore_dir = "{store}"\n')
        config = ["--config", str(conf)]
    done = subprocess.run([sys.executable, "-m", "stowage", *config, "manage", "bootstrap",
                           "--database", url], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    return done



def _upgrade(url: str) -> None:
    """`manage db upgrade`: the schema an operator's records go into before bootstrap."""
    assert subprocess.run([sys.executable, "-m", "stowage", "manage", "db", "upgrade",
                           "--database", url], capture_output=True, timeout=120,
                          check=False).returncode == 0

@pytest.mark.parametrize("backend", BACKENDS)
def test_bootstrap_creates_the_devstack_defaults_once(backend: str, tmp_path: Path) -> None:
    store = tmp_path / "images"
    with throwaway_database(backend) as url:
        first = _bootstrap(url, store).stdout.splitlines()
        md5 = hashlib.md5(PLACEHOLDER, usedforsecurity=False).hexdigest()
        assert [line.split(" (")[0] for line in first] == [
            *(f"flavor {name} created" for _, name, *_ in DEVSTACK), "image cirros created",
            "network private created", "subnet private-subnet 10.0.0.0/26 created",
            "network public created", "subnet public-subnet 172.24.4.0/24 created",
            "router router1 created", "router router1 interface on private-subnet added",
            "image cirros data stored"]
        assert first[-1].endswith(f"({len(PLACEHOLDER)} bytes, md5 {md5})")
        assert _bootstrap(url, store).stdout == ""  # the second run finds everything
        _check_objects(url, store, md5)


def _check_objects(url: str, store: Path, md5: str) -> None:
    """What one bootstrap (or two) leaves: exactly one of each, as DevStack's."""
    db = Database(url)
    settings = Settings(database=url, image=ImageSettings(store_dir=str(store)))
    try:
        with db.read() as conn:
            found = flavors.list_flavors(conn, ADMIN, flavors.ListQuery(is_public=None))
            [image] = images.list_images(conn, ADMIN, images.ListQuery(name="cirros"))
            nets = {n.name: n for n in networks.list_networks(conn, ADMIN)}
            [subnet] = subnets.of_network(conn, nets["private"].id)
            [public_subnet] = subnets.of_network(conn, nets["public"].id)
            [router] = routers.list_routers(conn, ADMIN)
            [interface] = routers.interface_ports(conn, router.id)
        stored, reader = data.open_data(db, settings, image.id)
        assert reader is not None
        with reader:
            body = reader.read()
    finally:
        db.dispose()
    assert [(f.flavorid, f.name, f.memory_mb, f.vcpus, f.root_gb, f.is_public)
            for f in found] == [(*row, True) for row in DEVSTACK]
    assert (image.status, image.visibility, image.disk_format, image.container_format,
            image.size, image.checksum, image.os_hash_algo) == (
        "active", "public", "qcow2", "bare", len(PLACEHOLDER), md5, "sha512")
    assert image.os_hash_value == hashlib.sha512(PLACEHOLDER).hexdigest()
    assert image.properties["os_distro"] == "cirros"
    assert hashlib.md5(body, usedforsecurity=False).hexdigest() == md5 == stored.checksum
    assert sorted(nets) == ["private", "public"]
    assert (nets["private"].shared, nets["private"].external) == (True, False)
    assert (nets["public"].shared, nets["public"].external,
            nets["public"].project_id) == (False, True, "admin")
    assert (subnet.name, subnet.cidr, subnet.gateway_ip) == (
        "private-subnet", "10.0.0.0/26", "10.0.0.1")
    assert (public_subnet.name, public_subnet.cidr, public_subnet.gateway_ip,
            public_subnet.enable_dhcp) == ("public-subnet", "172.24.4.0/24", "172.24.4.1",
                                           False)
    assert (router.name, router.gw_network_id) == ("router1", nets["public"].id)
    assert [(ip.subnet_id, ip.ip_address) for ip in interface.fixed_ips] == [
        (subnet.id, "10.0.0.1")]


def test_bootstrap_leaves_what_the_operator_made_alone() -> None:
    """An m1.small of the operator's (another id) stays; a flavor holding DevStack's id 1
    makes m1.tiny get a uuid; an existing `private` network gets only its subnet (and
    `router1` an interface on it)."""
    with throwaway_database("sqlite") as url:
        _upgrade(url)
        db = Database(url)
        try:
            with db.write() as conn:
                flavors.create(conn, flavors.NewFlavor("m1.small", 1024, 1, 10, flavorid="s"))
                flavors.create(conn, flavors.NewFlavor("mine", 256, 1, 1, flavorid="1"))
                guard = policy.Guard(policy.enforcer(PolicySettings()), ADMIN)
                networks.create(conn, guard, {"name": "private"}, NetworkSettings())
            made = _bootstrap(url).stdout
            with db.read() as conn:
                small = flavors.get(conn, "s")
                tiny = [f for f in flavors.list_flavors(conn, ADMIN,
                                                        flavors.ListQuery(is_public=None))
                        if f.name == "m1.tiny"]
                nets = conn.execute(sa.text("SELECT COUNT(*) FROM networks "
                                            "WHERE name = 'private'")).scalar()
        finally:
            db.dispose()
        assert "flavor m1.small" not in made and "network private" not in made
        assert "subnet private-subnet 10.0.0.0/26 created" in made
        assert "router router1 interface on private-subnet added" in made
        assert (small.memory_mb, small.root_gb) == (1024, 10)
        assert len(tiny) == 1 and tiny[0].flavorid not in ("1", "2", "3", "4", "5")
        assert nets == 1


def test_a_queued_cirros_gets_its_data_on_the_next_run(tmp_path: Path) -> None:
    """A run stopped between the records and the upload leaves cirros queued: the next
    run stores the placeholder in it rather than making a second image."""
    store = tmp_path / "images"
    with throwaway_database("sqlite") as url:
        _upgrade(url)
        db = Database(url)
        try:
            with db.write() as conn:
                queued = images.create(conn, ADMIN, {"name": "cirros", "visibility": "public",
                                                     "disk_format": "qcow2",
                                                     "container_format": "bare"})
            made = _bootstrap(url, store).stdout
            with db.read() as conn:
                [image] = images.list_images(conn, ADMIN, images.ListQuery(name="cirros"))
        finally:
            db.dispose()
        assert "image cirros created" not in made and "image cirros data stored" in made
        assert (image.id, image.status, image.size) == (queued.id, "active", len(PLACEHOLDER))
        assert (store / image.id).read_bytes() == PLACEHOLDER
