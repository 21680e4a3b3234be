"""Network quotas: `network_quotas` (a project's limit per resource, where it is not
Neutron's default) and `network_quota_holds` (the row a creator locks).

Every create that a quota limits first locks its project's row in
`network_quota_holds`, then counts the project's records: two requests of one
project creating at once count one after the other, so together they cannot
exceed the limit.

Revision ID: 0024
Revises: 0023
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None


def _exact(length: int) -> sa.types.TypeEngine[str]:
    return sa.String(length).with_variant(
        mysql.VARCHAR(length, charset="utf8mb4", collation="utf8mb4_bin"), "mysql", "mariadb")


def upgrade() -> None:
    op.create_table(
        "network_quotas",
        sa.Column("project_id", _exact(255), primary_key=True),
        sa.Column("resource", _exact(255), primary_key=True),
        sa.Column("hard_limit", sa.Integer, nullable=False),
    )
    op.create_table(
        "network_quota_holds",
        sa.Column("project_id", _exact(255), primary_key=True),
        sa.Column("holds", sa.BigInteger, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("network_quota_holds")
    op.drop_table("network_quotas")
