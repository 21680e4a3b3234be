"""Security groups of the Network service: groups, their rules, the one `default`
group per project, and the groups each port is in.

`default_security_groups` is keyed by project (one default group each, even
when two requests create it at once); `security_group_rules.rule_key` is
unique (a rule once per group); a group a port is in cannot be deleted
(`port_security_groups` restricts it); the rules naming a deleted group as their
remote go with it, as in Neutron.

Revision ID: 0015
Revises: 0014
"""

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def _exact(length: int) -> sa.types.TypeEngine[str]:
    return sa.String(length).with_variant(
        mysql.VARCHAR(length, charset="utf8mb4", collation="utf8mb4_bin"), "mysql", "mariadb")


def _standard() -> list[sa.Column[Any]]:
    stamp = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")
    return [sa.Column("revision_number", sa.BigInteger, nullable=False),
            sa.Column("created_at", stamp, nullable=False),
            sa.Column("updated_at", stamp, nullable=False)]


def upgrade() -> None:
    op.create_table(
        "security_groups",
        sa.Column("id", _exact(36), primary_key=True),
        sa.Column("project_id", _exact(255), nullable=False),
        sa.Column("name", _exact(255), nullable=False),
        sa.Column("description", sa.String(255), nullable=False),
        *_standard())
    op.create_index("ix_security_groups_project", "security_groups", ["project_id"])
    op.create_table(
        "default_security_groups",
        sa.Column("project_id", _exact(255), primary_key=True),
        sa.Column("security_group_id", _exact(36),
                  sa.ForeignKey("security_groups.id", ondelete="CASCADE"), nullable=False))
    op.create_table(
        "security_group_rules",
        sa.Column("id", _exact(36), primary_key=True),
        sa.Column("security_group_id", _exact(36),
                  sa.ForeignKey("security_groups.id", ondelete="CASCADE"), nullable=False),
        sa.Column("project_id", _exact(255), nullable=False),
        sa.Column("description", sa.String(255), nullable=False),
        sa.Column("direction", sa.String(16), nullable=False),
        sa.Column("ethertype", sa.String(8), nullable=False),
        sa.Column("protocol", sa.String(40), nullable=True),
        sa.Column("port_range_min", sa.Integer, nullable=True),
        sa.Column("port_range_max", sa.Integer, nullable=True),
        sa.Column("remote_ip_prefix", sa.String(64), nullable=True),
        sa.Column("remote_group_id", _exact(36),
                  sa.ForeignKey("security_groups.id", ondelete="CASCADE"), nullable=True),
        sa.Column("rule_key", _exact(255), nullable=False),
        *_standard(),
        sa.UniqueConstraint("rule_key", name="uniq_security_group_rules_key"))
    op.create_index("ix_security_group_rules_group", "security_group_rules",
                    ["security_group_id"])
    op.create_table(
        "port_security_groups",
        sa.Column("port_id", _exact(36), sa.ForeignKey("ports.id", ondelete="CASCADE"),
                  primary_key=True),
        sa.Column("security_group_id", _exact(36), sa.ForeignKey("security_groups.id"),
                  primary_key=True))
    op.create_index("ix_port_security_groups_group", "port_security_groups",
                    ["security_group_id"])


def downgrade() -> None:
    op.drop_table("port_security_groups")
    op.drop_table("security_group_rules")
    op.drop_table("default_security_groups")
    op.drop_table("security_groups")
