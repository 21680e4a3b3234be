"""A `stowage serve` subprocess that a test can crash, restart and inspect.

    test ──HTTP──> python3 -m stowage serve --sim-hosts 2 --database URL [--config crash.toml]
                        host1, host2 (simulated; their guests persist in the database)

`crash_at` arms the conductor's journal hook (`[compute] crash_at`): the
process ends with os._exit at that journal point, as kill -9 would. The
database outlives the process, so a restart without the hook recovers: its
conductor takes the dead one's operations over at once, because their
owner's process (or, for an operation no conductor started yet, the process
that accepted it) is gone from this machine: no lease has to expire.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from stowage.compute import migrations as compute_migrations
from stowage.compute.audit import audit
from stowage.compute.cells import Cells
from stowage.db import Database
from stowage.placement.client import PlacementClient
from tests.functional.conftest import free_port
from tests.functional.servers import image_at

TRANSIENT = {"BUILD", "RESIZE", "REVERT_RESIZE"}
SMALL = {"VCPU": 1, "MEMORY_MB": 512, "DISK_GB": 5}
LARGE = {"VCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 10}



@contextmanager
def cell_database(db: Database) -> Iterator[Database]:
    """The database of the deployment's cell1 (`db` itself, or a file beside a SQLite
    `db`: docs/cells.md), once the service has started on `db`: where the servers,
    their guests and the journal are. Closed at the end of the block."""
    cells = Cells(db)
    try:
        yield cells.database(cells.default())
    finally:
        cells.dispose()

class Stowage:
    """One run of the service on `url`; `crash_at` = "operation:step:state" or ""."""

    def __init__(self, url: str, workdir: Path, crash_at: str = "", wait: bool = True,
                 options: str = "", sim_hosts: int = 2) -> None:
        """`options`: more `[compute]` lines for this run (e.g. "shelved_offload_time = -1")."""
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        config = workdir / f"stowage-{self.port}.toml"
        # Image data (snapshots, shelved images) in the test's directory, whatever the backend.
        config.write_text(f'[image]\nstore_dir = "{workdir / "images"}"\n'
                          f'[compute]\ncrash_at = "{crash_at}"\nupdate_resources_interval = 3600\n'
                          + options, encoding="utf-8")
        self.log = workdir / f"stowage-{self.port}.log"
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "stowage", "serve", "--sim-hosts", str(sim_hosts),
                 "--database", url,
                 "--config", str(config), "--bind", f"127.0.0.1:{self.port}",
                 "--log-level", "warning"],
                stdout=out, stderr=subprocess.STDOUT, env={**os.environ})
        self.compute = httpx.Client(base_url=f"{self.base}/compute/v2.1", timeout=30, headers={
            "x-auth-token": "admin", "openstack-api-version": "compute latest"})
        self.placement = httpx.Client(base_url=f"{self.base}/placement", timeout=30, headers={
            "x-auth-token": "admin", "openstack-api-version": "placement latest"})
        if wait:
            self._wait_up()

    def _wait_up(self) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"stowage exited at start:\n{self.log.read_text()[-3000:]}")
            try:
                if self.compute.get("/flavors").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        raise AssertionError("stowage did not start within 60 s")

    def crashed(self, timeout: float = 60) -> bool:
        """Wait for the process to end by itself; True when it did (the hook fired)."""
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
        return True

    def stop(self) -> None:
        self.compute.close()
        self.placement.close()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

    # --- what a user sees ------------------------------------------------------
    def server(self, server_id: str) -> dict[str, Any] | None:
        resp = self.compute.get(f"/servers/{server_id}")
        if resp.status_code == 404:
            return None
        assert resp.status_code == 200, resp.text
        return dict(resp.json()["server"])

    def wait_settled(self, server_id: str, timeout: float = 60) -> dict[str, Any] | None:
        """Poll until the server is in no transient state (or gone); returns its view."""
        deadline = time.monotonic() + timeout
        while True:
            view = self.server(server_id)
            if view is None or (view["status"] not in TRANSIENT
                                and view["OS-EXT-STS:task_state"] is None):
                return view
            assert time.monotonic() < deadline, f"still {view['status']}/" \
                f"{view['OS-EXT-STS:task_state']} after {timeout} s"
            time.sleep(0.05)

    def wait_status(self, server_id: str, status: str) -> dict[str, Any]:
        view = self.wait_settled(server_id)
        assert view is not None and view["status"] == status, view
        return view

    def held(self, consumer: str) -> dict[str, dict[str, int]]:
        data = self.placement.get(f"/allocations/{consumer}").json()["allocations"]
        return {rp: dict(a["resources"]) for rp, a in data.items()}

    def node(self, host: str) -> str:
        found = self.placement.get("/resource_providers", params={"name": host}).json()
        return str(found["resource_providers"][0]["uuid"])

    def migrations(self, server_id: str) -> list[dict[str, Any]]:
        resp = self.compute.get("/os-migrations", params={"instance_uuid": server_id})
        assert resp.status_code == 200, resp.text
        return list(resp.json()["migrations"])

    def stored_migrations(self, db: Database, server_id: str) -> list[str]:
        """The uuids of the server's migration records in cell1, soft-deleted ones too:
        the API lists none of a deleted server's (Nova's read_deleted="no")."""
        with cell_database(db) as cell, cell.read() as conn:
            return [m.uuid for m in compute_migrations.for_instance(conn, server_id)]

    def audit(self, db: Database) -> list[str]:
        """The accounting audit over the API database `db` and its cell's."""
        client = PlacementClient.over_http(f"{self.base}/placement")
        try:
            with cell_database(db) as cell:
                return audit(cell, client)
        finally:
            client.close()

    # --- what an operator or user does -------------------------------------------
    def flavors(self) -> tuple[str, str]:
        ids = []
        for name, res in (("small", SMALL), ("large", LARGE)):
            resp = self.compute.post("/flavors", json={"flavor": {
                "name": name, "vcpus": res["VCPU"], "ram": res["MEMORY_MB"],
                "disk": res["DISK_GB"]}})
            assert resp.status_code == 200, resp.text
            ids.append(str(resp.json()["flavor"]["id"]))
        return ids[0], ids[1]

    def image(self) -> str:
        return image_at(self.base)

    def boot_request(self, flavor_id: str, image_id: str) -> httpx.Response:
        return self.compute.post("/servers", json={"server": {
            "name": "vm", "flavorRef": flavor_id, "imageRef": image_id, "networks": "none"}})

    def action(self, server_id: str, body: dict[str, Any]) -> httpx.Response:
        return self.compute.post(f"/servers/{server_id}/action", json=body)


@contextmanager
def running(url: str, workdir: Path, crash_at: str = "", options: str = "",
            sim_hosts: int = 2) -> Iterator[Stowage]:
    stowage = Stowage(url, workdir, crash_at, options=options, sim_hosts=sim_hosts)
    try:
        yield stowage
    finally:
        stowage.stop()
