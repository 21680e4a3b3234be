"""SQLAlchemy Core tables of the Image service: image records, their members and tasks.

Properties that the API shows as top-level keys but that have no column of
their own (`trait:...`, `hw_...`, anything a user adds) live in `properties`.
"""

from __future__ import annotations

import sqlalchemy as sa

from stowage.placement.tables import exact_string

__all__ = ["metadata", "images", "image_members", "image_tasks"]

metadata = sa.MetaData()

images = sa.Table(
    "images", metadata,
    sa.Column("id", exact_string(36), primary_key=True),
    sa.Column("name", sa.String(255), nullable=True),
    sa.Column("status", sa.String(30), nullable=False),
    sa.Column("visibility", sa.String(20), nullable=False),
    sa.Column("owner", exact_string(255), nullable=True),
    sa.Column("min_disk", sa.Integer, nullable=False, default=0),
    sa.Column("min_ram", sa.Integer, nullable=False, default=0),
    sa.Column("disk_format", sa.String(30), nullable=True),
    sa.Column("container_format", sa.String(30), nullable=True),
    sa.Column("size", sa.BigInteger, nullable=True),
    # What Glance shows of the stored data (image/data.py): md5, and the multihash.
    sa.Column("checksum", sa.String(32), nullable=True),
    sa.Column("os_hash_algo", sa.String(64), nullable=True),
    sa.Column("os_hash_value", sa.String(128), nullable=True),
    # Glance's os_hidden: out of the default listing (`?os_hidden=true` lists them).
    sa.Column("os_hidden", sa.Boolean, nullable=False, default=False,
              server_default=sa.false()),
    sa.Column("protected", sa.Boolean, nullable=False, default=False),
    sa.Column("tags", sa.JSON, nullable=False),
    sa.Column("properties", sa.JSON, nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Column("updated_at", sa.DateTime, nullable=True),
)

# Glance's image members: the projects a `shared` image is offered to, and what each
# answered (pending, accepted, rejected). One row per (image, member).
image_members = sa.Table(
    "image_members", metadata,
    sa.Column("image_id", exact_string(36), primary_key=True),
    sa.Column("member", exact_string(255), primary_key=True),
    sa.Column("status", sa.String(20), nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Column("updated_at", sa.DateTime, nullable=False),
)

# Glance's tasks: the record of each image import (`api_image_import`), read back
# through /v2/tasks and /v2/images/{id}/tasks.
image_tasks = sa.Table(
    "image_tasks", metadata,
    sa.Column("id", exact_string(36), primary_key=True),
    sa.Column("type", sa.String(30), nullable=False),
    sa.Column("status", sa.String(30), nullable=False),
    sa.Column("owner", exact_string(255), nullable=True),
    sa.Column("image_id", exact_string(36), nullable=True, index=True),
    sa.Column("request_id", sa.String(64), nullable=True),
    sa.Column("user_id", sa.String(255), nullable=True),
    sa.Column("input", sa.JSON, nullable=False),
    sa.Column("result", sa.JSON, nullable=True),
    sa.Column("message", sa.Text, nullable=False),
    sa.Column("expires_at", sa.DateTime, nullable=True),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Column("updated_at", sa.DateTime, nullable=False),
)
