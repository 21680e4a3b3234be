"""Placement schema: providers, classes, inventories, consumers, allocations, traits, aggregates.

Revision ID: 0001
Revises:
"""

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _s(length: int) -> sa.types.TypeEngine[str]:
    return sa.String(length).with_variant(
        mysql.VARCHAR(length, charset="utf8mb4", collation="utf8mb4_bin"), "mysql", "mariadb")


def _ts() -> list[sa.Column[Any]]:
    return [sa.Column("created_at", sa.DateTime, nullable=False),
            sa.Column("updated_at", sa.DateTime)]


def _named_table(name: str, length: int, key: str = "name") -> None:
    op.create_table(name, sa.Column("id", sa.Integer, primary_key=True),
                    sa.Column(key, _s(length), nullable=False, unique=True), *_ts())


def upgrade() -> None:
    op.create_table(
        "resource_providers",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("uuid", _s(36), nullable=False, unique=True),
        sa.Column("name", _s(200), nullable=False, unique=True),
        sa.Column("generation", sa.Integer, nullable=False),
        sa.Column("root_provider_id", sa.Integer, sa.ForeignKey("resource_providers.id"),
                  index=True),
        sa.Column("parent_provider_id", sa.Integer, sa.ForeignKey("resource_providers.id"),
                  index=True),
        *_ts())
    op.create_table(
        "resource_classes",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("name", _s(255), nullable=False, unique=True), *_ts())
    op.create_table(
        "inventories",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("resource_provider_id", sa.Integer,
                  sa.ForeignKey("resource_providers.id", ondelete="CASCADE"), nullable=False),
        sa.Column("resource_class_id", sa.Integer, sa.ForeignKey("resource_classes.id"),
                  nullable=False, index=True),
        *[sa.Column(c, sa.Integer, nullable=False)
          for c in ("total", "reserved", "min_unit", "max_unit", "step_size")],
        sa.Column("allocation_ratio", sa.Float, nullable=False),
        *_ts(),
        sa.UniqueConstraint("resource_provider_id", "resource_class_id",
                            name="uniq_inventories0resource_provider_resource_class"))
    _named_table("projects", 255, "external_id")
    _named_table("users", 255, "external_id")
    _named_table("consumer_types", 255)
    op.create_table(
        "consumers",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("uuid", _s(36), nullable=False, unique=True),
        sa.Column("project_id", sa.Integer, sa.ForeignKey("projects.id"), nullable=False,
                  index=True),
        sa.Column("user_id", sa.Integer, sa.ForeignKey("users.id"), nullable=False, index=True),
        sa.Column("generation", sa.Integer, nullable=False),
        sa.Column("consumer_type_id", sa.Integer, sa.ForeignKey("consumer_types.id")),
        *_ts())
    op.create_table(
        "allocations",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("resource_provider_id", sa.Integer, sa.ForeignKey("resource_providers.id"),
                  nullable=False),
        sa.Column("consumer_id", _s(36), nullable=False, index=True),
        sa.Column("resource_class_id", sa.Integer, sa.ForeignKey("resource_classes.id"),
                  nullable=False),
        sa.Column("used", sa.Integer, nullable=False),
        *_ts(),
        sa.Index("allocations_resource_provider_class_used_idx",
                 "resource_provider_id", "resource_class_id", "used"))
    _named_table("traits", 255)
    op.create_table(
        "resource_provider_traits",
        sa.Column("trait_id", sa.Integer, sa.ForeignKey("traits.id"), primary_key=True),
        sa.Column("resource_provider_id", sa.Integer,
                  sa.ForeignKey("resource_providers.id", ondelete="CASCADE"),
                  primary_key=True, index=True),
        *_ts())
    op.create_table(
        "placement_aggregates",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("uuid", _s(36), nullable=False, unique=True))
    op.create_table(
        "resource_provider_aggregates",
        sa.Column("resource_provider_id", sa.Integer,
                  sa.ForeignKey("resource_providers.id", ondelete="CASCADE"),
                  primary_key=True),
        sa.Column("aggregate_id", sa.Integer, sa.ForeignKey("placement_aggregates.id"),
                  primary_key=True, index=True))
