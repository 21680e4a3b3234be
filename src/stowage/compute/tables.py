"""SQLAlchemy Core tables of the Compute service.

Flavors are soft-deleted: `deleted` is 0 while a flavor lives and its own id
once deleted, so that name and flavorid stay unique among live flavors while
a deleted flavor's row remains for instances that were built from it.
"""

from __future__ import annotations

import sqlalchemy as sa

from stowage.placement.tables import exact_string

__all__ = ["metadata", "flavors", "flavor_extra_specs", "flavor_projects"]

metadata = sa.MetaData()

flavors = sa.Table(
    "flavors", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("flavorid", exact_string(255), nullable=False),
    sa.Column("name", exact_string(255), nullable=False),
    sa.Column("memory_mb", sa.Integer, nullable=False),
    sa.Column("vcpus", sa.Integer, nullable=False),
    sa.Column("root_gb", sa.Integer, nullable=False),
    sa.Column("ephemeral_gb", sa.Integer, nullable=False, default=0),
    sa.Column("swap", sa.Integer, nullable=False, default=0),
    sa.Column("rxtx_factor", sa.Float, nullable=False, default=1.0),
    sa.Column("is_public", sa.Boolean, nullable=False, default=True),
    sa.Column("disabled", sa.Boolean, nullable=False, default=False),
    sa.Column("description", sa.Text, nullable=True),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Column("updated_at", sa.DateTime, nullable=True),
    sa.Column("deleted", sa.Integer, nullable=False, default=0),
    sa.UniqueConstraint("flavorid", "deleted", name="uniq_flavors_flavorid_deleted"),
    sa.UniqueConstraint("name", "deleted", name="uniq_flavors_name_deleted"),
)

flavor_extra_specs = sa.Table(
    "flavor_extra_specs", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("flavor_id", sa.Integer, sa.ForeignKey("flavors.id"), nullable=False),
    sa.Column("key", exact_string(255), nullable=False),
    sa.Column("value", sa.String(255), nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Column("updated_at", sa.DateTime, nullable=True),
    sa.UniqueConstraint("flavor_id", "key", name="uniq_flavor_extra_specs_flavor_key"),
)

# Which projects may see and use a private flavor.
flavor_projects = sa.Table(
    "flavor_projects", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("flavor_id", sa.Integer, sa.ForeignKey("flavors.id"), nullable=False),
    sa.Column("project_id", exact_string(255), nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.UniqueConstraint("flavor_id", "project_id", name="uniq_flavor_projects_flavor_project"),
)
