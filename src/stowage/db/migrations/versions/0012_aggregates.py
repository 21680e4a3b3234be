"""Host aggregates: `aggregates`, their hosts and their metadata (Nova's os-aggregates).

An aggregate's name and uuid are unique; a host is in an aggregate at most
once and a metadata key appears once per aggregate (unique constraints, so
that two racing writers cannot both succeed). The `availability_zone` key
gives the aggregate's hosts their availability zone.

Revision ID: 0012
Revises: 0011
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def _exact(length: int) -> sa.types.TypeEngine[str]:
    return sa.String(length).with_variant(
        mysql.VARCHAR(length, charset="utf8mb4", collation="utf8mb4_bin"), "mysql", "mariadb")


def upgrade() -> None:
    op.create_table(
        "aggregates",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("uuid", _exact(36), nullable=False, unique=True),
        sa.Column("name", _exact(255), nullable=False, unique=True),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("updated_at", sa.DateTime, nullable=True),
    )
    op.create_table(
        "aggregate_hosts",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("aggregate_id", sa.Integer, sa.ForeignKey("aggregates.id"), nullable=False),
        sa.Column("host", _exact(255), nullable=False, index=True),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.UniqueConstraint("aggregate_id", "host", name="uniq_aggregate_hosts_aggregate_host"),
    )
    op.create_table(
        "aggregate_metadata",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("aggregate_id", sa.Integer, sa.ForeignKey("aggregates.id"), nullable=False),
        sa.Column("key", _exact(255), nullable=False, index=True),
        sa.Column("value", sa.String(255), nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.UniqueConstraint("aggregate_id", "key", name="uniq_aggregate_metadata_aggregate_key"),
    )


def downgrade() -> None:
    op.drop_table("aggregate_metadata")
    op.drop_table("aggregate_hosts")
    op.drop_table("aggregates")
