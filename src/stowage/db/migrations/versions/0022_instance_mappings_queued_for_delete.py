"""`instance_mappings.queued_for_delete`: the server was deleted (or soft deleted).

What the API knows of a server without its cell: when a cell's database
does not answer, the listing shows a minimal record for each of that cell's
servers from its mapping (Nova's down-cell support, microversion 2.69), and
a deleted server must not be among them. Set when a delete is accepted,
cleared by os-restore, as Nova's InstanceMapping.queued_for_delete.

Revision ID: 0022
Revises: 0021
"""

import sqlalchemy as sa
from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("instance_mappings", sa.Column("queued_for_delete", sa.Boolean,
                                                 nullable=False, server_default=sa.false()))


def downgrade() -> None:
    op.drop_column("instance_mappings", "queued_for_delete")
