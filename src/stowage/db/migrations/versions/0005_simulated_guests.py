"""Simulated hypervisors keep their guests across restarts: `simulated_guests`.

Existing instances that run on a host are written in as that host's guests, so
an upgraded deployment keeps them (before this revision the agent rebuilt its
guests from the instance records at every start).

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def _exact(length: int) -> sa.types.TypeEngine[str]:
    return sa.String(length).with_variant(
        mysql.VARCHAR(length, charset="utf8mb4", collation="utf8mb4_bin"), "mysql", "mariadb")


def upgrade() -> None:
    guests = op.create_table(
        "simulated_guests",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("host", _exact(255), nullable=False),
        sa.Column("instance_uuid", _exact(36), nullable=False),
        sa.Column("migration_uuid", _exact(36), nullable=False),
        sa.Column("flavor", sa.JSON, nullable=False),
        sa.Column("power_state", sa.Integer, nullable=False),
        sa.Column("incoming", _exact(36), nullable=True),
        sa.UniqueConstraint("host", "instance_uuid", "migration_uuid",
                            name="uniq_simulated_guests"),
    )
    instances = sa.table("instances", sa.column("uuid", sa.String), sa.column("host", sa.String),
                         sa.column("flavor", sa.JSON), sa.column("power_state", sa.Integer),
                         sa.column("vm_state", sa.String), sa.column("deleted", sa.Integer))
    # SELECT host, uuid, flavor, power_state FROM instances
    #  WHERE deleted = 0 AND host IS NOT NULL AND vm_state != 'building'
    rows = op.get_bind().execute(
        sa.select(instances.c.host, instances.c.uuid, instances.c.flavor,
                  instances.c.power_state)
        .where(instances.c.deleted == 0, instances.c.host.is_not(None),
               instances.c.vm_state != "building")).all()
    if rows:
        op.bulk_insert(guests, [{"host": r.host, "instance_uuid": r.uuid, "migration_uuid": "",
                                 "flavor": r.flavor, "power_state": r.power_state,
                                 "incoming": None} for r in rows])


def downgrade() -> None:
    op.drop_table("simulated_guests")
