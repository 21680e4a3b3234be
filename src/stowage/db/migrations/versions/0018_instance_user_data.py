"""A server's user data: `instances.user_data`, as given at create or rebuild (2.57).

Nova keeps it with the instance and shows it to admins as
`OS-EXT-SRV-ATTR:user_data` (2.3) and in the rebuild answer (2.57); servers
created before this revision have none (NULL), as servers booted without it.

Revision ID: 0018
Revises: 0017
"""

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("instances", sa.Column("user_data", sa.Text, nullable=True))


def downgrade() -> None:
    op.drop_column("instances", "user_data")
