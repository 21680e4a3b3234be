"""`stowage manage bootstrap` and `stowage serve --demo`: the objects a DevStack user expects.

A fresh DevStack cloud has flavors m1.tiny .. m1.xlarge, a public `cirros`
image and a `private` network with a subnet, so that

    openstack server create --flavor m1.small --image cirros --network private vm1

works at once. `bootstrap` creates whichever of them is missing (looked up
by name) in the API database, through the same domain functions the APIs
write with, as the cloud admin; run again, it changes nothing. Differences
from DevStack: the image is a record only (stowage keeps no image bytes),
and `private` is owned by the `admin` project and shared, so that any
project's members may boot on it (DevStack gives it to `demo`); there is no
`public` external network (stowage has no routers or floating IPs).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage import config
from stowage.compute import flavors
from stowage.compute import tables as compute_tables
from stowage.context import RequestContext
from stowage.db import Database, schema
from stowage.image import images
from stowage.image import tables as image_tables
from stowage.network import networks, policy, subnets
from stowage.network import tables as network_tables
from stowage.web.auth import ADMIN_ROLES

__all__ = ["DEMO_FLAVORS", "IMAGE_NAME", "NETWORK_NAME", "SUBNET_NAME", "SUBNET_CIDR",
           "add_parser", "bootstrap", "run"]


@dataclass(frozen=True)
class DemoFlavor:
    flavorid: str
    name: str
    memory_mb: int
    vcpus: int
    root_gb: int


# DevStack's (nova's former default) flavors: id, name, RAM MB, VCPUs, root disk GB.
DEMO_FLAVORS = (
    DemoFlavor("1", "m1.tiny", 512, 1, 1),
    DemoFlavor("2", "m1.small", 2048, 1, 20),
    DemoFlavor("3", "m1.medium", 4096, 2, 40),
    DemoFlavor("4", "m1.large", 8192, 4, 80),
    DemoFlavor("5", "m1.xlarge", 16384, 8, 160),
)
IMAGE_NAME = "cirros"
# What DevStack uploads (cirros-0.6.2-x86_64-disk.img); the bytes themselves are not kept.
_IMAGE = {"name": IMAGE_NAME, "visibility": "public", "disk_format": "qcow2",
          "container_format": "bare", "min_disk": 0, "min_ram": 0,
          "os_distro": "cirros", "os_version": "0.6.2", "hw_architecture": "x86_64"}
_IMAGE_SIZE = 21430272
NETWORK_NAME = "private"
SUBNET_NAME = "private-subnet"
# DevStack's FIXED_RANGE for the `private` network's IPv4 subnet.
SUBNET_CIDR = "10.0.0.0/26"
_ADMIN = RequestContext(user_id="admin", project_id="admin", roles=ADMIN_ROLES)
# The Network writes ask Neutron's rules through a Guard: the cloud admin under the
# default rules (an operator's `[policy] file` governs API callers, not this command).
_NETWORK_ADMIN = policy.Guard(policy.enforcer(config.PolicySettings()), _ADMIN)


def add_parser(manage_sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    sub = manage_sub.add_parser(
        "bootstrap", help="create DevStack's m1.* flavors, a cirros image record and a "
                          "`private` network, whichever is missing")
    sub.add_argument("--database", help="SQLAlchemy URL of the API database")


def run(settings: config.Settings, db: Database) -> int:
    """`stowage manage bootstrap`: the schema at head, then the demo objects."""
    schema.upgrade(db)
    for line in bootstrap(settings, db):
        print(line)
    return 0


def bootstrap(settings: config.Settings, db: Database) -> list[str]:
    """Create what is missing, in one transaction; one line per object created."""
    with db.write() as conn:
        made = [*_flavors(conn), *_image(conn), *_network(conn, settings.network)]
    return made


def _flavors(conn: Connection) -> list[str]:
    f = compute_tables.flavors
    live = conn.execute(sa.select(f.c.name, f.c.flavorid).where(f.c.deleted == 0)).all()
    taken = {row.name for row in live} | {row.flavorid for row in live}
    made = []
    for demo in DEMO_FLAVORS:
        if demo.name in taken:
            continue
        # Another flavor may hold DevStack's id: this one then gets a uuid, as Nova's API.
        flavorid = None if demo.flavorid in taken else demo.flavorid
        flavors.create(conn, flavors.NewFlavor(name=demo.name, memory_mb=demo.memory_mb,
                                               vcpus=demo.vcpus, root_gb=demo.root_gb,
                                               flavorid=flavorid))
        made.append(f"flavor {demo.name} created")
    return made


def _image(conn: Connection) -> list[str]:
    i = image_tables.images
    if conn.execute(sa.select(i.c.id).where(i.c.name == IMAGE_NAME,
                                            i.c.visibility == "public")).first():
        return []
    image = images.create(conn, _ADMIN, _IMAGE)
    images.record_upload(conn, image.id, _ADMIN, _IMAGE_SIZE)
    return [f"image {IMAGE_NAME} created ({image.id})"]


def _network(conn: Connection, settings: config.NetworkSettings) -> list[str]:
    n = network_tables.networks
    found = conn.execute(sa.select(n.c.id).where(n.c.name == NETWORK_NAME)).first()
    made = []
    if found is None:
        network_id = networks.create(conn, _NETWORK_ADMIN,
                                     {"name": NETWORK_NAME, "shared": True}, settings).id
        made.append(f"network {NETWORK_NAME} created ({network_id})")
    else:
        network_id = str(found.id)
    if not subnets.of_network(conn, network_id):
        subnets.create(conn, _NETWORK_ADMIN, {"network_id": network_id, "name": SUBNET_NAME,
                                              "ip_version": 4, "cidr": SUBNET_CIDR})
        made.append(f"subnet {SUBNET_NAME} {SUBNET_CIDR} created")
    return made
