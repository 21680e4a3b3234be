"""`stowage manage db upgrade` creates the schema on an empty database and is idempotent."""

from __future__ import annotations

import subprocess
import sys

import os_traits
import pytest
import sqlalchemy as sa

from tests.conftest import BACKENDS
from tests.dbs import throwaway_database


@pytest.mark.parametrize("backend", BACKENDS)
def test_upgrade_creates_schema_and_standard_names(backend: str) -> None:
    with throwaway_database(backend) as url:
        for _ in range(2):  # the second run must be a no-op, not an error
            result = subprocess.run(
                [sys.executable, "-m", "stowage", "manage", "db", "upgrade", "--database", url],
                capture_output=True, text=True, timeout=120, check=False)
            assert result.returncode == 0, result.stderr
            assert "schema is at head" in result.stderr
        engine = sa.create_engine(url)
        try:
            with engine.connect() as conn:
                tables = set(sa.inspect(conn).get_table_names())
                traits = conn.execute(sa.text("SELECT COUNT(*) FROM traits")).scalar()
                version = conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalar()
        finally:
            engine.dispose()
        assert {"resource_providers", "allocations", "resource_provider_changes"} <= tables
        assert traits == len(os_traits.get_traits())
        assert version is not None


def test_unreadable_config_is_a_clear_error(tmp_path: object) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "stowage", "--config", "/nonexistent/stowage.toml",
         "manage", "db", "upgrade"], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode != 0
    assert "cannot read settings" in result.stderr
