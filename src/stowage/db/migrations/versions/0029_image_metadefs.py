"""Glance's metadata definitions: namespaces, resource types and their associations,
and the objects, properties and tags a namespace holds (image/metadefs.py).

Revision ID: 0029
Revises: 0028
"""

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0029"
down_revision = "0028"
branch_labels = None
depends_on = None

_MEMBERS = ("metadef_objects", "metadef_properties", "metadef_tags")


def _exact(length: int) -> sa.types.TypeEngine[str]:
    return sa.String(length).with_variant(
        mysql.VARCHAR(length, charset="utf8mb4", collation="utf8mb4_bin"), "mysql", "mariadb")


def _stamps() -> list[sa.Column[Any]]:
    return [sa.Column("created_at", sa.DateTime, nullable=False),
            sa.Column("updated_at", sa.DateTime, nullable=True)]


def upgrade() -> None:
    op.create_table(
        "metadef_namespaces",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("namespace", _exact(80), nullable=False, unique=True),
        sa.Column("display_name", sa.String(80), nullable=True),
        sa.Column("description", sa.Text, nullable=True),
        sa.Column("visibility", sa.String(32), nullable=False),
        sa.Column("protected", sa.Boolean, nullable=False),
        sa.Column("owner", _exact(255), nullable=False),
        *_stamps(),
    )
    op.create_table(
        "metadef_resource_types",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("name", _exact(80), nullable=False, unique=True),
        sa.Column("protected", sa.Boolean, nullable=False),
        *_stamps(),
    )
    op.create_table(
        "metadef_namespace_resource_types",
        sa.Column("namespace_id", sa.Integer, primary_key=True),
        sa.Column("resource_type_id", sa.Integer, primary_key=True),
        sa.Column("prefix", sa.String(80), nullable=True),
        sa.Column("properties_target", sa.String(80), nullable=True),
        *_stamps(),
    )
    for name in _MEMBERS:
        body = [] if name == "metadef_tags" else [sa.Column("body", sa.JSON, nullable=False)]
        op.create_table(
            name,
            sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
            sa.Column("namespace_id", sa.Integer, nullable=False),
            sa.Column("name", _exact(80), nullable=False),
            *body,
            *_stamps(),
            sa.UniqueConstraint("namespace_id", "name", name=f"uq_{name}_namespace_name"),
        )


def downgrade() -> None:
    for name in reversed(_MEMBERS):
        op.drop_table(name)
    op.drop_table("metadef_namespace_resource_types")
    op.drop_table("metadef_resource_types")
    op.drop_table("metadef_namespaces")
