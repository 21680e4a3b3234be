"""Conductor leases on the journal: `operation_steps.owner`, `.lease_expires`.

An operation belongs to the conductor that runs it: its `accepted` row (the
operation's head) names the owner (host:pid:random, one per conductor
process start) and until when the lease holds (naive UTC, microseconds on
MySQL too, since test leases last a second). A NULL `lease_expires` means the
operation ended; an unclaimed head carries the time it was accepted there.
See compute/conductor/leases.py.

Open operations of older versions get a head if they had none (a journal
the conductor opened itself wrote no `accepted` row), and every open head
gets `lease_expires` = its `created_at`: unclaimed since then, so the first
conductor to look after the upgrade takes them over as recovery did.

Revision ID: 0019
Revises: 0018
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

_STAMP = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")
_INDEX = "ix_operation_steps_lease_expires"


def upgrade() -> None:
    op.add_column("operation_steps", sa.Column("owner", sa.String(255), nullable=True))
    op.add_column("operation_steps", sa.Column("lease_expires", _STAMP, nullable=True))
    # Take-over looks for expired leases every few seconds: a range scan, not the table.
    op.create_index(_INDEX, "operation_steps", ["lease_expires"])
    _open_heads(op.get_bind())


def _open_heads(conn: sa.Connection) -> None:
    """Give every open operation an unclaimed head (see the module docstring)."""
    steps = sa.table("operation_steps", sa.column("operation_uuid"), sa.column("operation"),
                     sa.column("instance_uuid"), sa.column("step"), sa.column("state"),
                     sa.column("created_at"), sa.column("lease_expires"))
    ended = sa.select(steps.c.operation_uuid).where(steps.c.step == "end")
    # SELECT * FROM operation_steps WHERE operation_uuid NOT IN (<ended>) ORDER BY created_at
    rows = conn.execute(sa.select(steps).where(steps.c.operation_uuid.not_in(ended))
                        .order_by(steps.c.created_at)).all()
    first: dict[str, sa.Row[tuple[object, ...]]] = {}
    headed: set[str] = set()
    for row in rows:
        first.setdefault(row.operation_uuid, row)
        if row.step == "accepted":
            headed.add(row.operation_uuid)
    for uuid in headed:
        conn.execute(steps.update()
                     .where(steps.c.operation_uuid == uuid, steps.c.step == "accepted")
                     .values(lease_expires=steps.c.created_at))
    missing = [row for uuid, row in first.items() if uuid not in headed]
    if missing:
        conn.execute(steps.insert(), [
            {"operation_uuid": r.operation_uuid, "operation": r.operation,
             "instance_uuid": r.instance_uuid, "step": "accepted", "state": "done",
             "created_at": r.created_at, "lease_expires": r.created_at} for r in missing])


def downgrade() -> None:
    op.drop_index(_INDEX, "operation_steps")
    op.drop_column("operation_steps", "lease_expires")
    op.drop_column("operation_steps", "owner")
