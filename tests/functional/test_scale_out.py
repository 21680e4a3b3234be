"""The control plane as separate OS processes over RabbitMQ, on PostgreSQL and MySQL.

The deployment under test (every box a process, every arrow RabbitMQ)::

    stowage serve --workers 2 ─┬─ API worker ─┐ cast          ┌─> stowage conductor  (a)
      placement, compute,      └─ API worker ─┴─> conductor ──┴─> stowage conductor  (b)
      image, network                               │ call_long
      (Placement over HTTP for the others)         ├─> stowage scheduler
                                                   ├─> stowage agent --host host1 --host host2
                                                   └─> stowage agent --host host3 --host host4

The user's story: boot servers, resize and confirm, resize and revert,
cold migrate and confirm, live migrate, shelve and unshelve; each server
settles ACTIVE on the host the operation promised, and the accounting audit
finds nothing. Then the conductor running a live migration is killed
(SIGKILL) in the middle of the copy: the other conductor takes the
operation's lease over and rolls the move back to the source (the copy had
not finished), once; the restarted conductor touches nothing. Then one agent
process is killed while its hosts run servers: a stop asked meanwhile waits
in the host's queue, and an allocation lost meanwhile is healed; the
restarted agent finds its guests, serves the stop, and the audit is clean
again. Last, the broker closes the other agent's connections (rabbitmqctl
close_connection, as a broker restart or a network cut would): the agent
keeps its guests, reconnects, serves a stop cast meanwhile, and its hosts
stay up. Processes stop on SIGTERM with status 0.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from kombu import Connection

from stowage.compute import tables as t
from stowage.compute.audit import audit
from stowage.db import Database
from stowage.messaging.amqp_wire import Names, kombu_url
from stowage.placement.client import PlacementClient
from tests.conformance.server import free_port
from tests.conftest import BACKENDS
from tests.dbs import throwaway_database
from tests.functional import brokers
from tests.functional.conftest import api_client
from tests.functional.processes import STARTED, StowageProcess, answers_http, logged
from tests.functional.servers import image_at

HOSTS_A, HOSTS_B = ("host1", "host2"), ("host3", "host4")
SETTLE = 30.0


@dataclass
class Deployment:
    url: str
    database: str
    namespace: str
    processes: dict[str, StowageProcess]
    compute: httpx.Client
    placement: httpx.Client

    def audit(self) -> list[str]:
        db, client = Database(self.database), PlacementClient.over_http(f"{self.url}/placement")
        try:
            return audit(db, client)
        finally:
            client.close()
            db.dispose()


def _config(tmp_path: Path, port: int, namespace: str) -> Path:
    path = tmp_path / "stowage.toml"
    path.write_text(f'control_exchange = "{namespace}"\n'
                    "[compute]\n"
                    f'placement_url = "http://127.0.0.1:{port}/placement"\n'
                    "report_interval = 1\n"
                    "update_resources_interval = 1\n"
                    # Long enough a copy to kill its conductor in the middle; a short
                    # lease so that the survivor's take-over loop looks every 2 s.
                    "sim_live_migration_seconds = 4\n"
                    "conductor_lease_seconds = 6\n")
    return path


def _processes(tmp_path: Path, port: int, config: Path,
               database: str) -> dict[str, StowageProcess]:
    common = ["--config", str(config), "--database", database, "--transport-url", brokers.URL,
              "--log-level", "info"]
    started = logged(STARTED)
    procs = {"api": StowageProcess(
        "api", ["serve", "--services", "placement,compute,image,network", "--workers", "2",
                "--bind", f"127.0.0.1:{port}", *common[:-2]],
        tmp_path, answers_http(f"http://127.0.0.1:{port}/compute/v2.1"))}
    for name in ("conductor-a", "conductor-b"):
        procs[name] = StowageProcess(name, ["conductor", *common], tmp_path, started)
    procs["scheduler"] = StowageProcess("scheduler", ["scheduler", *common], tmp_path, started)
    for name, hosts in (("agent-a", HOSTS_A), ("agent-b", HOSTS_B)):
        names = [arg for host in hosts for arg in ("--host", host)]
        procs[name] = StowageProcess(name, ["agent", *common, *names], tmp_path, started)
    return procs


def _delete_queues(namespace: str) -> None:
    """The target queues outlive their consumers (casts wait for a restart): drop them."""
    names = Names(namespace)
    targets = ["conductor", "scheduler", *(f"compute.{h}" for h in HOSTS_A + HOSTS_B)]
    with Connection(kombu_url(brokers.URL)) as conn:
        channel = conn.channel()
        for target in targets:
            channel.queue_delete(names.queue(target))


@pytest.fixture(params=[b for b in ("postgresql", "mysql") if b in BACKENDS])
def deployment(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Deployment]:
    brokers.skip_without_broker()
    if not brokers.can_close_connections():
        pytest.skip("rabbitmqctl cannot close the local broker's connections (not root?)")
    port, namespace = free_port(), brokers.namespace()
    with throwaway_database(request.param) as database:
        procs = _processes(tmp_path, port, _config(tmp_path, port, namespace), database)
        workers = [proc for name, proc in procs.items() if name != "api"]
        try:
            procs["api"].start()  # it upgrades the schema; the workers only check it
            procs["api"].wait_ready()
            for proc in workers:
                proc.start()
            for proc in workers:
                proc.wait_ready()
            base = f"http://127.0.0.1:{port}"
            with api_client(f"{base}/compute/v2.1",
                            headers={"openstack-api-version": "compute latest"}) as compute, \
                    api_client(f"{base}/placement",
                               headers={"openstack-api-version": "placement latest"}) as pl:
                yield Deployment(base, database, namespace, procs, compute, pl)
        finally:
            # Workers first (all at once), the API they report to last.
            for proc in workers:
                proc.terminate()
            for proc in [*workers, procs["api"]]:
                proc.stop()
            for proc in procs.values():
                print(f"--- {proc.name} ---\n{proc.log_tail(15)}")
            _delete_queues(namespace)


# --- what the user does and sees -------------------------------------------------------

def _wait(what: str, check: Any, timeout: float = SETTLE) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not after {timeout:g} s")
        time.sleep(0.2)


def _server(d: Deployment, server_id: str) -> dict[str, Any]:
    resp = d.compute.get(f"/servers/{server_id}")
    assert resp.status_code == 200, resp.text
    return dict(resp.json()["server"])


def _settled(d: Deployment, server_id: str, status: str) -> dict[str, Any]:
    """The server once it shows `status` with no task running; fails fast on ERROR."""
    def check() -> dict[str, Any] | None:
        server = _server(d, server_id)
        assert server["status"] != "ERROR", server.get("fault")
        done = server["status"] == status and server["OS-EXT-STS:task_state"] is None
        return server if done else None
    return dict(_wait(f"{server_id} {status}", check))


def _act(d: Deployment, server_id: str, body: dict[str, Any], status: str) -> dict[str, Any]:
    resp = d.compute.post(f"/servers/{server_id}/action", json=body)
    assert resp.status_code in (202, 204), resp.text  # confirmResize: 204, as Nova
    return _settled(d, server_id, status)


def _host(server: dict[str, Any]) -> str:
    return str(server["OS-EXT-SRV-ATTR:host"])


def _flavor(d: Deployment, name: str, vcpus: int, ram: int) -> str:
    resp = d.compute.post("/flavors", json={"flavor": {"name": name, "vcpus": vcpus,
                                                       "ram": ram, "disk": 1}})
    assert resp.status_code == 200, resp.text
    return str(resp.json()["flavor"]["id"])


def _boot(d: Deployment, name: str, flavor: str, image: str) -> str:
    resp = d.compute.post("/servers", json={"server": {
        "name": name, "flavorRef": flavor, "imageRef": image, "networks": "none"}})
    assert resp.status_code == 202, resp.text
    return str(resp.json()["server"]["id"])


def _computes_up(d: Deployment) -> list[str]:
    resp = d.compute.get("/os-services", params={"binary": "nova-compute"})
    return sorted(s["host"] for s in resp.json()["services"] if s["state"] == "up")


def _held(d: Deployment, consumer: str) -> dict[str, Any]:
    return dict(d.placement.get(f"/allocations/{consumer}").json()["allocations"])


def test_servers_move_across_processes_and_an_agent_survives_kill_9(
        deployment: Deployment) -> None:
    d = deployment
    assert _computes_up(d) == sorted(HOSTS_A + HOSTS_B)
    small, big = _flavor(d, "small", 1, 512), _flavor(d, "big", 2, 1024)
    image = image_at(d.url)
    ids = [_boot(d, f"s{i}", small, image) for i in range(4)]
    first = {sid: _host(_settled(d, sid, "ACTIVE")) for sid in ids}
    resized, reverted, migrated, live = ids

    # Resize + confirm: the new flavor on another host.
    after = _act(d, resized, {"resize": {"flavorRef": big}}, "VERIFY_RESIZE")
    assert _host(after) != first[resized]
    done = _act(d, resized, {"confirmResize": None}, "ACTIVE")
    assert (_host(done), done["flavor"]["original_name"]) == (_host(after), "big")
    # Resize + revert: back on its first host with its first flavor.
    _act(d, reverted, {"resize": {"flavorRef": big}}, "VERIFY_RESIZE")
    back = _act(d, reverted, {"revertResize": None}, "ACTIVE")
    assert (_host(back), back["flavor"]["original_name"]) == (first[reverted], "small")
    # Cold migrate + confirm, live migrate: each on another host.
    moved = _act(d, migrated, {"migrate": None}, "VERIFY_RESIZE")
    assert _host(_act(d, migrated, {"confirmResize": None}, "ACTIVE")) == _host(moved)
    assert _host(moved) != first[migrated]
    went = _act(d, live, {"os-migrateLive": {"host": None, "block_migration": "auto"}},
                "ACTIVE")
    assert _host(went) != first[live]
    # Shelve (offloaded at once: shelved_offload_time = 0) and unshelve anywhere.
    offloaded = _act(d, live, {"shelve": None}, "SHELVED_OFFLOADED")
    assert offloaded["OS-EXT-SRV-ATTR:host"] is None and _held(d, live) == {}
    _act(d, live, {"unshelve": None}, "ACTIVE")
    assert d.audit() == []

    _conductor_killed_mid_move(d, ids[0])
    _agent_killed_and_restarted(d, ids)
    _agent_loses_the_broker(d, ids)

    for name in ("conductor-b", "agent-b"):
        assert d.processes[name].stop() == 0, d.processes[name].log_tail()


def _lease_owner(d: Deployment, operation: str, server_id: str) -> str | None:
    """The conductor holding the lease of the server's running `operation`, if any."""
    steps = t.operation_steps
    db = Database(d.database)
    try:
        with db.read() as conn:
            return conn.execute(sa.select(steps.c.owner).where(
                steps.c.instance_uuid == server_id, steps.c.operation == operation,
                steps.c.step == "accepted", steps.c.lease_expires.is_not(None))).scalar()
    finally:
        db.dispose()


