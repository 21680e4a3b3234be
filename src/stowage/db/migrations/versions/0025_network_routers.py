"""Routers and floating IPs: `networks.router_external` (extension external-net),
`routers` (gateway port and static routes) and `floatingips` (an address on an
external network, optionally associated with a fixed IP of a port).

`floatingips (floating_network_id, fixed_port_id, fixed_ip_address)` is unique:
one floating IP per fixed IP and external network, whoever associates at the
same moment. Deleting the associated port
clears the association (SET NULL); deleting the floating IP's own port deletes it.

Revision ID: 0025
Revises: 0024
"""

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None


def _exact(length: int) -> sa.types.TypeEngine[str]:
    return sa.String(length).with_variant(
        mysql.VARCHAR(length, charset="utf8mb4", collation="utf8mb4_bin"), "mysql", "mariadb")


def _stamp() -> sa.types.TypeEngine[Any]:
    return sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")


def _standard() -> list[sa.Column[Any]]:
    return [sa.Column("revision_number", sa.BigInteger, nullable=False),
            sa.Column("created_at", _stamp(), nullable=False),
            sa.Column("updated_at", _stamp(), nullable=False)]


def upgrade() -> None:
    with op.batch_alter_table("networks") as batch:
        batch.add_column(sa.Column("router_external", sa.Boolean, nullable=False,
                                   server_default=sa.false()))
    op.create_table(
        "routers",
        sa.Column("id", _exact(36), primary_key=True),
        sa.Column("project_id", _exact(255), nullable=False),
        sa.Column("name", _exact(255), nullable=False),
        sa.Column("description", sa.String(255), nullable=False),
        sa.Column("admin_state_up", sa.Boolean, nullable=False),
        sa.Column("gw_port_id", _exact(36), sa.ForeignKey("ports.id"), nullable=True),
        sa.Column("gw_network_id", _exact(36), nullable=True),
        sa.Column("enable_snat", sa.Boolean, nullable=False),
        sa.Column("routes", sa.JSON, nullable=False),
        *_standard(),
    )
    op.create_index("ix_routers_project", "routers", ["project_id"])
    op.create_table(
        "floatingips",
        sa.Column("id", _exact(36), primary_key=True),
        sa.Column("project_id", _exact(255), nullable=False),
        sa.Column("description", sa.String(255), nullable=False),
        sa.Column("floating_network_id", _exact(36), sa.ForeignKey("networks.id"),
                  nullable=False),
        sa.Column("floating_port_id", _exact(36),
                  sa.ForeignKey("ports.id", ondelete="CASCADE"), nullable=False),
        sa.Column("floating_ip_address", sa.String(64), nullable=False),
        sa.Column("fixed_port_id", _exact(36), sa.ForeignKey("ports.id", ondelete="SET NULL"),
                  nullable=True),
        sa.Column("fixed_ip_address", sa.String(64), nullable=True),
        sa.Column("router_id", _exact(36), sa.ForeignKey("routers.id"), nullable=True),
        *_standard(),
        sa.UniqueConstraint("floating_network_id", "fixed_port_id", "fixed_ip_address",
                            name="uniq_floatingips_fixed_port_ip"),
    )
    op.create_index("ix_floatingips_project", "floatingips", ["project_id"])
    op.create_index("ix_floatingips_router", "floatingips", ["router_id"])


def downgrade() -> None:
    op.drop_table("floatingips")
    op.drop_table("routers")
    with op.batch_alter_table("networks") as batch:
        batch.drop_column("router_external")
