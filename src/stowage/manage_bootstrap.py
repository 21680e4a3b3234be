"""`stowage manage bootstrap` and `stowage serve --demo`: the objects a DevStack user expects.

A fresh DevStack cloud has flavors m1.tiny .. m1.xlarge, a public `cirros`
image, a `private` network with a subnet, a `public` external network and
`router1` joining them, so that

    openstack server create --flavor m1.small --image cirros --network private vm1
    openstack floating ip create public

work at once. `bootstrap` creates whichever of them is missing (looked up by
name) in the API database, through the same domain functions the APIs write
with, as the cloud admin; run again, it changes nothing. The networks are
manage_bootstrap_network.py's. The image's data goes into the image store
through `stowage.image.data.upload` (after the records' transaction, as every
upload), so it has a size, checksum and os_hash and `openstack image save
cirros` returns it. Differences from DevStack: the image's bytes are a small
generated placeholder (`PLACEHOLDER`, a few KiB, the same on every run), not
cirros' real disk, and `private` is owned by the `admin` project and shared, so
that any project's members may boot on it (DevStack gives it and `router1` to
`demo`).
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
from stowage.errors import Conflict
from stowage.image import data, images
from stowage.image import tables as image_tables
from stowage.manage_bootstrap_network import NETWORK_NAME, SUBNET_CIDR, SUBNET_NAME, ensure
from stowage.network import policy
from stowage.web.auth import ADMIN_ROLES

__all__ = ["DEMO_FLAVORS", "IMAGE_NAME", "NETWORK_NAME", "PLACEHOLDER", "SUBNET_NAME",
           "SUBNET_CIDR", "add_parser", "bootstrap", "run"]


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
# What DevStack uploads (cirros-0.6.2-x86_64-disk.img), but for its bytes.
_IMAGE = {"name": IMAGE_NAME, "visibility": "public", "disk_format": "qcow2",
          "container_format": "bare", "min_disk": 0, "min_ram": 0,
          "os_distro": "cirros", "os_version": "0.6.2", "hw_architecture": "x86_64"}
# The demo image's data: 4 KiB, generated, identical on every run and host (so its
# checksum is too). NOT cirros' disk: no simulated server ever reads it, and the
# real one (21 MiB) would have to be downloaded or shipped.
_BANNER = b"stowage demo image: a placeholder for cirros-0.6.2-x86_64-disk.img\n"
PLACEHOLDER = (_BANNER + bytes(range(256)) * 16)[:4096]
_ADMIN = RequestContext(user_id="admin", project_id="admin", roles=ADMIN_ROLES)
# The Network writes ask Neutron's rules through a Guard: the cloud admin under the
# default rules (an operator's `[policy] file` governs API callers, not this command).
_NETWORK_ADMIN = policy.Guard(policy.enforcer(config.PolicySettings()), _ADMIN)


def add_parser(manage_sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    sub = manage_sub.add_parser(
        "bootstrap", help="create DevStack's m1.* flavors, a cirros image, the `private` "
                          "and `public` networks and `router1`, whichever is missing")
    sub.add_argument("--database", help="SQLAlchemy URL of the API database")


def run(settings: config.Settings, db: Database) -> int:
    """`stowage manage bootstrap`: the schema at head, then the demo objects."""
    schema.upgrade(db)
    for line in bootstrap(settings, db):
        print(line)
    return 0


def bootstrap(settings: config.Settings, db: Database) -> list[str]:
    """Create what is missing, the records in one transaction, then the image's data
    (data.upload runs its own transactions); one line per object created."""
    with db.write() as conn:
        made = [*_flavors(conn), *_image(conn), *ensure(conn, _NETWORK_ADMIN, settings.network)]
        waiting = _queued_image(conn)
    if waiting is not None:
        made.extend(_store(settings, db, waiting))
    return made


def _store(settings: config.Settings, db: Database, image_id: str) -> list[str]:
    """The placeholder as the image's data: a new image, or one a run killed before
    its upload left queued. Another bootstrap storing it at the same time wins."""
    try:
        image = data.upload(db, settings, image_id, [PLACEHOLDER])
    except Conflict:
        with db.read() as conn:
            if images.get(conn, image_id, _ADMIN).status not in ("saving", "active"):
                raise
        return []
    return [f"image {IMAGE_NAME} data stored ({image.size} bytes, md5 {image.checksum})"]


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


def _public_image(conn: Connection) -> sa.Row[tuple[str, str]] | None:
    i = image_tables.images
    return conn.execute(sa.select(i.c.id, i.c.status)
                        .where(i.c.name == IMAGE_NAME, i.c.visibility == "public")
                        .order_by(i.c.created_at, i.c.id)).first()


def _image(conn: Connection) -> list[str]:
    """The image's record, queued (data.upload makes it active)."""
    if _public_image(conn) is not None:
        return []
    image = images.create(conn, _ADMIN, _IMAGE)
    return [f"image {IMAGE_NAME} created ({image.id})"]


def _queued_image(conn: Connection) -> str | None:
    """The demo image's id when it still waits for its data."""
    found = _public_image(conn)
    return str(found.id) if found is not None and found.status == "queued" else None
