"""`stowage manage db upgrade` creates the schema on an empty database and is idempotent."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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


def _stowage(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "stowage", *args], capture_output=True,
                          text=True, timeout=120, check=False, cwd=cwd)


def test_reset_removes_the_sqlite_file_and_its_cell_files(tmp_path: Path) -> None:
    """Named in the banner, removed with the API file: a new serve starts from nothing."""
    assert _stowage("manage", "db", "upgrade", cwd=tmp_path).returncode == 0
    made = {p.name for p in tmp_path.iterdir()}
    assert {"stowage.db", "stowage_cell1.db", "stowage_cell0.db"} <= made

    refused = _stowage("manage", "db", "reset", cwd=tmp_path)
    assert refused.returncode == 2
    assert "Run it again with --yes" in refused.stderr and "stowage_cell1.db" in refused.stderr
    assert {p.name for p in tmp_path.iterdir()} == made  # nothing removed

    done = _stowage("manage", "db", "reset", "--yes", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert list(tmp_path.iterdir()) == []
    assert f"removed {tmp_path / 'stowage_cell1.db'}" in done.stdout


def test_reset_finds_the_cell_files_of_a_deleted_api_file(tmp_path: Path) -> None:
    """The user deleted stowage.db by hand: its default cell files still go, and a cell
    the mappings placed elsewhere goes while the API file is there."""
    url = f"sqlite:///{tmp_path / 'api.db'}"
    settings = tmp_path / "stowage.toml"
    settings.write_text(f'[compute]\ncell1_database = "sqlite:///{tmp_path / "c1.db"}"\n')
    assert _stowage("--config", str(settings), "manage", "db", "upgrade",
                    "--database", url).returncode == 0
    assert {p.name for p in tmp_path.iterdir()} >= {"api.db", "c1.db", "api_cell0.db"}
    assert _stowage("manage", "db", "reset", "--yes", "--database", url).returncode == 0
    assert [p.name for p in tmp_path.iterdir()] == ["stowage.toml"]

    assert _stowage("manage", "db", "upgrade", "--database", url).returncode == 0
    (tmp_path / "api.db").unlink()
    done = _stowage("manage", "db", "reset", "--yes", "--database", url)
    assert done.returncode == 0, done.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["stowage.toml"]


def test_reset_refuses_an_in_memory_database() -> None:
    done = _stowage("manage", "db", "reset", "--yes", "--database", "sqlite://")
    assert done.returncode == 2
    assert "in-memory database: nothing to reset" in done.stderr


@pytest.mark.parametrize("backend", [b for b in BACKENDS if b != "sqlite"])
def test_reset_drops_stowages_tables_and_only_those(backend: str) -> None:
    with throwaway_database(backend) as url:
        assert _stowage("manage", "db", "upgrade", "--database", url).returncode == 0
        engine = sa.create_engine(url)
        try:
            with engine.begin() as conn:
                conn.execute(sa.text("CREATE TABLE operators_notes (id INTEGER PRIMARY KEY)"))
            refused = _stowage("manage", "db", "reset", "--database", url)
            assert refused.returncode == 2 and "--yes" in refused.stderr
            with engine.connect() as conn:
                assert "allocations" in sa.inspect(conn).get_table_names()

            done = _stowage("manage", "db", "reset", "--yes", "--database", url)
            assert done.returncode == 0, done.stderr
            with engine.connect() as conn:
                assert sa.inspect(conn).get_table_names() == ["operators_notes"]
        finally:
            engine.dispose()
        # And it starts over: the schema is made again from nothing.
        assert _stowage("manage", "db", "upgrade", "--database", url).returncode == 0


def test_a_left_cell_file_stops_a_new_deployment_until_reset(tmp_path: Path) -> None:
    """stowage.db deleted by hand, stowage_cell1.db (with a host) left: serve and upgrade
    refuse to map it into the new deployment, naming it and the reset; after it they work."""
    from stowage.compute import services
    from stowage.db import Database

    assert _stowage("manage", "db", "upgrade", cwd=tmp_path).returncode == 0
    cell1 = Database(f"sqlite:///{tmp_path / 'stowage_cell1.db'}")
    try:
        with cell1.write() as conn:
            services.ensure_service(conn, "host1", services.COMPUTE)
    finally:
        cell1.dispose()
    (tmp_path / "stowage.db").unlink()

    for command in (["manage", "db", "upgrade"], ["serve", "--sim-hosts", "1"]):
        refused = _stowage(*command, cwd=tmp_path)
        assert refused.returncode != 0
        assert "stowage_cell1.db holds the servers or hosts of an earlier deployment" in \
            refused.stderr, refused.stderr
        assert "stowage manage db reset --yes" in refused.stderr
        assert not (tmp_path / "stowage.db").exists() or _no_cells(tmp_path / "stowage.db")

    assert _stowage("manage", "db", "reset", "--yes", cwd=tmp_path).returncode == 0
    done = _stowage("manage", "db", "upgrade", cwd=tmp_path)
    assert done.returncode == 0, done.stderr


def _no_cells(api_file: Path) -> bool:
    engine = sa.create_engine(f"sqlite:///{api_file}")
    try:
        with engine.connect() as conn:
            return conn.execute(sa.text("SELECT COUNT(*) FROM cell_mappings")).scalar() == 0
    finally:
        engine.dispose()
