"""SQLAlchemy Core tables of the Placement service.

Names and uuids use a binary collation on MySQL so that lookups are exact and
case-sensitive, as on SQLite and PostgreSQL.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import mysql

__all__ = [
    "metadata", "resource_providers", "inventories", "allocations", "consumers",
    "projects", "users", "consumer_types", "resource_classes", "traits",
    "provider_traits", "aggregates", "provider_aggregates", "provider_changes",
    "CUSTOM_RC_MIN_ID",
]

metadata = sa.MetaData()

# Standard resource classes keep their os-resource-classes index as id; custom ones
# start here so that the two never collide when the standard list grows.
CUSTOM_RC_MIN_ID = 10000


def exact_string(length: int) -> sa.types.TypeEngine[str]:
    return sa.String(length).with_variant(
        mysql.VARCHAR(length, charset="utf8mb4", collation="utf8mb4_bin"), "mysql", "mariadb")


def _timestamps() -> list[sa.Column[Any]]:
    return [sa.Column("created_at", sa.DateTime, nullable=False),
            sa.Column("updated_at", sa.DateTime, nullable=True)]


resource_providers = sa.Table(
    "resource_providers", metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("uuid", exact_string(36), nullable=False, unique=True),
    sa.Column("name", exact_string(200), nullable=False, unique=True),
    sa.Column("generation", sa.Integer, nullable=False, default=0),
    sa.Column("root_provider_id", sa.Integer, sa.ForeignKey("resource_providers.id"),
              nullable=True, index=True),
    sa.Column("parent_provider_id", sa.Integer, sa.ForeignKey("resource_providers.id"),
              nullable=True, index=True),
    *_timestamps(),
)

resource_classes = sa.Table(
    "resource_classes", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("name", exact_string(255), nullable=False, unique=True),
    *_timestamps(),
)

inventories = sa.Table(
    "inventories", metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("resource_provider_id", sa.Integer,
              sa.ForeignKey("resource_providers.id", ondelete="CASCADE"), nullable=False),
    sa.Column("resource_class_id", sa.Integer, sa.ForeignKey("resource_classes.id"),
              nullable=False, index=True),
    sa.Column("total", sa.Integer, nullable=False),
    sa.Column("reserved", sa.Integer, nullable=False),
    sa.Column("min_unit", sa.Integer, nullable=False),
    sa.Column("max_unit", sa.Integer, nullable=False),
    sa.Column("step_size", sa.Integer, nullable=False),
    sa.Column("allocation_ratio", sa.Float, nullable=False),
    *_timestamps(),
    sa.UniqueConstraint("resource_provider_id", "resource_class_id",
                        name="uniq_inventories0resource_provider_resource_class"),
)

projects = sa.Table(
    "projects", metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("external_id", exact_string(255), nullable=False, unique=True),
    *_timestamps(),
)

users = sa.Table(
    "users", metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("external_id", exact_string(255), nullable=False, unique=True),
    *_timestamps(),
)

consumer_types = sa.Table(
    "consumer_types", metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("name", exact_string(255), nullable=False, unique=True),
    *_timestamps(),
)

consumers = sa.Table(
    "consumers", metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("uuid", exact_string(36), nullable=False, unique=True),
    sa.Column("project_id", sa.Integer, sa.ForeignKey("projects.id"), nullable=False,
              index=True),
    sa.Column("user_id", sa.Integer, sa.ForeignKey("users.id"), nullable=False, index=True),
    sa.Column("generation", sa.Integer, nullable=False, default=0),
    sa.Column("consumer_type_id", sa.Integer, sa.ForeignKey("consumer_types.id"),
              nullable=True),
    *_timestamps(),
)

allocations = sa.Table(
    "allocations", metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("resource_provider_id", sa.Integer, sa.ForeignKey("resource_providers.id"),
              nullable=False),
    sa.Column("consumer_id", exact_string(36), nullable=False, index=True),
    sa.Column("resource_class_id", sa.Integer, sa.ForeignKey("resource_classes.id"),
              nullable=False),
    sa.Column("used", sa.Integer, nullable=False),
    *_timestamps(),
    sa.Index("allocations_resource_provider_class_used_idx",
             "resource_provider_id", "resource_class_id", "used"),
)

traits = sa.Table(
    "traits", metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("name", exact_string(255), nullable=False, unique=True),
    *_timestamps(),
)

provider_traits = sa.Table(
    "resource_provider_traits", metadata,
    sa.Column("trait_id", sa.Integer, sa.ForeignKey("traits.id"), primary_key=True),
    sa.Column("resource_provider_id", sa.Integer,
              sa.ForeignKey("resource_providers.id", ondelete="CASCADE"), primary_key=True,
              index=True),
    *_timestamps(),
)

aggregates = sa.Table(
    "placement_aggregates", metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("uuid", exact_string(36), nullable=False, unique=True),
)

provider_aggregates = sa.Table(
    "resource_provider_aggregates", metadata,
    sa.Column("resource_provider_id", sa.Integer,
              sa.ForeignKey("resource_providers.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("aggregate_id", sa.Integer, sa.ForeignKey("placement_aggregates.id"),
              primary_key=True, index=True),
)

# Append-only log of which providers changed, written in the writer's own
# transaction; each worker's candidate snapshot replays it to stay coherent.
# provider_id NULL means "reload everything" (e.g. a resource class renamed).
provider_changes = sa.Table(
    "resource_provider_changes", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("provider_id", sa.Integer, nullable=True),
    sa.Column("created_at", sa.DateTime, nullable=False, index=True),
    # True when only the provider's usage changed (an allocation write).
    sa.Column("usage_only", sa.Boolean, nullable=False, server_default=sa.false()),
    # Ids must never be reused, even after pruning empties the table.
    sqlite_autoincrement=True,
)
