"""A drain cut off by kill -9 -- of the drain command, or of `stowage serve` -- run again, finishes.

    host1 (drained): s1, s2, s3 ACTIVE, s4 SHUTOFF      host2, host3 (empty)

Every server ends off host1 with exactly one migration of its own (nothing is
moved twice), and the audit is clean. The command runs as its own process,
as an operator runs it.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from stowage.db import Database, schema
from tests.conftest import BACKENDS
from tests.dbs import migrated_database
from tests.functional.conftest import Cloud
from tests.functional.crashing import Stowage, running
from tests.functional.servers import (
    action,
    assert_invariants,
    boot,
    flavor,
    host_of,
    image,
    migrations_of,
)


def _command(base: str, tmp_path: Path) -> list[str]:
    return [sys.executable, "-m", "stowage", "manage", "host", "drain", "host1", "--url",
            f"{base}/compute", "--max-parallel", "1", "--database",
            f"sqlite:///{tmp_path / 'unused.db'}"]


def test_the_drain_command_killed_mid_drain_resumes(cloud: Cloud, tmp_path: Path) -> None:
    cloud.configure(sim_live_migration_seconds=1.0)
    cloud.add_host("host1", vcpus=16, memory_mb=16384, disk_gb=200)
    small = flavor(cloud, "small", 1, 512, 5)
    img = image(cloud)
    ids = [boot(cloud, f"s{i}", small, img) for i in range(1, 5)]
    action(cloud, ids[3], {"os-stop": None})
    for name in ("host2", "host3"):
        cloud.add_host(name, vcpus=8, memory_mb=8192, disk_gb=80)
    first = subprocess.Popen(_command(cloud.live.url, tmp_path), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while all(host_of(cloud, i) == "host1" for i in ids):
            assert time.monotonic() < deadline and first.poll() is None, first.stderr
            time.sleep(0.05)
    finally:
        first.send_signal(signal.SIGKILL)
        first.communicate(timeout=30)
    assert any(host_of(cloud, i) == "host1" for i in ids), "killed too late to test a resume"
    again = subprocess.run(_command(cloud.live.url, tmp_path), capture_output=True, text=True,
                           timeout=300, check=False)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "Totals: moved" in again.stdout
    for server_id in ids:
        assert host_of(cloud, server_id) != "host1"
        assert len(migrations_of(cloud, server_id)) == 1, "a server was moved twice"
    assert_invariants(cloud)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_serve_killed_mid_drain_resumes_after_its_restart(backend: str,
                                                            tmp_path: Path) -> None:
    with migrated_database(backend) as url:
        db = Database(url)
        schema.upgrade(db)
        try:
            s = Stowage(url, tmp_path, crash_at="live_migrate:live_migration:executing",
                        sim_hosts=3)
            try:
                ids = _on_host1(s)
                cut = subprocess.run(_command(s.base, tmp_path), capture_output=True,
                                     text=True, timeout=300, check=False)
                assert s.crashed(), "the serve process never reached the crash point"
                assert cut.returncode == 1, cut.stdout + cut.stderr
            finally:
                s.stop()
            with running(url, tmp_path, sim_hosts=3) as s:
                for server_id in ids:
                    s.wait_settled(server_id)
                done = subprocess.run(_command(s.base, tmp_path), capture_output=True,
                                      text=True, timeout=300, check=False)
                assert done.returncode == 0, done.stdout + done.stderr
                for server_id in ids:
                    view = s.server(server_id)
                    assert view is not None and view["OS-EXT-SRV-ATTR:host"] != "host1"
                    completed = [m for m in s.migrations(server_id)
                                 if m["status"] in ("completed", "confirmed")]
                    assert len(completed) == 1, s.migrations(server_id)
                assert s.audit(db) == []
        finally:
            db.dispose()


def _on_host1(s: Stowage) -> list[str]:
    """Three servers on host1 (host2 and host3 disabled meanwhile)."""
    services = s.compute.get("/os-services", params={"binary": "nova-compute"}).json()
    others = [x["id"] for x in services["services"] if x["host"] != "host1"]
    for sid in others:
        assert s.compute.put(f"/os-services/{sid}", json={"status": "disabled"}).status_code == 200
    small, _ = s.flavors()
    img = s.image()
    ids = []
    for _ in range(3):
        resp = s.boot_request(small, img)
        assert resp.status_code == 202, resp.text
        ids.append(str(resp.json()["server"]["id"]))
    for server_id in ids:
        s.wait_status(server_id, "ACTIVE")
    for sid in others:
        assert s.compute.put(f"/os-services/{sid}", json={"status": "enabled"}).status_code == 200
    return ids
