"""An agent started before the API waits for it, as nova-compute does, instead of exiting.

    stowage agent --host late1  ──X──▶ Placement (nothing listens yet)
        ... "cannot be reached ... trying again in 1 s (attempt 1)", 2 s, 4 s ...
    stowage serve --services placement   (started later, on that port)
    stowage agent ───────────────────▶ Placement: provider late1, "started (roles compute"
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import httpx
from kombu import Connection

from stowage.compute import cells
from stowage.config import ComputeSettings
from stowage.db import Database, schema
from stowage.messaging.amqp_wire import Names, kombu_url
from tests.functional import brokers
from tests.functional.conftest import free_port
from tests.functional.processes import STARTED, StowageProcess, answers_http, logged

RETRYING = "a service it needs cannot be reached"


def _wait(what: str, check: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not after {timeout:g} s")
        time.sleep(0.2)


def test_an_agent_started_before_the_api_retries_then_registers(tmp_path: Path) -> None:
    brokers.skip_without_broker()
    port, namespace = free_port(), brokers.namespace()
    database = f"sqlite:///{tmp_path / 'stowage.db'}"
    db = Database(database)
    schema.upgrade(db)  # what `stowage manage db upgrade` does: the schema and cell1
    cells.bootstrap_with(db, ComputeSettings()).dispose()
    db.dispose()
    config = tmp_path / "stowage.toml"
    config.write_text(f'control_exchange = "{namespace}"\n[compute]\n'
                      f'placement_url = "http://127.0.0.1:{port}"\n'
                      "report_interval = 1\nupdate_resources_interval = 1\n")
    common = ["--config", str(config), "--database", database]
    agent = StowageProcess("agent", ["agent", *common, "--transport-url", brokers.URL,
                                     "--host", "late1"], tmp_path, logged(f"{RETRYING}"))
    api = StowageProcess("api", ["serve", "--services", "placement", "--bind",
                                 f"127.0.0.1:{port}", *common], tmp_path,
                         answers_http(f"http://127.0.0.1:{port}/"))
    try:
        agent.start()
        agent.wait_ready()
        _wait("a second attempt", lambda: "(attempt 2)" in agent.log())
        assert agent.pid is not None, agent.log_tail()  # still running
        assert "Traceback" not in agent.log()
        assert "host late1: start: a service it needs cannot be reached (ConnectError" \
            in agent.log()
        api.start()
        api.wait_ready()
        _wait("the agent started", lambda: STARTED in agent.log())
        found = httpx.get(f"http://127.0.0.1:{port}/resource_providers",
                          params={"name": "late1"}, timeout=10,
                          headers={"x-auth-token": "admin"}).json()["resource_providers"]
        assert [p["name"] for p in found] == ["late1"]
        assert "host late1: start: done after" in agent.log()
    finally:
        agent.terminate()
        assert agent.stop() == 0, agent.log_tail()
        api.stop()
        with Connection(kombu_url(brokers.URL)) as conn:
            conn.channel().queue_delete(Names(namespace).queue("compute.late1"))
