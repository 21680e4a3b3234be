"""Network tags and port extras: `network_tags` (standard-attr-tag: a tag once per
record, the record named by collection and id), `port_address_pairs`
(allowed-address-pairs) and `port_dhcp_options` (extra_dhcp_opt), both going with
their port; `subnetpools` (subnet_allocation) and `subnetpool_allocations` (which
pool a subnet's prefix came from: the pool cannot be deleted while it has one).

Revision ID: 0026
Revises: 0025
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None


def _exact(length: int) -> sa.types.TypeEngine[str]:
    return sa.String(length).with_variant(
        mysql.VARCHAR(length, charset="utf8mb4", collation="utf8mb4_bin"), "mysql", "mariadb")


def _port_id() -> sa.Column[str]:
    return sa.Column("port_id", _exact(36), sa.ForeignKey("ports.id", ondelete="CASCADE"),
                     primary_key=True)


def upgrade() -> None:
    op.create_table(
        "network_tags",
        sa.Column("resource", _exact(32), primary_key=True),
        sa.Column("resource_id", _exact(36), primary_key=True),
        sa.Column("tag", _exact(255), primary_key=True),
    )
    op.create_table(
        "port_address_pairs",
        _port_id(),
        sa.Column("ip_address", _exact(64), primary_key=True),
        sa.Column("mac_address", _exact(32), primary_key=True),
        sa.Column("position", sa.Integer, nullable=False),
    )
    op.create_table(
        "port_dhcp_options",
        _port_id(),
        sa.Column("opt_name", _exact(64), primary_key=True),
        sa.Column("ip_version", sa.Integer, primary_key=True),
        sa.Column("opt_value", sa.String(255), nullable=False),
    )


    _subnetpools()


def _subnetpools() -> None:
    stamp = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")
    op.create_table(
        "subnetpools",
        sa.Column("id", _exact(36), primary_key=True),
        sa.Column("project_id", _exact(255), nullable=False),
        sa.Column("name", _exact(255), nullable=False),
        sa.Column("description", sa.String(255), nullable=False),
        sa.Column("ip_version", sa.Integer, nullable=False),
        sa.Column("prefixes", sa.JSON, nullable=False),
        sa.Column("default_prefixlen", sa.Integer, nullable=False),
        sa.Column("min_prefixlen", sa.Integer, nullable=False),
        sa.Column("max_prefixlen", sa.Integer, nullable=False),
        sa.Column("shared", sa.Boolean, nullable=False),
        sa.Column("default_quota", sa.Integer, nullable=True),
        sa.Column("default_key", sa.Integer, nullable=True),
        sa.Column("revision_number", sa.BigInteger, nullable=False),
        sa.Column("created_at", stamp, nullable=False),
        sa.Column("updated_at", stamp, nullable=False),
        sa.UniqueConstraint("default_key", name="uniq_subnetpools_default_key"),
    )
    op.create_table(
        "subnetpool_allocations",
        sa.Column("subnet_id", _exact(36), sa.ForeignKey("subnets.id", ondelete="CASCADE"),
                  primary_key=True),
        sa.Column("subnetpool_id", _exact(36), sa.ForeignKey("subnetpools.id"),
                  nullable=False),
        sa.Index("ix_subnetpool_allocations_pool", "subnetpool_id"),
    )


def downgrade() -> None:
    op.drop_table("subnetpool_allocations")
    op.drop_table("subnetpools")
    op.drop_table("port_dhcp_options")
    op.drop_table("port_address_pairs")
    op.drop_table("network_tags")
