"""Upstream OpenStack Placement's database schema, as its migrations leave it at 16.0.0.

Why written out here rather than imported: stowage must not depend on
upstream's code, yet `export` has to create a database that stock Placement
16.0.0 serves unchanged and `import` has to know which upstream revisions it
can read. The tables below are the end state of upstream's Alembic chain
(`b4ed3a175331` .. `a082b8bb98d0`), column order, names of constraints and
indexes included; tests/functional/test_placement_adopt_schema.py compares
them with what `placement-manage db sync` creates, so they cannot drift.

Upstream's revisions, oldest first:

    b4ed3a175331  initial (Stein/Train)
    611cd6dffd7b  refuses providers without root_provider_id (a check, no DDL)
    b5c396305c25  refuses allocations without a consumer (a check, no DDL)
    422ece571366  consumer_types table, consumers.consumer_type_id (Xena, 6.0.0)
    a082b8bb98d0  drops indexes that duplicate unique constraints (2023.1, 9.0.0)

Every release from 2023.1 to 16.0.0 is at `a082b8bb98d0`; a deployment that
upgraded its code but not yet its schema may still be at `422ece571366`,
whose data is the same. Both can be read; older ones cannot.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

__all__ = ["metadata", "HEAD", "READABLE", "TOO_OLD", "TABLES", "alembic_version"]

HEAD = "a082b8bb98d0"
# Revisions whose tables and columns are those below (indexes aside).
READABLE = frozenset({"422ece571366", HEAD})
TOO_OLD = frozenset({"b4ed3a175331", "611cd6dffd7b", "b5c396305c25"})

metadata = sa.MetaData()


def _ts() -> list[sa.Column[Any]]:
    # Upstream's oslo.db TimestampMixin; its migrations put these columns first.
    return [sa.Column("created_at", sa.DateTime, nullable=True),
            sa.Column("updated_at", sa.DateTime, nullable=True)]


def _id() -> sa.Column[int]:
    return sa.Column("id", sa.Integer, nullable=False, autoincrement=True)


def _named(name: str, column: str, kind: type[sa.String], constraint: str) -> sa.Table:
    return sa.Table(name, metadata, *_ts(), _id(),
                    sa.Column(column, kind(length=255), nullable=False),
                    sa.PrimaryKeyConstraint("id"),
                    sa.UniqueConstraint(column, name=constraint))


allocations = sa.Table(
    "allocations", metadata, *_ts(), _id(),
    sa.Column("resource_provider_id", sa.Integer, nullable=False),
    sa.Column("consumer_id", sa.String(36), nullable=False),
    sa.Column("resource_class_id", sa.Integer, nullable=False),
    sa.Column("used", sa.Integer, nullable=False),
    sa.PrimaryKeyConstraint("id"),
    sa.Index("allocations_resource_provider_class_used_idx",
             "resource_provider_id", "resource_class_id", "used"),
    sa.Index("allocations_resource_class_id_idx", "resource_class_id"),
    sa.Index("allocations_consumer_id_idx", "consumer_id"),
)

consumer_types = _named("consumer_types", "name", sa.Unicode, "uniq_consumer_types0name")

consumers = sa.Table(
    "consumers", metadata, *_ts(), _id(),
    sa.Column("uuid", sa.String(36), nullable=False),
    sa.Column("project_id", sa.Integer, nullable=False),
    sa.Column("user_id", sa.Integer, nullable=False),
    sa.Column("generation", sa.Integer, nullable=False, server_default=sa.text("0")),
    sa.Column("consumer_type_id", sa.Integer, nullable=True),
    sa.PrimaryKeyConstraint("id"),
    sa.UniqueConstraint("uuid", name="uniq_consumers0uuid"),
    sa.ForeignKeyConstraint(["consumer_type_id"], ["consumer_types.id"],
                            name="consumers_consumer_type_id_fkey"),
    sa.Index("consumers_project_id_user_id_uuid_idx", "project_id", "user_id", "uuid"),
    sa.Index("consumers_project_id_uuid_idx", "project_id", "uuid"),
    sa.Index("consumers_consumer_type_id_idx", "consumer_type_id"),
)

inventories = sa.Table(
    "inventories", metadata, *_ts(), _id(),
    sa.Column("resource_provider_id", sa.Integer, nullable=False),
    sa.Column("resource_class_id", sa.Integer, nullable=False),
    *[sa.Column(name, sa.Integer, nullable=False)
      for name in ("total", "reserved", "min_unit", "max_unit", "step_size")],
    sa.Column("allocation_ratio", sa.Float, nullable=False),
    sa.PrimaryKeyConstraint("id"),
    sa.UniqueConstraint("resource_provider_id", "resource_class_id",
                        name="uniq_inventories0resource_provider_resource_class"),
    sa.Index("inventories_resource_class_id_idx", "resource_class_id"),
)

placement_aggregates = sa.Table(
    "placement_aggregates", metadata, *_ts(), _id(),
    sa.Column("uuid", sa.String(36), nullable=True),
    sa.PrimaryKeyConstraint("id"),
    sa.UniqueConstraint("uuid", name="uniq_placement_aggregates0uuid"),
)

projects = _named("projects", "external_id", sa.String, "uniq_projects0external_id")

resource_classes = _named("resource_classes", "name", sa.String, "uniq_resource_classes0name")

resource_provider_aggregates = sa.Table(
    "resource_provider_aggregates", metadata, *_ts(),
    sa.Column("resource_provider_id", sa.Integer, nullable=False),
    sa.Column("aggregate_id", sa.Integer, nullable=False),
    sa.PrimaryKeyConstraint("resource_provider_id", "aggregate_id"),
    sa.Index("resource_provider_aggregates_aggregate_id_idx", "aggregate_id"),
)

resource_providers = sa.Table(
    "resource_providers", metadata, *_ts(), _id(),
    sa.Column("uuid", sa.String(36), nullable=False),
    sa.Column("name", sa.Unicode(200), nullable=True),
    sa.Column("generation", sa.Integer, nullable=True),
    sa.Column("root_provider_id", sa.Integer, nullable=True),
    sa.Column("parent_provider_id", sa.Integer, nullable=True),
    sa.ForeignKeyConstraint(["parent_provider_id"], ["resource_providers.id"]),
    sa.ForeignKeyConstraint(["root_provider_id"], ["resource_providers.id"]),
    sa.PrimaryKeyConstraint("id"),
    sa.UniqueConstraint("name", name="uniq_resource_providers0name"),
    sa.UniqueConstraint("uuid", name="uniq_resource_providers0uuid"),
    sa.Index("resource_providers_parent_provider_id_idx", "parent_provider_id"),
    sa.Index("resource_providers_root_provider_id_idx", "root_provider_id"),
)

traits = _named("traits", "name", sa.Unicode, "uniq_traits0name")

users = _named("users", "external_id", sa.String, "uniq_users0external_id")

resource_provider_traits = sa.Table(
    "resource_provider_traits", metadata, *_ts(),
    sa.Column("trait_id", sa.Integer, nullable=False),
    sa.Column("resource_provider_id", sa.Integer, nullable=False),
    sa.ForeignKeyConstraint(["resource_provider_id"], ["resource_providers.id"]),
    sa.ForeignKeyConstraint(["trait_id"], ["traits.id"]),
    sa.PrimaryKeyConstraint("trait_id", "resource_provider_id"),
    sa.Index("resource_provider_traits_resource_provider_trait_idx",
             "resource_provider_id", "trait_id"),
)

# Alembic's own bookkeeping, as Alembic creates it; export stamps HEAD in it.
alembic_version = sa.Table(
    "alembic_version", metadata,
    sa.Column("version_num", sa.String(32), nullable=False),
    sa.PrimaryKeyConstraint("version_num", name="alembic_version_pkc"),
)

# The data tables, parents before children: the order rows are copied in.
TABLES = ("resource_classes", "traits", "consumer_types", "projects", "users",
          "placement_aggregates", "resource_providers", "inventories",
          "resource_provider_traits", "resource_provider_aggregates", "consumers",
          "allocations")
