"""Columns the next moves need: live-migration progress and shelve's system metadata.

A live migration reports how much memory and disk it has copied
(`GET /servers/{id}/migrations/{mid}`, microversion 2.23 on); Nova keeps
those byte counts on the migration row. Shelve remembers where the guest
was and which image snapshot holds its root disk (Nova's
`shelved_at`/`shelved_image_id`/`shelved_host` system metadata) so that
unshelve can boot from it and delete it afterwards: a JSON column of
internal instance facts, never shown as the user's metadata.

Revision ID: 0007
Revises: 0006
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

_PROGRESS = ("memory_total", "memory_processed", "memory_remaining",
             "disk_total", "disk_processed", "disk_remaining")


def upgrade() -> None:
    # Plain ADD COLUMNs (no batch copy on SQLite): ids and rows stay as they are.
    for name in _PROGRESS:
        op.add_column("migrations", sa.Column(name, sa.BigInteger, nullable=True))
    op.add_column("instances", sa.Column("system_metadata", sa.JSON, nullable=True))


def downgrade() -> None:
    op.drop_column("instances", "system_metadata")
    for name in reversed(_PROGRESS):
        op.drop_column("migrations", name)
