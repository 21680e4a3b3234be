"""The provider change log says which changes touched usage alone.

A claim changes nothing about a provider but its usage; a worker replaying
the log then reloads one grouped sum instead of the provider's inventories,
traits and aggregates. Rows written before this revision count as full
changes (the safe reading).

Revision ID: 0006
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # A plain ADD COLUMN, also on SQLite: a batch copy could drop AUTOINCREMENT,
    # and the log's ids must never be reused.
    op.add_column("resource_provider_changes",
                  sa.Column("usage_only", sa.Boolean, nullable=False,
                            server_default=sa.false()))


def downgrade() -> None:
    op.drop_column("resource_provider_changes", "usage_only")
