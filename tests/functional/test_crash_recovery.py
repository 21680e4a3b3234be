"""kill -9 at every journal step of every operation, restart, and find it finished or undone.

    test ──HTTP──> stowage serve (crash_at = "op:step:state")  ──exits like kill -9──┐
                   stowage serve (same database, no hook)  <── restart ────────────┘
                     host1, host2 simulated; their guests persist in the database

For each operation (build, resize, migrate, confirm, revert, stop, start,
delete, evacuate, reboot, pause, unpause, suspend, resume, rebuild, soft
delete, restore) and each point its journal records (`accepted`, then every step
`executing` and `done`; the list comes from the operation modules, so a new
step is covered without touching this file), the service is crashed there,
started again, and then:

* the server leaves every transient state by itself;
* it ends where its operation says: forward for build, confirm, revert,
  stop, start, delete and evacuate (its source forced down, the agent
  running), and for the guest actions, rebuild, soft delete and restore;
  back on the source (or VERIFY_RESIZE if the move had got there) for
  resize and migrate; forward for shelve, shelveOffload and
  unshelve (SHELVED_OFFLOADED holding nothing with its snapshot image kept,
  or ACTIVE with the image gone);
* what each consumer holds is exactly what that state needs (instance vs
  migration, per provider), and the audit finds nothing;
* the hypervisors hold exactly the guests that state needs (ERROR would be
  allowed only where the guest is really gone, and never happens here).

By default SQLite runs three points of each operation: `accepted`, a step
in the middle, the last step's `done` (two for the operations that run the
steps of another: migrate runs resize's); PostgreSQL and MySQL run one point
in the middle of the operations that hand allocations between consumers.
STOWAGE_CRASH_FULL=1 runs every point (each step's `executing` and `done`) on
every backend. Each point starts the service twice: about 5 s of CPU per point.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from stowage.compute import tables as t
from stowage.compute.conductor import (
    build,
    evacuate,
    guest_actions,
    lifecycle,
    live_migrate,
    migrate,
    power_update,
    rebuild,
    resize_end,
)
from stowage.compute.conductor import shelve as shelving
from stowage.compute.conductor import snapshot as snapshots
from stowage.compute.conductor import unshelve as unshelving
from stowage.compute.conductor.manager import RECOVERY
from stowage.db import Database, schema
from tests.conftest import BACKENDS
from tests.dbs import migrated_database
from tests.functional.crashing import LARGE, SMALL, Stowage, cell_database, running

OPERATIONS: dict[str, tuple[str, ...]] = {
    "build": build.STEPS, "resize": migrate.STEPS, "migrate": migrate.STEPS,
    **resize_end.STEPS, **lifecycle.STEPS, "evacuate": evacuate.STEPS,
    # shelve offloads at once (shelved_offload_time 0); the others run with -1 (_OPTIONS)
    "shelve": shelving.SHELVE_STEPS + shelving.OFFLOAD_STEPS,
    "shelve_offload": shelving.OFFLOAD_STEPS, "unshelve": unshelving.STEPS,
    "unshelve_power_on": unshelving.POWER_ON_STEPS,
    "live_migrate": live_migrate.STEPS,
    **guest_actions.STEPS,
    "rebuild": rebuild.STEPS,
    **power_update.STEPS,
    "snapshot": snapshots.STEPS,
}
FULL = os.environ.get("STOWAGE_CRASH_FULL") == "1"
# Operations that run the very steps of another one: a sample of their points by default.
_SAME_STEPS_AS = {"migrate": "resize", "shelve_offload": "shelve",
                  **{op: "reboot" for op in guest_actions.STEPS if op != "reboot"}}
# The operations that hand allocations between consumers: sampled on PostgreSQL and MySQL.
_SAMPLED_ELSEWHERE = ("resize", "confirm_resize", "revert_resize", "delete", "evacuate",
                      "shelve", "unshelve", "live_migrate")
# More `[compute]` settings of an operation's runs: a server that stays SHELVED on its host.
_OPTIONS = {op: "shelved_offload_time = -1\n" for op in ("shelve_offload", "unshelve_power_on")}
_OPTIONS.update({op: "reclaim_instance_interval = 3600\n" for op in ("soft_delete", "restore")})


def _points(operation: str, full: bool) -> list[str]:
    """`accepted`, each step `executing`, the last step `done`; with `full`, every `done`.

    A step's `done` and the next step's `executing` are consecutive journal
    writes with no work between them, so the default leaves out the former.
    """
    steps = OPERATIONS[operation]
    states = {step: ("executing", "done") if full or step == steps[-1] else ("executing",)
              for step in steps}
    return [f"{operation}:accepted:done"] + [f"{operation}:{step}:{state}" for step in steps
                                             for state in states[step]]


def _cases() -> list[Any]:
    cases = []
    for backend in BACKENDS:
        for operation in OPERATIONS:
            points = _points(operation, FULL)
            if not FULL and operation in _SAME_STEPS_AS:
                points = [points[0], points[len(points) // 2]]
            elif not FULL and len(points) > 3:
                # accepted, one step in the middle, the last done
                points = [points[0], points[len(points) // 2], points[-1]]
            if not FULL and backend != "sqlite":
                points = [points[len(points) // 2]] if operation in _SAMPLED_ELSEWHERE else []
            cases += [pytest.param(backend, point, id=f"{backend}-{point}") for point in points]
    return cases


def test_every_operation_has_a_recovery() -> None:
    # attach/detach_interface need ports: test_ports_interfaces_crash.py crashes them;
    # a cross-cell resize's target part needs two cells: test_cells_crash.py
    assert set(OPERATIONS) | {"attach_interface", "detach_interface",
                              "cross_cell_resize"} == set(RECOVERY)


# --- scenarios: get to the operation, then ask for it ------------------------------------
class World:
    """Flavor and image ids, and the server the operation is about."""

    def __init__(self, s: Stowage) -> None:
        self.small, self.large = s.flavors()
        self.image = s.image()
        self.server = ""

    def boot(self, s: Stowage) -> None:
        resp = s.boot_request(self.small, self.image)
        assert resp.status_code == 202, resp.text
        self.server = str(resp.json()["server"]["id"])
        s.wait_status(self.server, "ACTIVE")

    def resized(self, s: Stowage) -> None:
        self.boot(s)
        assert s.action(self.server, {"resize": {"flavorRef": self.large}}).status_code == 202
        s.wait_status(self.server, "VERIFY_RESIZE")

    def source_down(self, s: Stowage) -> None:
        """Booted, then its host forced down (the agent runs on: forced down is enough)."""
        self.boot(s)
        host = s.compute.get(f"/servers/{self.server}").json()["server"]["OS-EXT-SRV-ATTR:host"]
        [service] = [v for v in s.compute.get("/os-services").json()["services"]
                     if v["host"] == host and v["binary"] == "nova-compute"]
        resp = s.compute.put(f"/os-services/{service['id']}", json={"forced_down": True})
        assert resp.status_code == 200, resp.text

    def shelved(self, s: Stowage) -> None:
        """SHELVED on its host, or SHELVED_OFFLOADED when the run offloads at once."""
        self.boot(s)
        assert s.action(self.server, {"shelve": None}).status_code == 202
        view = s.wait_settled(self.server)
        assert view is not None and view["status"] in ("SHELVED", "SHELVED_OFFLOADED"), view

    def paused(self, s: Stowage) -> None:
        self.boot(s)
        assert s.action(self.server, {"pause": None}).status_code == 202
        s.wait_status(self.server, "PAUSED")

    def suspended(self, s: Stowage) -> None:
        self.boot(s)
        assert s.action(self.server, {"suspend": None}).status_code == 202
        s.wait_status(self.server, "SUSPENDED")

    def soft_deleted(self, s: Stowage) -> None:
        self.boot(s)
        assert s.compute.delete(f"/servers/{self.server}").status_code == 204
        s.wait_status(self.server, "SOFT_DELETED")

    def rescued(self, s: Stowage) -> None:
        self.boot(s)
        assert s.action(self.server, {"rescue": None}).status_code == 200
        s.wait_status(self.server, "RESCUE")

    def stopped(self, s: Stowage) -> None:
        self.boot(s)
        assert s.action(self.server, {"os-stop": None}).status_code == 202
        s.wait_status(self.server, "SHUTOFF")


def _ask(s: Stowage, w: World, operation: str) -> None:
    """Send the request; the process may die before it answers."""
    try:
        if operation == "build":
            resp = s.boot_request(w.small, w.image)
            w.server = str(resp.json()["server"]["id"])
        elif operation in ("delete", "soft_delete"):
            s.compute.delete(f"/servers/{w.server}")
        elif operation == "power_update":  # a bare-metal node powered off outside Compute
            s.compute.post("/os-server-external-events", json={"events": [
                {"name": "power-update", "server_uuid": w.server, "tag": "POWER_OFF"}]})
        else:
            s.action(w.server, _BODIES[operation](w))
    except Exception:  # noqa: BLE001 - the crash may cut the answer off
        pass


_BODIES: dict[str, Callable[[World], dict[str, Any]]] = {
    "resize": lambda w: {"resize": {"flavorRef": w.large}},
    "migrate": lambda w: {"migrate": None},
    "confirm_resize": lambda w: {"confirmResize": None},
    "revert_resize": lambda w: {"revertResize": None},
    "stop": lambda w: {"os-stop": None},
    "start": lambda w: {"os-start": None},
    "evacuate": lambda w: {"evacuate": {}},
    "shelve": lambda w: {"shelve": None},
    "shelve_offload": lambda w: {"shelveOffload": None},
    "unshelve": lambda w: {"unshelve": None},
    "unshelve_power_on": lambda w: {"unshelve": None},
    "live_migrate": lambda w: {"os-migrateLive": {"host": None, "block_migration": "auto"}},
    "reboot": lambda w: {"reboot": {"type": "SOFT"}},
    "reboot_hard": lambda w: {"reboot": {"type": "HARD"}},
    "rebuild": lambda w: {"rebuild": {"imageRef": w.image}},
    "restore": lambda w: {"restore": None},
    "rescue": lambda w: {"rescue": None},
    "unrescue": lambda w: {"unrescue": None},
    "snapshot": lambda w: {"createImage": {"name": "crash-snap"}},
    "backup": lambda w: {"createBackup": {"name": "crash-snap", "backup_type": "daily",
                                          "rotation": 1}},
    **{op: (lambda o: lambda w: {o: None})(op)
       for op in ("pause", "unpause", "suspend", "resume")},
}
# The World method that brings the server to where each operation starts, by name, so
# that a subclass (PortWorld) gets its own boot.
_SETUP: dict[str, str | None] = {
    "build": None, "resize": "boot", "migrate": "boot",
    "confirm_resize": "resized", "revert_resize": "resized",
    "stop": "boot", "start": "stopped", "delete": "resized",
    "evacuate": "source_down",
    "shelve": "boot", "shelve_offload": "shelved", "unshelve": "shelved",
    "unshelve_power_on": "shelved",
    "live_migrate": "boot",
    "reboot": "boot", "reboot_hard": "stopped", "pause": "boot", "unpause": "paused",
    "suspend": "boot", "resume": "suspended", "rebuild": "boot",
    "soft_delete": "boot", "restore": "soft_deleted", "power_update": "boot",
    "rescue": "boot", "unrescue": "rescued", "snapshot": "boot",
    "backup": "boot",
}


def _set_up(w: World, s: Stowage, operation: str) -> None:
    method = _SETUP[operation]
    if method is not None:
        getattr(w, method)(s)


# --- what must hold after the restart ----------------------------------------------------
def _guests(db: Database, server: str) -> dict[tuple[str, str], int]:
    g = t.simulated_guests
    with cell_database(db) as cell, cell.read() as conn:
        rows = conn.execute(sa.select(g.c.host, g.c.migration_uuid, g.c.power_state)
                            .where(g.c.instance_uuid == server)).all()
    return {(r.host, r.migration_uuid): r.power_state for r in rows}


def _expected_status(operation: str, point: str, view: dict[str, Any] | None) -> set[str | None]:
    if operation in ("resize", "migrate"):
        return {"VERIFY_RESIZE"} if point.endswith("finish_resize:done") else {"ACTIVE"}
    return {"delete": {None}, "stop": {"SHUTOFF"}, "power_update": {"SHUTOFF"},
            "shelve": {"SHELVED_OFFLOADED"},
            "shelve_offload": {"SHELVED_OFFLOADED"}, "pause": {"PAUSED"},
            "suspend": {"SUSPENDED"}, "soft_delete": {"SOFT_DELETED"},
            "rescue": {"RESCUE"}}.get(operation,
                                                                           {"ACTIVE"})


def _check(s: Stowage, db: Database, w: World, operation: str, point: str) -> None:
    if not w.server:  # the build's answer was lost: find the server
        listed = s.compute.get("/servers").json()["servers"]
        assert len(listed) == 1, listed
        w.server = str(listed[0]["id"])
    view = s.wait_settled(w.server)
    status = None if view is None else view["status"]
    assert status in _expected_status(operation, point, view), view
    moves = s.migrations(w.server)
    guests = _guests(db, w.server)
    if operation == "live_migrate":  # forward once the copy is journaled done, else back
        [move] = moves
        step, state = point.split(":")[1:]
        moved = step in live_migrate.STEPS[4:] or (step, state) == ("live_migration", "done")
        assert (move["status"], view and view["OS-EXT-SRV-ATTR:host"]) == (
            ("completed", move["dest_compute"]) if moved else ("error", move["source_compute"]))
    if operation.startswith(("shelve", "unshelve")):
        # Forward, always; the snapshot stays while shelved and goes once unshelved.
        assert len(_images(s, "vm-shelved")) == (1 if status == "SHELVED_OFFLOADED" else 0)
    if operation in ("snapshot", "backup"):  # forward with its data, or failed and gone
        assert [i["status"] for i in _images(s, "crash-snap")] in ([], ["active"])
        assert view is not None and view["OS-EXT-STS:task_state"] is None
    if view is None:
        assert s.held(w.server) == {} and guests == {}
        assert moves == []  # a deleted server's migrations are hidden, as in Nova
        assert all(s.held(m) == {} for m in s.stored_migrations(db, w.server))
    elif status == "SHELVED_OFFLOADED":
        assert view["OS-EXT-SRV-ATTR:host"] is None
        assert s.held(w.server) == {} and guests == {}
    elif operation == "evacuate":
        # Forward, always: the source's agent destroyed its guest when it started again.
        [move] = moves
        dest, source = view["OS-EXT-SRV-ATTR:host"], move["source_compute"]
        assert (status, move["migration_type"]) == ("ACTIVE", "evacuation") and dest != source
        assert s.held(w.server) == {s.node(dest): SMALL}
        # `done` holds the source until its agent starts again, then `completed` nothing.
        assert (move["status"], s.held(move["uuid"])) in (
            ("done", {s.node(source): SMALL}), ("completed", {}))
        assert guests == {(dest, ""): 1}
    elif status == "VERIFY_RESIZE":
        [move] = [m for m in moves if m["status"] == "finished"]
        dest, source = view["OS-EXT-SRV-ATTR:host"], move["source_compute"]
        # A cold migration keeps the flavor; a resize holds the new one on the destination.
        assert s.held(w.server) == {s.node(dest): SMALL if operation == "migrate" else LARGE}
        assert s.held(move["uuid"]) == {s.node(source): SMALL}
        assert guests == {(dest, ""): 1, (source, move["uuid"]): 4}
    else:
        host = view["OS-EXT-SRV-ATTR:host"]
        want = LARGE if view["flavor"]["original_name"] == "large" else SMALL
        assert s.held(w.server) == {s.node(host): want}
        assert all(s.held(m["uuid"]) == {} for m in moves)
        power = {"SHUTOFF": 4, "PAUSED": 3, "SUSPENDED": 7, "SOFT_DELETED": 4}.get(str(status),
                                                                                  1)
        rescue_disk = {(host, "rescue"): 4} if status == "RESCUE" else {}
        assert guests == {(host, ""): power, **rescue_disk}
        if operation == "revert_resize" or (operation in ("resize", "migrate")):
            assert want == SMALL
        if operation == "confirm_resize":
            assert want == LARGE
    assert s.audit(db) == []


def _images(s: Stowage, name: str) -> list[dict[str, Any]]:
    resp = s.compute.get(f"{s.base}/image/v2/images", params={"name": name})
    assert resp.status_code == 200, resp.text
    return list(resp.json()["images"])


def _crash_and_recover(backend: str, tmp_path: Path, point: str,
                       again: str = "", scenario: str | None = None) -> None:
    """`scenario` names the request when it is not the journal's operation (backup)."""
    operation = scenario or point.split(":")[0]
    with migrated_database(backend) as url:
        db = Database(url)
        schema.upgrade(db)
        try:
            options = _OPTIONS.get(operation, "")
            s = Stowage(url, tmp_path, crash_at=point, options=options)
            try:
                w = World(s)
                _set_up(w, s, operation)
                _ask(s, w, operation)
                assert s.crashed(), f"the journal never reached {point}"
            finally:
                s.stop()
            if again:  # a crash during recovery too
                s = Stowage(url, tmp_path, crash_at=again, wait=False, options=options)
                try:
                    assert s.crashed(), f"recovery never reached {again}"
                finally:
                    s.stop()
            with running(url, tmp_path, options=options) as s:
                _check(s, db, w, operation, point)
        finally:
            db.dispose()


