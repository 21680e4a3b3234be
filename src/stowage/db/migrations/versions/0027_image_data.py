"""Image data: `images.checksum`, `os_hash_algo` and `os_hash_value`.

The bytes of an image live in the Image service's filesystem store (one
file per image, named by its id: image/data.py); the row keeps what Glance
shows of them: the md5 `checksum` and the multihash (`sha512`) of the data,
next to the `size` it already had.

Revision ID: 0027
Revises: 0024
"""

import sqlalchemy as sa
from alembic import op

revision = "0027"
down_revision = "0024"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("images", sa.Column("checksum", sa.String(32), nullable=True))
    op.add_column("images", sa.Column("os_hash_algo", sa.String(64), nullable=True))
    op.add_column("images", sa.Column("os_hash_value", sa.String(128), nullable=True))


def downgrade() -> None:
    op.drop_column("images", "os_hash_value")
    op.drop_column("images", "os_hash_algo")
    op.drop_column("images", "checksum")
