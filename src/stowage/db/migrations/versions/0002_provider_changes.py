"""Provider change log, replayed by per-worker candidate snapshots.

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "resource_provider_changes",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("provider_id", sa.Integer, nullable=True),
        sa.Column("created_at", sa.DateTime, nullable=False, index=True),
        sqlite_autoincrement=True)
