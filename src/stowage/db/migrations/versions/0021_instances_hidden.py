"""`instances.hidden`: a server's copy that a cross-cell move keeps out of sight.

A move between cells copies the server's records into the target cell with
the instance hidden (Nova's `Instance.hidden`), swaps the flags when the
move reaches the target, and removes whichever copy is not wanted at the
end; listings and quota counts skip hidden instances, so a server never
shows or counts twice. See compute/cell_copy.py.

Revision ID: 0021
Revises: 0020
"""

import sqlalchemy as sa
from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("instances", sa.Column("hidden", sa.Boolean, nullable=False,
                                         server_default=sa.false()))


def downgrade() -> None:
    op.drop_column("instances", "hidden")
