"""Faults reach an agent in another process, over RabbitMQ (docs/faults.md).

    stowage serve (placement, compute: the API only) ──RabbitMQ──> stowage agent
                                                                     hostA (hosts file: spawn
                                                                            fails always)
                                                                     hostB

The API arms, lists and clears the agent process's faults through the
hosts' `compute.<host>` queues; the hosts file's faults are armed when the
agent starts; killing the agents of both hosts makes the process exit 1.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from kombu import Connection

from stowage.messaging.amqp_wire import Names, kombu_url
from tests.conftest import BACKENDS
from tests.dbs import migrated_database
from tests.functional import brokers
from tests.functional.conftest import api_client, free_port
from tests.functional.processes import STARTED, StowageProcess, answers_http, logged

HOSTS_FILE = """
[[hosts]]
name = "hostA"

[[hosts.faults]]
step = "spawn"
mode = "always"
error = "configured"

[[hosts]]
name = "hostB"
"""
BACKEND = next((b for b in ("postgresql", "mysql") if b in BACKENDS), None)


@pytest.mark.skipif(BACKEND is None, reason="needs PostgreSQL or MySQL")
def test_faults_reach_an_agent_process_and_a_kill_ends_it(tmp_path: Path) -> None:
    brokers.skip_without_broker()
    assert BACKEND is not None
    port, namespace = free_port(), brokers.namespace()
    config = tmp_path / "stowage.toml"
    config.write_text(f'control_exchange = "{namespace}"\n[compute]\n'
                      f'placement_url = "http://127.0.0.1:{port}/placement"\n')
    (tmp_path / "hosts.toml").write_text(HOSTS_FILE)
    with migrated_database(BACKEND) as database:
        common = ["--config", str(config), "--database", database,
                  "--transport-url", brokers.URL]
        api = StowageProcess("api", ["serve", "--services", "placement,compute",
                                     "--bind", f"127.0.0.1:{port}", *common], tmp_path,
                             answers_http(f"http://127.0.0.1:{port}/compute/v2.1"))
        agent = StowageProcess("agent", ["agent", *common, "--hosts-file",
                                         str(tmp_path / "hosts.toml")], tmp_path,
                               logged(STARTED))
        try:
            api.start()
            api.wait_ready()
            agent.start()
            agent.wait_ready()
            _story(f"http://127.0.0.1:{port}/compute/v2.1", agent)
        finally:
            agent.stop()
            api.stop()
            print(f"--- agent ---\n{agent.log_tail(15)}")
            _delete_queues(namespace)


def _story(url: str, agent: StowageProcess) -> None:
    with api_client(url) as compute:
        faults = compute.get("/os-simulator/hosts/hostA/faults")
        assert faults.status_code == 200, faults.text
        assert [(f["step"], f["mode"], f["error"]) for f in faults.json()["faults"]] == [
            ("spawn", "always", "configured")]

        armed = compute.post("/os-simulator/hosts/hostB/faults",
                             json={"fault": {"step": "prep_resize", "mode": "times",
                                             "times": 3}})
        assert armed.status_code == 200, armed.text
        listed = compute.get("/os-simulator/hosts/hostB/faults").json()["faults"]
        assert [(f["id"], f["remaining"]) for f in listed] == [
            (armed.json()["fault"]["id"], 3)]
        assert compute.delete("/os-simulator/hosts/hostA/faults").status_code == 204
        assert compute.get("/os-simulator/hosts/hostA/faults").json()["faults"] == []

        for host in ("hostA", "hostB"):
            killed = compute.post(f"/os-simulator/hosts/{host}/faults",
                                  json={"fault": {"step": "agent"}})
            assert killed.status_code == 200, killed.text
    deadline = time.monotonic() + 30
    while agent.pid is not None:
        assert time.monotonic() < deadline, "the agent process still runs"
        time.sleep(0.1)
    assert agent.stop() == 1  # already gone: its exit status
    assert "every host's agent was killed by fault injection" in agent.log()


def _delete_queues(namespace: str) -> None:
    names = Names(namespace)
    with Connection(kombu_url(brokers.URL)) as conn:
        channel = conn.channel()
        for host in ("hostA", "hostB"):
            channel.queue_delete(names.queue(f"compute.{host}"))