@pytest.mark.parametrize(("backend", "point"), _cases())
def test_a_crash_at_every_journal_point_is_recovered(backend: str, point: str,
                                                     tmp_path: Path) -> None:
    _crash_and_recover(backend, tmp_path, point)


@pytest.mark.parametrize("point", ["snapshot:accepted:done", "snapshot:snapshot:executing",
                                   "snapshot:snapshot:done"])
def test_a_crashed_backup_is_recovered(point: str, tmp_path: Path) -> None:
    """createBackup journals as a snapshot (its backup type and rotation in the args)."""
    _crash_and_recover(BACKENDS[0], tmp_path, point, scenario="backup")


@pytest.mark.parametrize(("point", "again"), [
    ("revert_resize:finish_revert_resize:executing", "revert_resize:finish_revert_resize:done"),
    ("resize:resize_instance:done", "resize:claim_destination:rolled_back"),
    ("confirm_resize:confirm_on_source:executing", "confirm_resize:settle:executing"),
    ("build:spawn:executing", "build:spawn:executing"),
    ("delete:terminate:executing", "delete:drop_allocation:done"),
    ("live_migrate:live_migration:executing", "live_migrate:claim_destination:rolled_back"),
    ("live_migrate:post_live_migration:executing", "live_migrate:post_live_migration:executing"),
    ("evacuate:rebuild_instance:executing", "evacuate:rebuild_instance:executing"),
    ("shelve:shelve_offload:executing", "shelve:drop_allocation:executing"),
    ("unshelve:spawn:executing", "unshelve:spawn:executing"),
])
def test_a_crash_during_recovery_is_recovered_too(point: str, again: str,
                                                  tmp_path: Path) -> None:
    _crash_and_recover(BACKENDS[0], tmp_path, point, again)


