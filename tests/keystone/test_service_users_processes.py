"""A split deployment of OS processes over RabbitMQ with service users only::

    Keystone ---- catalog: placement, network -> A;  compute -> B
       ^ tokens checked by every process below (auth_strategy keystone)
    A  stowage serve --services placement,network,image     database A, [nova] table
    B  stowage serve --services compute,image                database B, [placement] and
       stowage conductor | scheduler | agent --host h1,h2     [network] tables, no *_url
          \\___________ RabbitMQ ___________/

Every setting comes from `stowage manage keystone register`; no process
names another's URL, and A and B share no database (so no token table).
The user boots a server on B and cold-migrates it; the allocations are in
A's Placement, written by B's scheduler, conductor and agents as the
`placement` service user. A port deleted on A reaches B's Compute as `nova`.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import BACKENDS
from tests.dbs import throwaway_database
from tests.functional import brokers
from tests.functional.conftest import free_port
from tests.functional.processes import STARTED, StowageProcess, answers_http, logged
from tests.keystone.fixture import Keystone
from tests.keystone.service_users import register

SETTLE = 60.0


@dataclass
class Deployment:
    a: str
    b: str
    processes: dict[str, StowageProcess]
    headers: dict[str, str]


def _write(path: Path, tables: str, namespace: str) -> Path:
    path.write_text(f'control_exchange = "{namespace}"\n{tables}\n'
                    "[compute]\nreport_interval = 1\nupdate_resources_interval = 1\n")
    return path


def _procs(tmp: Path, port_a: int, port_b: int, conf_a: Path, conf_b: Path, db_a: str,
           db_b: str) -> dict[str, StowageProcess]:
    on_b = ["--config", str(conf_b), "--database", db_b, "--transport-url", brokers.URL]
    started = logged(STARTED)
    return {
        "a": StowageProcess("a", ["serve", "--services", "placement,network,image", "--bind",
                                  f"127.0.0.1:{port_a}", "--config", str(conf_a),
                                  "--database", db_a],
                            tmp, answers_http(f"http://127.0.0.1:{port_a}/placement/")),
        "b": StowageProcess("b", ["serve", "--services", "compute,image", "--bind",
                                  f"127.0.0.1:{port_b}", *on_b],
                            tmp, answers_http(f"http://127.0.0.1:{port_b}/compute/v2.1")),
        "conductor": StowageProcess("conductor", ["conductor", *on_b], tmp, started),
        "scheduler": StowageProcess("scheduler", ["scheduler", *on_b], tmp, started),
        "agent": StowageProcess("agent", ["agent", *on_b, "--host", "h1", "--host", "h2"],
                                tmp, started),
    }


@pytest.fixture(scope="module")
def deployment(keystone: Keystone, tmp_path_factory: pytest.TempPathFactory
               ) -> Iterator[Deployment]:
    if "postgresql" not in BACKENDS:
        pytest.skip("the processes share database B: PostgreSQL")
    brokers.skip_without_broker()
    keystone.ensure_running()
    tmp = tmp_path_factory.mktemp("svc-procs")
    port_a, port_b, namespace = free_port(), free_port(), brokers.namespace()
    status, for_b, err = register(keystone, f"http://127.0.0.1:{port_a}", "placement,network")
    assert status == 0, err
    status, for_a, err = register(keystone, f"http://127.0.0.1:{port_b}", "compute")
    assert status == 0, err
    with throwaway_database("postgresql") as db_a, throwaway_database("postgresql") as db_b:
        procs = _procs(tmp, port_a, port_b, _write(tmp / "a.toml", for_a, namespace),
                       _write(tmp / "b.toml", for_b, namespace), db_a, db_b)
        try:
            for name in ("a", "b"):
                procs[name].start()
                procs[name].wait_ready()
            for name in ("conductor", "scheduler", "agent"):
                procs[name].start()
            for name in ("conductor", "scheduler", "agent"):
                procs[name].wait_ready()
            yield Deployment(f"http://127.0.0.1:{port_a}", f"http://127.0.0.1:{port_b}", procs,
                             {"x-auth-token": keystone.admin.admin_token(),
                              "accept": "application/json"})
        finally:
            for proc in procs.values():
                proc.terminate()
            for proc in procs.values():
                proc.stop()
                print(f"--- {proc.name} ---\n{proc.log_tail(15)}")


def _wait(what: str, check: Any, timeout: float = SETTLE) -> Any:
    deadline = time.monotonic() + timeout
    while not (found := check()):
        assert time.monotonic() < deadline, f"{what}: not after {timeout:g} s"
        time.sleep(0.2)
    return found


def _settled(compute: httpx.Client, server_id: str, status: str) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        server = compute.get(f"/servers/{server_id}").json()["server"]
        assert server["status"] != "ERROR", server.get("fault")
        done = server["status"] == status and server["OS-EXT-STS:task_state"] is None
        return dict(server) if done else None
    return dict(_wait(f"{server_id} {status}", check))


def test_compute_processes_claim_in_another_placement_as_the_placement_user(
        deployment: Deployment) -> None:
    d = deployment
    for name in ("b", "conductor", "scheduler", "agent"):
        assert ("compute reaches placement at the catalog's placement endpoint as service "
                "user placement ([placement])") in d.processes[name].log()
    latest = {"openstack-api-version": "placement 1.39"}
    with httpx.Client(base_url=f"{d.a}/placement", headers={**d.headers, **latest},
                      timeout=30) as placement, \
            httpx.Client(base_url=f"{d.b}/compute/v2.1", timeout=30, headers={
                **d.headers, "openstack-api-version": "compute 2.90"}) as compute, \
            httpx.Client(base_url=f"{d.b}/image", headers=d.headers, timeout=30) as image:
        providers = _wait("both hosts in A's Placement", lambda: sorted(
            p["name"] for p in placement.get("/resource_providers").json()
            ["resource_providers"]) == ["h1", "h2"])
        assert providers
        flavor = compute.post("/flavors", json={"flavor": {"name": "f", "vcpus": 1,
                                                           "ram": 128, "disk": 1}})
        assert flavor.status_code == 200, flavor.text
        made = image.post("/v2/images", json={"name": "img", "disk_format": "raw",
                                              "container_format": "bare"}).json()
        assert image.put(f"/v2/images/{made['id']}/file", content=b"x", headers={
            "content-type": "application/octet-stream"}).status_code in (201, 204)
        booted = compute.post("/servers", json={"server": {
            "name": "s", "flavorRef": flavor.json()["flavor"]["id"], "imageRef": made["id"],
            "networks": "none"}})
        assert booted.status_code == 202, booted.text
        server_id = booted.json()["server"]["id"]
        first = _settled(compute, server_id, "ACTIVE")["OS-EXT-SRV-ATTR:host"]
        assert compute.post(f"/servers/{server_id}/action",
                            json={"migrate": None}).status_code == 202
        _settled(compute, server_id, "VERIFY_RESIZE")
        assert compute.post(f"/servers/{server_id}/action",
                            json={"confirmResize": None}).status_code == 204
        moved = _settled(compute, server_id, "ACTIVE")["OS-EXT-SRV-ATTR:host"]
        assert moved != first
        uuids = {p["name"]: p["uuid"] for p in placement.get("/resource_providers").json()
                 ["resource_providers"]}
        held = _wait("the allocation on the new host only", lambda: (
            lambda a: a if list(a) == [uuids[moved]] else None)(
            placement.get(f"/allocations/{server_id}").json()["allocations"]))
        assert held[uuids[moved]]["resources"] == {"VCPU": 1, "MEMORY_MB": 128, "DISK_GB": 1}


def test_a_port_deleted_in_a_reaches_compute_in_b_as_nova(deployment: Deployment) -> None:
    d = deployment
    with httpx.Client(base_url=f"{d.a}/network/v2.0", headers=d.headers, timeout=30) as net:
        network = net.post("/networks", json={"network": {"name": "n"}}).json()["network"]
        port = net.post("/ports", json={"port": {
            "network_id": network["id"], "device_owner": "compute:nova",
            "device_id": str(uuid.uuid4())}}).json()["port"]
        assert net.delete(f"/ports/{port['id']}").status_code == 204
    line = _wait("the event in B's request log", lambda: next(
        (text for text in d.processes["b"].log().splitlines()
         if '"POST /compute/v2.1/os-server-external-events"' in text), None))
    # Compute took nova's token (401/403 otherwise); the server is unknown to it, so the
    # event is answered for itself (207, its code 404).
    assert "status: 207" in line, line
    assert ("the Network service reports to compute at the catalog's compute endpoint as "
            "service user nova ([nova])") in d.processes["a"].log()
