"""A request spec read back as SQL text equals the one written through Core, on every
backend (JSON as text on SQLite and MySQL, decoded by the driver on PostgreSQL)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from stowage.compute import instances
from stowage.db import Database, schema
from stowage.errors import NotFound
from tests.conftest import BACKENDS
from tests.dbs import migrated_database

SPEC = {"flavor": {"id": "1", "vcpus": 2, "extra_specs": {"hw:cpu_policy": "dedicated"}},
        "num_instances": 1, "security_groups": ["default", "wébsg"], "scheduler_hints": {},
        "requested_destination": None, "ratio": 1.5, "is_volume_backed": False}


@pytest.fixture(params=BACKENDS)
def db(request: pytest.FixtureRequest) -> Iterator[Database]:
    with migrated_database(request.param) as url:
        made = Database(url)
        schema.upgrade(made)
        yield made
        made.dispose()


def test_the_spec_read_is_the_spec_written(db: Database) -> None:
    with db.write() as conn:
        instances.save_request_spec(conn, "u1", SPEC)
        instances.save_request_spec(conn, "u2", {**SPEC, "num_instances": 3})
    with db.read() as conn:
        assert instances.request_spec(conn, "u1") == SPEC
        assert instances.request_spec(conn, "u2")["num_instances"] == 3
        with pytest.raises(NotFound, match="RequestSpec for instance u3"):
            instances.request_spec(conn, "u3")