# --- a server with a QoS port: the bindings are done again ------------------------------
_PORT_OPTIONS = "sim_network_devices = true\n"  # every host: br-physnet0 on physnet0
_PORT_QOS = {"NET_BW_EGR_KILOBIT_PER_SEC": 1000, "NET_BW_IGR_KILOBIT_PER_SEC": 2000}


class PortWorld(World):
    """A server booted with a port asking 1000/2000 kbps on physnet0."""

    def __init__(self, s: Stowage) -> None:
        super().__init__(s)
        self.port = ""

    def boot(self, s: Stowage) -> None:
        with httpx.Client(base_url=f"{s.base}/network/v2.0", timeout=30,
                          headers={"x-auth-token": "admin"}) as net:
            network = net.post("/networks", json={"network": {
                "name": "net0", "provider:network_type": "flat",
                "provider:physical_network": "physnet0"}}).json()["network"]
            net.post("/subnets", json={"subnet": {"network_id": network["id"],
                                                  "cidr": "10.0.0.0/24", "ip_version": 4}})
            policy = net.post("/qos/policies", json={"policy": {"name": "qp"}}).json()["policy"]
            for direction, kbps in (("egress", 1000), ("ingress", 2000)):
                net.post(f"/qos/policies/{policy['id']}/minimum_bandwidth_rules", json={
                    "minimum_bandwidth_rule": {"min_kbps": kbps, "direction": direction}})
            self.port = net.post("/ports", json={"port": {
                "network_id": network["id"], "qos_policy_id": policy["id"]}}).json()["port"]["id"]
        resp = s.compute.post("/servers", json={"server": {
            "name": "vm", "flavorRef": self.small, "imageRef": self.image,
            "networks": [{"port": self.port}]}})
        assert resp.status_code == 202, resp.text
        self.server = str(resp.json()["server"]["id"])
        s.wait_status(self.server, "ACTIVE")


