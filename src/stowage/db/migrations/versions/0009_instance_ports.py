"""The ports of each server: `instance_ports`, one row per requested network entry.

A row names the port (NULL until Nova created it for a network request),
whether Nova created it (delete then deletes it, else only unbinds it), the
port's resource request as last scheduled and the addresses the server view
shows. `port_id` is unique: of two servers booted with one port at the same
moment, one gets it and the other 409 PortInUse.

Revision ID: 0009
Revises: 0008
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def _exact(length: int) -> sa.types.TypeEngine[str]:
    return sa.String(length).with_variant(
        mysql.VARCHAR(length, charset="utf8mb4", collation="utf8mb4_bin"), "mysql", "mariadb")


def upgrade() -> None:
    op.create_table(
        "instance_ports",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("instance_uuid", _exact(36), nullable=False, index=True),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("port_id", _exact(36), nullable=True),
        sa.Column("network_id", _exact(36), nullable=True),
        sa.Column("fixed_ip", sa.String(64), nullable=True),
        sa.Column("created", sa.Boolean, nullable=False),
        sa.Column("request", sa.JSON, nullable=True),
        sa.Column("vif", sa.JSON, nullable=True),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("updated_at", sa.DateTime, nullable=True),
        sa.UniqueConstraint("port_id", name="uniq_instance_ports_port"),
        sa.UniqueConstraint("instance_uuid", "position", name="uniq_instance_ports_position"),
    )


def downgrade() -> None:
    op.drop_table("instance_ports")