def _conductor_killed_mid_move(d: Deployment, server_id: str) -> None:
    """kill -9 the conductor that runs a live migration mid-copy; the other takes over."""
    source, held = _host(_server(d, server_id)), _resources(d, server_id)
    resp = d.compute.post(f"/servers/{server_id}/action",
                          json={"os-migrateLive": {"host": None, "block_migration": "auto"}})
    assert resp.status_code == 202, resp.text
    owner = str(_wait("a conductor leased the live migration",
                      lambda: _lease_owner(d, "live_migrate", server_id)))
    _wait("the copy started", lambda: _server(d, server_id)["OS-EXT-STS:task_state"]
          == "migrating" and _live_migration(d, server_id)["status"] == "running")
    pid = int(owner.split(":")[1])
    killed = next(n for n in ("conductor-a", "conductor-b") if d.processes[n].pid == pid)
    d.processes[killed].kill()

    # The survivor rolls the move back: the copy was not done; nothing ran twice.
    back = _settled(d, server_id, "ACTIVE")
    assert _host(back) == source
    migration = _live_migration(d, server_id)
    assert migration["status"] in ("error", "failed"), migration
    assert _resources(d, server_id) == held
    assert _held(d, migration["uuid"]) == {}
    survivor = next(n for n in ("conductor-a", "conductor-b") if n != killed)
    assert _lease_owner(d, "live_migrate", server_id) is None  # ended: released
    assert "took over operation" in d.processes[survivor].log(), \
        d.processes[survivor].log_tail()
    d.processes[killed].start()
    d.processes[killed].wait_ready()
    assert _host(_settled(d, server_id, "ACTIVE")) == source
    assert d.audit() == []