def _bridge(s: Stowage, host: str) -> str:
    found = s.placement.get("/resource_providers",
                            params={"name": f"{host}:Open vSwitch agent:br-physnet0"}).json()
    return str(found["resource_providers"][0]["uuid"])


def _check_port(s: Stowage, db: Database, w: PortWorld, want: str) -> None:
    view = s.wait_settled(w.server)
    assert view is not None and view["status"] == want, view
    if want == "SHELVED_OFFLOADED":
        _check_offloaded_port(s, db, w)
        return
    host = view["OS-EXT-SRV-ATTR:host"]
    flavor = LARGE if view["flavor"]["original_name"] == "large" else SMALL
    assert s.held(w.server) == {s.node(host): flavor, _bridge(s, host): _PORT_QOS}
    resp = httpx.get(f"{s.base}/network/v2.0/ports/{w.port}", headers={"x-auth-token": "admin"})
    port = resp.json()["port"]
    group = port["resource_request"]["request_groups"][0]["id"]
    assert (port["device_id"], port["binding:host_id"]) == (w.server, host)
    assert port["binding:profile"]["allocation"] == {group: _bridge(s, host)}
    resp = httpx.get(f"{s.base}/network/v2.0/ports/{w.port}/bindings",
                     headers={"x-auth-token": "admin"})
    assert [(b["host"], b["status"]) for b in resp.json()["bindings"]] == [(host, "ACTIVE")]
    assert s.audit(db) == []


