"""Which upstream Placement databases can be read, and what to do about the others.

Why checked before anything is written: a refusal should tell the operator
the one command that fixes it (`placement-manage db sync`, `db
online_data_migrations`), not surface as a constraint error halfway through
a million rows.
"""

from __future__ import annotations

import os_resource_classes as orc
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.placement.adopt import upstream_schema as us

__all__ = ["our_driver", "revision_problem", "data_problems", "standard_class_problem"]

# An operator copies the URL from placement.conf, where the drivers are
# upstream's; this environment has psycopg (3) and PyMySQL.
_DRIVERS = {"postgresql": "postgresql+psycopg", "postgresql+psycopg2": "postgresql+psycopg",
            "mysql": "mysql+pymysql", "mysql+mysqldb": "mysql+pymysql"}


def our_driver(url: str) -> str:
    """`url` with its driver replaced by the one this environment has."""
    parsed = sa.make_url(url)
    driver = _DRIVERS.get(parsed.drivername)
    if driver is None:
        return url
    return parsed.set(drivername=driver).render_as_string(hide_password=False)


def _revision(conn: Connection) -> str | None:
    inspector = sa.inspect(conn)
    if not inspector.has_table("alembic_version"):
        return None
    versions = list(conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalars())
    return versions[0] if len(versions) == 1 else ",".join(sorted(versions)) or None


def revision_problem(conn: Connection) -> str | None:
    """Why this database cannot be read as upstream Placement's, or None if it can."""
    if not sa.inspect(conn).has_table("resource_providers"):
        return "it has no resource_providers table: not an OpenStack Placement database"
    revision = _revision(conn)
    if revision is None:
        return ("it has no Alembic revision (older than Placement 2.0.0/Train, or never "
                "synced): run `placement-manage db sync` with Placement 2023.1 or newer first")
    if revision in us.TOO_OLD:
        return (f"its schema is at upstream revision {revision}, older than consumer types "
                "(Placement 6.0.0/Xena): run `placement-manage db sync` with Placement "
                "2023.1 or newer first")
    if revision.isdigit():
        return f"it is a stowage database (revision {revision}), not upstream Placement's"
    if revision not in us.READABLE:
        return (f"its schema is at upstream revision {revision}, which this stowage does not "
                f"know (it reads {', '.join(sorted(us.READABLE))}, up to Placement 16.0.0's "
                f"{us.HEAD}); use a newer stowage")
    return None


# Each: what is wrong, how to count it, and what fixes it.
_CHECKS = (
    ("resource provider(s) without a root provider",
     "SELECT COUNT(*) FROM resource_providers WHERE root_provider_id IS NULL",
     "run `placement-manage db online_data_migrations`"),
    ("allocation(s) without a consumer record",
     "SELECT COUNT(*) FROM allocations a LEFT JOIN consumers c ON a.consumer_id = c.uuid "
     "WHERE c.id IS NULL",
     "run `placement-manage db online_data_migrations`"),
    ("resource provider(s) without a name",
     "SELECT COUNT(*) FROM resource_providers WHERE name IS NULL",
     "give each a name (PUT /resource_providers/{uuid})"),
    ("aggregate(s) without a uuid",
     "SELECT COUNT(*) FROM placement_aggregates WHERE uuid IS NULL",
     "delete those rows: no provider can be a member of them through the API"),
)


def data_problems(conn: Connection) -> list[str]:
    """Rows that stowage cannot hold as they are, with the fix for each kind."""
    problems = []
    for what, sql, fix in _CHECKS:
        count = conn.execute(sa.text(sql)).scalar() or 0
        if count:
            problems.append(f"{count} {what}: {fix}")
    moved = standard_class_problem(conn)
    return problems + ([moved] if moved else [])


def standard_class_problem(conn: Connection) -> str | None:
    """Standard classes must sit at their os-resource-classes index, as upstream syncs
    them and as stowage's id cache assumes (placement/resource_classes.py)."""
    index = {name: i for i, name in enumerate(orc.STANDARDS)}
    moved = [name for rc_id, name in conn.execute(sa.text("SELECT id, name FROM resource_classes"))
             if name in index and index[name] != rc_id]
    if not moved:
        return None
    return (f"standard resource class(es) {', '.join(sorted(moved))} stored under an id other "
            "than their os-resource-classes index: not a database upstream Placement wrote")
