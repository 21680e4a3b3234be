"""`stowage manage cell list | discover-hosts`, and where `manage db upgrade` puts cell1."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from stowage.compute import cells, services
from stowage.db import Database, schema
from tests.conftest import BACKENDS
from tests.dbs import throwaway_database


def _stowage(*args: str, config: Path | None = None) -> subprocess.CompletedProcess[str]:
    flags = ["--config", str(config)] if config is not None else []
    return subprocess.run([sys.executable, "-m", "stowage", *flags, *args],
                          capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.parametrize("backend", BACKENDS)
def test_upgrade_makes_cell1_and_list_shows_it(backend: str) -> None:
    with throwaway_database(backend) as url:
        assert _stowage("manage", "db", "upgrade", "--database", url).returncode == 0
        result = _stowage("manage", "cell", "list", "--database", url)
        assert result.returncode == 0, result.stderr
        header, *rows = result.stdout.splitlines()
        assert header.split()[:4] == ["Name", "UUID", "Hosts", "Disabled"]
        for row, cell in zip(rows, ("cell0", "cell1"), strict=True):
            name, _uuid, hosts, disabled, where = row.split(maxsplit=4)
            assert (name, hosts, disabled) == (cell, "0", "False")
            # SQLite: files beside the API database's; the servers' databases: the API one.
            expected = (url.replace(".db", f"_{cell}.db") if backend == "sqlite"
                        else "(the API database)")
            assert where == expected


@pytest.mark.parametrize("backend", BACKENDS)
def test_create_and_delete_a_cell(backend: str) -> None:
    with throwaway_database(backend) as url, throwaway_database(backend) as cell_url:
        created = _stowage("manage", "cell", "create", "--name", "cell2", "--database",
                           cell_url, "--api-database", url)
        assert created.returncode == 0, created.stderr
        found = cells.Cells(Database(url))
        try:
            cell2 = found.by_name("cell2")
            assert str(cell2.uuid) == created.stdout.strip()
            assert schema.is_current(found.database(cell2))  # its schema made at head
            again = _stowage("manage", "cell", "create", "--name", "cell2", "--database",
                             cell_url, "--api-database", url)
            assert again.returncode == 1 and "already exists" in again.stderr
            with found.api.write() as conn:
                cells.map_host(conn, "node-z", cell2)
            refused = _stowage("manage", "cell", "delete", "--name", "cell2",
                               "--api-database", url)
            assert refused.returncode == 1 and "--force" in refused.stderr
            forced = _stowage("manage", "cell", "delete", "--name", "cell2", "--force",
                              "--api-database", url)
            assert forced.returncode == 0, forced.stderr
            assert [c.name for c in found.reload()] == ["cell0", "cell1"]
            assert found.of_host("node-z") is None
        finally:
            found.dispose()


@pytest.mark.parametrize("backend", BACKENDS)
def test_discover_hosts_maps_what_the_cell_knows_once(backend: str, tmp_path: Path) -> None:
    with throwaway_database(backend) as url, throwaway_database(backend) as cell_url:
        config = tmp_path / "stowage.toml"
        config.write_text(f'[compute]\ncell1_database = "{cell_url}"\n')
        assert _stowage("manage", "db", "upgrade", "--database", url,
                        config=config).returncode == 0
        found = cells.Cells(Database(url))
        try:
            with found.database(found.default()).write() as conn:
                for host in ("node-a", "node-b"):
                    services.ensure_service(conn, host, services.COMPUTE)
                services.ensure_service(conn, "ctl", services.CONDUCTOR)
            first = _stowage("manage", "cell", "discover-hosts", "--database", url,
                             config=config)
            assert first.returncode == 0, first.stderr
            assert first.stdout.splitlines() == ["node-a mapped to cell1",
                                                 "node-b mapped to cell1"]
            assert found.of_host("node-a") == found.default()
            assert found.of_host("ctl") is None  # only compute hosts are mapped
            again = _stowage("manage", "cell", "discover-hosts", "--verbose", "--database",
                             url, config=config)
            assert again.returncode == 0, again.stderr
            assert again.stdout.splitlines() == ["node-a already in cell1",
                                                 "node-b already in cell1"]
            assert "0 host(s) mapped" in again.stderr
        finally:
            found.dispose()
            found.api.dispose()
