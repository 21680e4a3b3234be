"""SQLAlchemy Core tables of the Image service: image records, their members and tasks,
and Glance's metadata definitions (metadefs.py).

Properties that the API shows as top-level keys but that have no column of
their own (`trait:...`, `hw_...`, anything a user adds) live in `properties`.
"""

from __future__ import annotations

import sqlalchemy as sa

from stowage.placement.tables import exact_string

__all__ = ["metadata", "images", "image_members", "image_tasks", "metadef_namespaces",
           "metadef_resource_types", "metadef_associations", "metadef_objects",
           "metadef_properties", "metadef_tags"]

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

# Glance's metadata definitions (image/metadefs.py): namespaces, and what each holds.
# Children name their namespace by its integer id, so that renaming a namespace moves
# nothing; deleting one deletes its children in the same transaction.
metadef_namespaces = sa.Table(
    "metadef_namespaces", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("namespace", exact_string(80), nullable=False, unique=True),
    sa.Column("display_name", sa.String(80), nullable=True),
    sa.Column("description", sa.Text, nullable=True),
    sa.Column("visibility", sa.String(32), nullable=False),
    sa.Column("protected", sa.Boolean, nullable=False),
    sa.Column("owner", exact_string(255), nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Column("updated_at", sa.DateTime, nullable=True),
)

metadef_resource_types = sa.Table(
    "metadef_resource_types", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("name", exact_string(80), nullable=False, unique=True),
    sa.Column("protected", sa.Boolean, nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Column("updated_at", sa.DateTime, nullable=True),
)

metadef_associations = sa.Table(
    "metadef_namespace_resource_types", metadata,
    sa.Column("namespace_id", sa.Integer, primary_key=True),
    sa.Column("resource_type_id", sa.Integer, primary_key=True),
    sa.Column("prefix", sa.String(80), nullable=True),
    sa.Column("properties_target", sa.String(80), nullable=True),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Column("updated_at", sa.DateTime, nullable=True),
)


def _member_table(name: str, *extra: sa.Column[object]) -> sa.Table:
    """Objects, properties and tags: a name unique within its namespace, and a body."""
    return sa.Table(
        name, metadata,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("namespace_id", sa.Integer, nullable=False),
        sa.Column("name", exact_string(80), nullable=False),
        *extra,
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("updated_at", sa.DateTime, nullable=True),
        sa.UniqueConstraint("namespace_id", "name", name=f"uq_{name}_namespace_name"),
    )


# `body`: an object's description, required and properties; a property's JSON schema.
metadef_objects = _member_table("metadef_objects", sa.Column("body", sa.JSON, nullable=False))
metadef_properties = _member_table("metadef_properties",
                                   sa.Column("body", sa.JSON, nullable=False))
metadef_tags = _member_table("metadef_tags")