def _resources(d: Deployment, consumer: str) -> dict[str, Any]:
    return {rp: a["resources"] for rp, a in _held(d, consumer).items()}


def _live_migration(d: Deployment, server_id: str) -> dict[str, Any]:
    resp = d.compute.get("/os-migrations", params={"instance_uuid": server_id,
                                                   "migration_type": "live-migration"})
    assert resp.status_code == 200, resp.text
    return dict(resp.json()["migrations"][0])  # newest first


def _agent_killed_and_restarted(d: Deployment, ids: list[str]) -> None:
    """kill -9 agent-a; meanwhile stop a server of its hosts and lose an allocation; restart."""
    hosts = {sid: _host(_server(d, sid)) for sid in ids}
    on_a = [sid for sid in ids if hosts[sid] in HOSTS_A]
    if not on_a:  # the scheduler spread them over agent-b's hosts: move one over
        _act(d, ids[0], {"os-migrateLive": {"host": HOSTS_A[0], "block_migration": "auto"}},
             "ACTIVE")
        on_a, hosts[ids[0]] = [ids[0]], HOSTS_A[0]
    stopped, healed = on_a[0], on_a[-1]
    d.processes["agent-a"].kill()
    resp = d.compute.post(f"/servers/{stopped}/action", json={"os-stop": None})
    assert resp.status_code == 202, resp.text
    lost = _held(d, healed)
    assert d.placement.delete(f"/allocations/{healed}").status_code == 204

    d.processes["agent-a"].start()
    d.processes["agent-a"].wait_ready()
    # The stop waited in the host's queue for the agent; the tracker healed the allocation.
    assert _host(_settled(d, stopped, "SHUTOFF")) == hosts[stopped]
    _wait("allocation healed", lambda: _held(d, healed) != {})
    assert {rp: a["resources"] for rp, a in _held(d, healed).items()} == {
        rp: a["resources"] for rp, a in lost.items()}
    for sid in ids:
        expected = "SHUTOFF" if sid == stopped else "ACTIVE"
        assert _host(_settled(d, sid, expected)) == hosts[sid]
    _wait("agent-a's hosts up", lambda: _computes_up(d) == sorted(HOSTS_A + HOSTS_B))
    assert d.audit() == []