def _check_offloaded_port(s: Stowage, db: Database, w: PortWorld) -> None:
    """Offloaded: nothing held, the port still the server's but bound nowhere."""
    assert s.held(w.server) == {}
    resp = httpx.get(f"{s.base}/network/v2.0/ports/{w.port}", headers={"x-auth-token": "admin"})
    port = resp.json()["port"]
    assert (port["device_id"], port["binding:host_id"]) == (w.server, "")
    assert "allocation" not in port["binding:profile"]
    assert s.audit(db) == []


@pytest.mark.parametrize(("point", "want"), [
    ("build:spawn:executing", "ACTIVE"),
    ("resize:finish_resize:executing", "ACTIVE"),
    ("resize:finish_resize:done", "VERIFY_RESIZE"),
    ("revert_resize:finish_revert_resize:executing", "ACTIVE"),
    ("live_migrate:check_destination:done", "ACTIVE"),  # undone: the source binding only
    ("live_migrate:post_live_migration_at_destination:executing", "ACTIVE"),  # forward
    ("shelve:drop_allocation:executing", "SHELVED_OFFLOADED"),  # the unbind is done again
    ("unshelve:spawn:executing", "ACTIVE"),  # bound on the new host
    ("evacuate:rebuild_instance:executing", "ACTIVE"),  # bound on the destination
])
def test_a_crash_with_a_qos_port_binds_it_where_the_server_is(point: str, want: str,
                                                              tmp_path: Path) -> None:
    operation = point.split(":")[0]
    with migrated_database(BACKENDS[0]) as url:
        db = Database(url)
        schema.upgrade(db)
        try:
            s = Stowage(url, tmp_path, crash_at=point, options=_PORT_OPTIONS)
            try:
                w = PortWorld(s)
                if operation == "build":
                    with contextlib.suppress(Exception):  # the crash cuts the wait off
                        w.boot(s)
                else:
                    _set_up(w, s, operation)
                    _ask(s, w, operation)
                assert s.crashed(), f"the journal never reached {point}"
            finally:
                s.stop()
            with running(url, tmp_path, options=_PORT_OPTIONS) as s:
                if not w.server:
                    w.server = str(s.compute.get("/servers").json()["servers"][0]["id"])
                _check_port(s, db, w, want)
        finally:
            db.dispose()
