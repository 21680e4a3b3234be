"""The schema `export` creates is the one `placement-manage db sync` of upstream
Placement 16.0.0 creates, on every backend: tables, column order and types,
nullability, defaults, primary and foreign keys, unique constraints, indexes,
and the Alembic revision. Upstream's code is only run (in its side venv),
never imported, so stowage's copy of the schema cannot drift unseen.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import sqlalchemy as sa

from stowage.db import Database, schema
from stowage.placement.adopt import export_database
from stowage.placement.adopt import upstream_schema as us
from tests.conftest import BACKENDS
from tests.dbs import throwaway_database
from tests.functional.upstream_placement import db_sync


def _described(url: str) -> dict[str, Any]:
    """Everything SQLAlchemy's inspector reports about each table."""
    engine = sa.create_engine(url)
    try:
        inspector = sa.inspect(engine)

        def listed(items: list[Any]) -> list[str]:
            return sorted(json.dumps(item, sort_keys=True, default=str) for item in items)

        with engine.connect() as conn:
            revision = list(conn.execute(sa.text("SELECT version_num FROM alembic_version")))
        return {"revision": [tuple(row) for row in revision], **{
            name: {"columns": [(c["name"], str(c["type"]), c["nullable"], str(c["default"]))
                               for c in inspector.get_columns(name)],
                   "primary key": inspector.get_pk_constraint(name),
                   "foreign keys": listed(inspector.get_foreign_keys(name)),
                   "indexes": listed(inspector.get_indexes(name)),
                   "unique": listed(inspector.get_unique_constraints(name))}
            for name in inspector.get_table_names()}}
    finally:
        engine.dispose()


@pytest.mark.parametrize("backend", BACKENDS)
def test_export_creates_upstream_schema(backend: str) -> None:
    with throwaway_database(backend) as upstream, throwaway_database(backend) as exported, \
            throwaway_database("sqlite") as stowage_url:
        db_sync(upstream)
        db = Database(stowage_url)
        schema.upgrade(db)
        export_database(db, exported)
        db.dispose()
        theirs, ours = _described(upstream), _described(exported)
        assert theirs["revision"] == [(us.HEAD,)]
        assert set(theirs) == {"revision", *us.metadata.tables}
        for name in theirs:
            assert ours[name] == theirs[name], name
