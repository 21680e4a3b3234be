"""A simulated guest's serial console and boot time: `simulated_guests.console`, `.booted_at`.

The console is the guest's last lines (a JSON list, NULL for rows written
before it existed: an empty log); `booted_at` is when the guest last
booted (NULL while it is off), from which diagnostics report its uptime.
Both survive an agent restart with the guest, as a real console file does.

Revision ID: 0017
Revises: 0016
"""

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("simulated_guests", sa.Column("console", sa.JSON, nullable=True))
    op.add_column("simulated_guests", sa.Column("booted_at", sa.DateTime, nullable=True))


def downgrade() -> None:
    op.drop_column("simulated_guests", "booted_at")
    op.drop_column("simulated_guests", "console")