def _agent_loses_the_broker(d: Deployment, ids: list[str]) -> None:
    """The broker drops agent-b's connections: it keeps its guests, reconnects, and serves
    what was cast to its hosts meanwhile; its hosts stay up and the audit stays clean."""
    on_b = {sid: _host(_server(d, sid)) for sid in ids}
    on_b = {sid: host for sid, host in on_b.items() if host in HOSTS_B}
    if not on_b:  # everything is on agent-a's hosts: move one over
        sid = ids[-1]
        _act(d, sid, {"os-migrateLive": {"host": HOSTS_B[0], "block_migration": "auto"}},
             "ACTIVE")
        on_b = {sid: HOSTS_B[0]}
    before = {sid: _server(d, sid)["status"] for sid in on_b}
    pid = d.processes["agent-b"].pid
    assert pid is not None and brokers.close_connections_of(pid) > 0
    toggled = next(iter(on_b))
    action, want = ("os-start", "ACTIVE") if before[toggled] == "SHUTOFF" \
        else ("os-stop", "SHUTOFF")
    resp = d.compute.post(f"/servers/{toggled}/action", json={action: None})
    assert resp.status_code == 202, resp.text
    assert _host(_settled(d, toggled, want)) == on_b[toggled]
    for sid, host in on_b.items():  # the guests it kept, on the same hosts
        server = _settled(d, sid, want if sid == toggled else before[sid])
        assert _host(server) == host
        assert server["OS-EXT-STS:power_state"] == (1 if server["status"] == "ACTIVE" else 4)
    assert "lost its connection" in d.processes["agent-b"].log()
    _wait("agent-b's hosts up", lambda: _computes_up(d) == sorted(HOSTS_A + HOSTS_B))
    assert d.audit() == []
