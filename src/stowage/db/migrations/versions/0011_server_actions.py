"""Who locked a server and why: `instances.locked_by`, `instances.locked_reason`.

Nova keeps `locked_by` ('owner' or 'admin') on the instance, so an owner's
unlock of a server an admin locked needs `unlock_override`; the reason
(microversion 2.73) is shown as the server's `locked_reason`. Both are NULL
while the server is unlocked.

Revision ID: 0011
Revises: 0010
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMNs (no batch copy on SQLite): ids and rows stay as they are.
    op.add_column("instances", sa.Column("locked_by", sa.String(5), nullable=True))
    op.add_column("instances", sa.Column("locked_reason", sa.String(255), nullable=True))


def downgrade() -> None:
    op.drop_column("instances", "locked_reason")
    op.drop_column("instances", "locked_by")
