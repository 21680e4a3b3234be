"""`stowage manage cell list | discover-hosts`, and where `manage db upgrade` puts cell1."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from stowage.compute import cells, services
from stowage.db import Database
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
        header, row = result.stdout.splitlines()
        assert header.split()[:4] == ["Name", "UUID", "Hosts", "Disabled"]
        name, _uuid, hosts, disabled, where = row.split(maxsplit=4)
        assert (name, hosts, disabled) == ("cell1", "0", "False")
        # SQLite: a file beside the API database's; the servers' databases: the API one.
        expected = (url.replace(".db", "_cell1.db") if backend == "sqlite"
                    else "(the API database)")
        assert where == expected


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
