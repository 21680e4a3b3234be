"""`stowage_audit_violations` is the last audit's count, refreshed in the background.

    h1, empty                       the audit finds nothing: 0
    + an allocation nobody owns     (a consumer that is neither a server nor a
      (PUT /allocations/{orphan})    migration) the next audit finds it: 1
"""

from __future__ import annotations

import time
import uuid as uuidlib
from collections.abc import Callable

import httpx
import pytest

from stowage import config
from stowage.compute.hosts import HostConfig
from tests.conftest import BACKENDS
from tests.functional.conftest import LiveServer, serving
from tests.functional.metrics_scrape import Samples, scrape, value


def _until(client: httpx.Client, done: Callable[[Samples], bool]) -> Samples:
    """Scrape until `done` holds (each scrape may start an audit), within 30 s."""
    deadline = time.monotonic() + 30
    while True:
        samples = scrape(client)
        if done(samples) or time.monotonic() > deadline:
            return samples
        time.sleep(0.1)


def _orphan(live: LiveServer, node: str) -> None:
    with httpx.Client(base_url=f"{live.url}/placement",
                      headers={"x-auth-token": "admin",
                               "openstack-api-version": "placement latest"}) as placement:
        resp = placement.put(f"/allocations/{uuidlib.uuid4()}", json={
            "allocations": {node: {"resources": {"VCPU": 1}}}, "project_id": "p",
            "user_id": "u", "consumer_generation": None, "consumer_type": "INSTANCE"})
        assert resp.status_code == 204, resp.text


@pytest.mark.parametrize("backend", BACKENDS)
def test_audit_gauge_follows_the_records(backend: str) -> None:
    often = config.MetricsSettings(audit_interval=0.2)
    with serving(backend, metrics=often) as live, \
            httpx.Client(base_url=live.url, headers={"x-auth-token": "admin"}) as client:
        assert live.plane is not None
        node = str(live.plane.add_host(HostConfig(name="h1")).node_uuid)
        live.plane.drain()
        started = time.time()
        clean = _until(client, lambda s: value(
            s, "stowage_audit_last_run_timestamp_seconds") > started)
        assert value(clean, "stowage_audit_violations") == 0
        _orphan(live, node)
        # An audit running as the orphan is written may still say 0; a later one finds it.
        broken = _until(client, lambda s: value(s, "stowage_audit_violations") == 1)
        assert value(broken, "stowage_audit_violations") == 1
