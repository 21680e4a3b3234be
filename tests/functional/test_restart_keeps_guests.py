"""A restart of the service is not a reboot of its hypervisors: guests, and the guest a
resize set aside on its source, are still there afterwards.

    host1: vm (small) ── resize ──> host2: vm (large), host1 keeps the old guest aside
           stop stowage cleanly, start it again on the same database
           revert: vm runs on host1 again with the small flavor
"""

from __future__ import annotations

from pathlib import Path

import pytest

from stowage.db import Database
from tests.conftest import BACKENDS
from tests.dbs import migrated_database
from tests.functional.crashing import SMALL, running
from tests.functional.test_crash_recovery import World


@pytest.mark.parametrize("backend", BACKENDS)
def test_revert_after_a_clean_restart(backend: str, tmp_path: Path) -> None:
    with migrated_database(backend) as url:
        with running(url, tmp_path) as s:
            w = World(s)
            w.resized(s)
            source = s.migrations(w.server)[0]["source_compute"]
        with running(url, tmp_path) as s:
            assert s.action(w.server, {"revertResize": None}).status_code == 202
            view = s.wait_status(w.server, "ACTIVE")
            assert view["OS-EXT-SRV-ATTR:host"] == source
            assert view["flavor"]["original_name"] == "small"
            assert s.held(w.server) == {s.node(source): SMALL}
            assert s.migrations(w.server)[0]["status"] == "reverted"
            db = Database(url)
            try:
                assert s.audit(db) == []
            finally:
                db.dispose()


@pytest.mark.parametrize("backend", BACKENDS[:1])
def test_stop_start_after_a_clean_restart(backend: str, tmp_path: Path) -> None:
    """The restarted hosts know their guests and their power state."""
    with migrated_database(backend) as url:
        with running(url, tmp_path) as s:
            w = World(s)
            w.stopped(s)
        with running(url, tmp_path) as s:
            assert s.action(w.server, {"os-start": None}).status_code == 202
            s.wait_status(w.server, "ACTIVE")
