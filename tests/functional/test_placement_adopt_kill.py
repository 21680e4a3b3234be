"""kill -9 in the middle of `manage placement import` and `export`: nothing half-copied.

The import copies every table in one transaction of the target database, so
a process killed at any table leaves the target without Placement data, and
the same command run again is the restart (docs/placement-import.md). The
export does the same into an empty upstream-schema database where DDL is
transactional (SQLite, PostgreSQL). The source is an upstream-schema
database of 20,000 providers written by bench/placement_import.py's builder
(about 190,000 rows), large enough that the copy is still running when the
progress output names its second table.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from stowage.db import Database
from stowage.placement.adopt import upstream_schema as us
from tests.conftest import BACKENDS
from tests.dbs import throwaway_database

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
import placement_import  # noqa: E402  -- bench/'s builder of an upstream database

PROVIDERS = 20_000
COUNTED = ("resource_providers", "inventories", "allocations", "consumers")


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('upstream') / 'placement.db'}"
    placement_import.build(url, PROVIDERS)
    return url


def _counts(url: str) -> dict[str, int]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            present = set(sa.inspect(conn).get_table_names())
            return {name: conn.execute(sa.text(f"SELECT count(*) FROM {name}")).scalar_one()
                    if name in present else 0 for name in COUNTED}
    finally:
        engine.dispose()


def _manage(*argv: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    return subprocess.Popen([sys.executable, "-m", "stowage", "manage", "placement", *argv],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                            env=env)


def _kill_at_second_table(process: subprocess.Popen[str]) -> None:
    """SIGKILL once the progress output has named two tables (the copy is under way)."""
    assert process.stderr is not None
    tables: set[str] = set()
    for line in process.stderr:
        if ": " in line and " rows" in line:
            tables.add(line.split(": ")[1])
        if len(tables) >= 2:
            break
    assert process.poll() is None, "the copy ended before it could be killed"
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)


@pytest.fixture(params=BACKENDS)
def target(request: pytest.FixtureRequest) -> Iterator[str]:
    with throwaway_database(request.param) as url:
        yield url


def test_a_killed_import_leaves_no_placement_data_and_runs_again(source: str,
                                                                  target: str) -> None:
    _kill_at_second_table(_manage("import", "--from", source, "--database", target))
    assert _counts(target) == dict.fromkeys(COUNTED, 0)
    again = _manage("import", "--from", source, "--database", target)
    _, err = again.communicate(timeout=600)
    assert again.returncode == 0, err
    assert _counts(target) == _counts(source)
    Database(target).engine.dispose()


@pytest.mark.parametrize("backend", [b for b in BACKENDS if b != "mysql"])
def test_a_killed_export_leaves_an_empty_database(source: str, backend: str,
                                                  tmp_path: Path) -> None:
    stowage = f"sqlite:///{tmp_path / 'stowage.db'}"
    done = _manage("import", "--from", source, "--database", stowage)
    assert done.wait(timeout=600) == 0
    with throwaway_database(backend) as url:
        _kill_at_second_table(_manage("export", "--to", url, "--database", stowage))
        engine = sa.create_engine(url)
        with engine.connect() as conn:
            assert set(sa.inspect(conn).get_table_names()) & set(us.metadata.tables) == set()
        engine.dispose()
        again = _manage("export", "--to", url, "--database", stowage)
        _, err = again.communicate(timeout=600)
        assert again.returncode == 0, err
        assert _counts(url) == _counts(source)
