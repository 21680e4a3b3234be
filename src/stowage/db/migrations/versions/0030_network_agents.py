"""Network agents: `network_agents`, the L2 agent registrations of the compute hosts
(Neutron's `agent` extension).

Revision ID: 0030
Revises: 0029
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0030"
down_revision = "0029"
branch_labels = None
depends_on = None

_STAMP = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")


def _exact(length: int) -> sa.types.TypeEngine[str]:
    return sa.String(length).with_variant(
        mysql.VARCHAR(length, charset="utf8mb4", collation="utf8mb4_bin"), "mysql", "mariadb")


def upgrade() -> None:
    op.create_table(
        "network_agents",
        sa.Column("id", _exact(36), primary_key=True),
        sa.Column("agent_type", sa.String(64), nullable=False),
        sa.Column("host", _exact(255), nullable=False),
        sa.Column("live_host", _exact(255), nullable=True),
        sa.Column("admin_state_up", sa.Boolean, nullable=False),
        sa.Column("description", sa.String(255), nullable=True),
        sa.Column("created_at", _STAMP, nullable=False),
        sa.Column("deleted_at", _STAMP, nullable=True),
        sa.UniqueConstraint("agent_type", "live_host", name="uniq_network_agents_live"),
    )
    op.create_index("ix_network_agents_host", "network_agents", ["host"])


def downgrade() -> None:
    op.drop_index("ix_network_agents_host", table_name="network_agents")
    op.drop_table("network_agents")
