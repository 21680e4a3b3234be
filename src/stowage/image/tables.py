"""SQLAlchemy Core tables of the Image service: one row per image record.

Properties that the API shows as top-level keys but that have no column of
their own (`trait:...`, `hw_...`, anything a user adds) live in `properties`.
"""

from __future__ import annotations

import sqlalchemy as sa

from stowage.placement.tables import exact_string

__all__ = ["metadata", "images"]

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
    sa.Column("protected", sa.Boolean, nullable=False, default=False),
    sa.Column("tags", sa.JSON, nullable=False),
    sa.Column("properties", sa.JSON, nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Column("updated_at", sa.DateTime, nullable=True),
)
