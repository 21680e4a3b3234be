"""`stowage manage bootstrap` (and `serve --demo`): DevStack's flavors, image and network.

Run twice on each backend: the first run creates m1.tiny..m1.xlarge, the public
`cirros` image record and the shared `private` network with its subnet; the
second finds them and changes nothing.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
import sqlalchemy as sa

from stowage.compute import flavors
from stowage.config import NetworkSettings, PolicySettings
from stowage.context import RequestContext
from stowage.db import Database
from stowage.image import images
from stowage.network import networks, policy, subnets
from stowage.web.auth import ADMIN_ROLES
from tests.conftest import BACKENDS
from tests.dbs import throwaway_database

ADMIN = RequestContext(user_id="admin", project_id="admin", roles=ADMIN_ROLES)
DEVSTACK = [("1", "m1.tiny", 512, 1, 1), ("2", "m1.small", 2048, 1, 20),
            ("3", "m1.medium", 4096, 2, 40), ("4", "m1.large", 8192, 4, 80),
            ("5", "m1.xlarge", 16384, 8, 160)]


def _bootstrap(url: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "stowage", "manage", "bootstrap",
                           "--database", url], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    return done


@pytest.mark.parametrize("backend", BACKENDS)
def test_bootstrap_creates_the_devstack_defaults_once(backend: str) -> None:
    with throwaway_database(backend) as url:
        first = _bootstrap(url).stdout.splitlines()
        assert [line.split(" (")[0] for line in first] == [
            *(f"flavor {name} created" for _, name, *_ in DEVSTACK), "image cirros created",
            "network private created", "subnet private-subnet 10.0.0.0/26 created"]
        assert _bootstrap(url).stdout == ""  # the second run finds everything

        db = Database(url)
        try:
            with db.read() as conn:
                found = flavors.list_flavors(conn, ADMIN, flavors.ListQuery(is_public=None))
                [image] = images.list_images(conn, ADMIN, images.ListQuery(name="cirros"))
                [network] = networks.list_networks(conn, ADMIN)
                [subnet] = subnets.of_network(conn, network.id)
        finally:
            db.dispose()
        assert [(f.flavorid, f.name, f.memory_mb, f.vcpus, f.root_gb, f.is_public)
                for f in found] == [(*row, True) for row in DEVSTACK]
        assert (image.status, image.visibility, image.disk_format, image.container_format,
                image.size) == ("active", "public", "qcow2", "bare", 21430272)
        assert image.properties["os_distro"] == "cirros"
        assert (network.name, network.shared) == ("private", True)
        assert (subnet.name, subnet.cidr, subnet.gateway_ip) == (
            "private-subnet", "10.0.0.0/26", "10.0.0.1")


def test_bootstrap_leaves_what_the_operator_made_alone() -> None:
    """An m1.small of the operator's (another id) stays; a flavor holding DevStack's id 1
    makes m1.tiny get a uuid; an existing `private` network gets only its subnet."""
    with throwaway_database("sqlite") as url:
        assert subprocess.run([sys.executable, "-m", "stowage", "manage", "db", "upgrade",
                               "--database", url], capture_output=True, timeout=120,
                              check=False).returncode == 0
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
                nets = conn.execute(sa.text("SELECT COUNT(*) FROM networks")).scalar()
        finally:
            db.dispose()
        assert "flavor m1.small" not in made and "network private" not in made
        assert "subnet private-subnet 10.0.0.0/26 created" in made
        assert (small.memory_mb, small.root_gb) == (1024, 10)
        assert len(tiny) == 1 and tiny[0].flavorid not in ("1", "2", "3", "4", "5")
        assert nets == 1
