"""Directory entries created through the Identity API: projects, users, roles, grants.

The settings file's directory stays where it is; these tables hold what
`POST /v3/projects`, `POST /v3/users`, `POST /v3/roles` and the role-grant
routes add next to it, shared by every API worker. Names are unique per
domain (roles: globally) so that concurrent creates of one name end in one
row and a 409. Token role lists become Text: API-made role names are up to
255 characters each.

Revision ID: 0016
Revises: 0015
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def _exact(length: int) -> sa.types.TypeEngine[str]:
    return sa.String(length).with_variant(
        mysql.VARCHAR(length, charset="utf8mb4", collation="utf8mb4_bin"), "mysql", "mariadb")


def upgrade() -> None:
    op.create_table(
        "identity_projects",
        sa.Column("id", _exact(64), primary_key=True),
        sa.Column("name", _exact(64), nullable=False),
        sa.Column("domain_id", _exact(64), nullable=False),
        sa.Column("description", sa.Text, nullable=False),
        sa.Column("enabled", sa.Boolean, nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.UniqueConstraint("domain_id", "name", name="uniq_identity_projects0domain_id0name"),
    )
    op.create_table(
        "identity_users",
        sa.Column("id", _exact(64), primary_key=True),
        sa.Column("name", _exact(255), nullable=False),
        sa.Column("domain_id", _exact(64), nullable=False),
        sa.Column("password_hash", sa.String(255), nullable=True),
        sa.Column("email", sa.String(255), nullable=True),
        sa.Column("description", sa.Text, nullable=False),
        sa.Column("enabled", sa.Boolean, nullable=False),
        sa.Column("default_project_id", _exact(64), nullable=True),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.UniqueConstraint("domain_id", "name", name="uniq_identity_users0domain_id0name"),
    )
    op.create_table(
        "identity_roles",
        sa.Column("id", _exact(64), primary_key=True),
        sa.Column("name", _exact(255), nullable=False),
        sa.Column("description", sa.Text, nullable=True),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.UniqueConstraint("name", name="uniq_identity_roles0name"),
    )
    op.create_table(
        "identity_assignments",
        sa.Column("user_id", _exact(64), primary_key=True),
        sa.Column("role_id", _exact(64), primary_key=True),
        sa.Column("target_type", _exact(16), primary_key=True),
        sa.Column("target_id", _exact(64), primary_key=True),
        sa.Column("created_at", sa.DateTime, nullable=False),
    )
    op.create_index("ix_identity_assignments_target_id", "identity_assignments",
                    ["target_id"])
    with op.batch_alter_table("identity_tokens") as batch:
        batch.alter_column("roles", type_=sa.Text, existing_type=sa.String(255),
                           existing_nullable=False)


def downgrade() -> None:
    with op.batch_alter_table("identity_tokens") as batch:
        batch.alter_column("roles", type_=sa.String(255), existing_type=sa.Text,
                           existing_nullable=False)
    op.drop_index("ix_identity_assignments_target_id", "identity_assignments")
    for table in ("identity_assignments", "identity_roles", "identity_users",
                  "identity_projects"):
        op.drop_table(table)
