"""`[metrics] worker_bind` of real `stowage conductor` and `stowage scheduler` processes.

    stowage serve (placement, compute, image, network) ──RabbitMQ──> stowage conductor
                                                                     stowage scheduler
                                                                     stowage agent --host host1
    the test ── GET http://127.0.0.1:<worker_bind>/metrics ──> conductor, scheduler

A server booted through the API is built by the conductor process, which
asked the scheduler process for a host: the conductor's own listener shows
the build started and succeeded, the scheduler's the claim. The API process
answers for neither (its counters are its own). PostgreSQL and MySQL, as the
other multi-process tests (test_scale_out.py).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from kombu import Connection

from stowage.messaging.amqp_wire import Names, kombu_url
from tests.conformance.server import free_port
from tests.conftest import BACKENDS
from tests.dbs import migrated_database
from tests.functional import brokers
from tests.functional.conftest import api_client
from tests.functional.metrics_scrape import Samples, scrape, value
from tests.functional.processes import STARTED, StowageProcess, answers_http, logged
from tests.functional.servers import image_at

OPS = "stowage_conductor_operations"


@dataclass
class Workers:
    url: str
    conductor: str  # the base URL of its metrics listener
    scheduler: str


def _config(path: Path, port: int, namespace: str, bind: str = "") -> Path:
    metrics = ("[metrics]\nallow_unauthenticated_from = [\"127.0.0.0/8\"]\n"
               f'worker_bind = "{bind}"\n') if bind else ""
    path.write_text(f'control_exchange = "{namespace}"\n'
                    "[compute]\n"
                    f'placement_url = "http://127.0.0.1:{port}/placement"\n'
                    "report_interval = 1\nupdate_resources_interval = 1\n" + metrics)
    return path


@pytest.fixture(params=[b for b in ("postgresql", "mysql") if b in BACKENDS])
def workers(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Workers]:
    brokers.skip_without_broker()
    port, namespace = free_port(), brokers.namespace()
    binds = {"conductor": f"127.0.0.1:{free_port()}", "scheduler": f"127.0.0.1:{free_port()}"}
    with migrated_database(request.param) as database:
        def args(role: str) -> list[str]:
            config = _config(tmp_path / f"{role}.toml", port, namespace, binds.get(role, ""))
            return ["--config", str(config), "--database", database,
                    "--transport-url", brokers.URL, "--log-level", "info"]
        api = StowageProcess("api", ["serve", "--services", "placement,compute,image,network",
                                     "--bind", f"127.0.0.1:{port}", *args("api")[:-2]],
                             tmp_path, answers_http(f"http://127.0.0.1:{port}/compute/v2.1"))
        roles = [StowageProcess(role, [role, *args(role), *extra], tmp_path, logged(STARTED))
                 for role, extra in (("conductor", []), ("scheduler", []),
                                     ("agent", ["--host", "host1"]))]
        try:
            api.start()
            api.wait_ready()
            for proc in roles:
                proc.start()
            for proc in roles:
                proc.wait_ready()
            yield Workers(f"http://127.0.0.1:{port}", f"http://{binds['conductor']}",
                          f"http://{binds['scheduler']}")
        finally:
            for proc in roles:
                proc.terminate()
            for proc in [*roles, api]:
                proc.stop()
            for proc in [*roles, api]:
                print(f"--- {proc.name} ---\n{proc.log_tail(15)}")
            with Connection(kombu_url(brokers.URL)) as conn:
                channel = conn.channel()
                for target in ("conductor", "scheduler", "compute.host1"):
                    channel.queue_delete(Names(namespace).queue(target))


def _scrape(url: str) -> Samples:
    with httpx.Client(base_url=url, timeout=10) as anonymous:  # an allowed network
        return scrape(anonymous)


def _active(compute: httpx.Client, server_id: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        server = compute.get(f"/servers/{server_id}").json()["server"]
        assert server["status"] != "ERROR", server.get("fault")
        if server["status"] == "ACTIVE" and server["OS-EXT-STS:task_state"] is None:
            return
        time.sleep(0.2)
    raise AssertionError(f"{server_id} not ACTIVE after 60 s")


def test_the_conductor_process_counts_the_build_it_ran(workers: Workers) -> None:
    before_c, before_s = _scrape(workers.conductor), _scrape(workers.scheduler)
    assert value(before_c, f"{OPS}_started_total", operation="build") == 0
    image = image_at(workers.url)
    with api_client(f"{workers.url}/compute/v2.1",
                    headers={"openstack-api-version": "compute latest"}) as compute:
        resp = compute.post("/flavors", json={"flavor": {"name": "f", "vcpus": 1, "ram": 256,
                                                         "disk": 1}})
        assert resp.status_code == 200, resp.text
        resp = compute.post("/servers", json={"server": {
            "name": "s", "flavorRef": resp.json()["flavor"]["id"], "imageRef": image,
            "networks": "none"}})
        assert resp.status_code == 202, resp.text
        _active(compute, resp.json()["server"]["id"])
        api_side = scrape(compute, "../../metrics")
    after_c, after_s = _scrape(workers.conductor), _scrape(workers.scheduler)
    assert value(after_c, f"{OPS}_started_total", operation="build") == 1
    assert value(after_c, f"{OPS}_finished_total", operation="build", outcome="succeeded") == 1
    assert value(after_c, "stowage_conductor_operation_duration_seconds_count",
                 operation="build", outcome="succeeded") == 1
    assert value(after_s, "stowage_scheduler_claims_total", result="claimed") == \
        value(before_s, "stowage_scheduler_claims_total", result="claimed") + 1
    # The conductor ran it, not the API process: the API's counters did not see it.
    assert value(api_side, f"{OPS}_started_total", operation="build") == 0
