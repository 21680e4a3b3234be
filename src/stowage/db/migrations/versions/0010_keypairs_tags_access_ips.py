"""Key pairs, server tags, and the instance columns for access IPs, disk config and key data.

`key_pairs` holds each user's key pairs, the name unique per user (Nova's
KeyPairExists comes from that constraint, so two creates racing cannot both
win). `tags` holds a server's tags, one row per (server, tag) as Nova's
`tags` table. The instance gains `access_ip_v4`/`access_ip_v6` (2.1's
accessIPv4/v6), `auto_disk_config` (OS-DCF:diskConfig AUTO) and `key_data`
(the public key of the key pair it was booted with, kept when the key pair
is deleted).

Revision ID: 0010
Revises: 0009
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def _exact(length: int) -> sa.types.TypeEngine[str]:
    return sa.String(length).with_variant(
        mysql.VARCHAR(length, charset="utf8mb4", collation="utf8mb4_bin"), "mysql", "mariadb")


def upgrade() -> None:
    op.create_table(
        "key_pairs",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("name", _exact(255), nullable=False),
        sa.Column("user_id", _exact(255), nullable=False),
        sa.Column("fingerprint", sa.String(255), nullable=False),
        sa.Column("public_key", sa.Text, nullable=False),
        sa.Column("type", sa.String(16), nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("updated_at", sa.DateTime, nullable=True),
        sa.UniqueConstraint("user_id", "name", name="uniq_key_pairs_user_id_name"),
    )
    op.create_table(
        "tags",
        sa.Column("resource_id", _exact(36), primary_key=True),
        sa.Column("tag", _exact(80), primary_key=True),
    )
    op.create_index("tags_tag_idx", "tags", ["tag"])
    # Plain ADD COLUMNs, also on SQLite (no batch copy of the instances table).
    op.add_column("instances", sa.Column("access_ip_v4", sa.String(39), nullable=True))
    op.add_column("instances", sa.Column("access_ip_v6", sa.String(39), nullable=True))
    op.add_column("instances", sa.Column("auto_disk_config", sa.Boolean, nullable=False,
                                         server_default=sa.false()))
    op.add_column("instances", sa.Column("key_data", sa.Text, nullable=True))


def downgrade() -> None:
    for name in ("key_data", "auto_disk_config", "access_ip_v6", "access_ip_v4"):
        op.drop_column("instances", name)
    op.drop_index("tags_tag_idx", table_name="tags")
    op.drop_table("tags")
    op.drop_table("key_pairs")
