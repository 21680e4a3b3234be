"""Helpers for injecting faults from outside: the `/os-simulator/hosts/{host}/faults` route.

Tests arm faults the way an operator would (docs/faults.md), over HTTP as
the admin, rather than reaching into the agent's driver in-process.
"""

from __future__ import annotations

import time
from typing import Any

from tests.functional.conftest import Cloud

__all__ = ["faults_path", "arm", "armed", "wait_killed"]


def faults_path(host: str) -> str:
    return f"/os-simulator/hosts/{host}/faults"


def arm(cloud: Cloud, host: str, step: str, mode: str | None = None,
        times: int | None = None, error: str | None = None) -> dict[str, Any]:
    """POST a fault as the admin; returns the armed fault's view."""
    fault: dict[str, Any] = {"step": step}
    for key, value in (("mode", mode), ("times", times), ("error", error)):
        if value is not None:
            fault[key] = value
    resp = cloud.compute.post(faults_path(host), json={"fault": fault})
    assert resp.status_code == 200, resp.text
    return dict(resp.json()["fault"])


def armed(cloud: Cloud, host: str) -> list[dict[str, Any]]:
    """The host's armed faults (GET), as the admin."""
    resp = cloud.compute.get(faults_path(host))
    assert resp.status_code == 200, resp.text
    return list(resp.json()["faults"])


def wait_killed(cloud: Cloud, host: str, timeout: float = 10.0) -> None:
    """Until the host's agent is gone from the control plane (a kill runs on its own
    thread, after the call that asked for it answered)."""
    deadline = time.monotonic() + timeout
    while host in cloud.plane.agents:
        assert time.monotonic() < deadline, f"the agent of {host} is still running"
        time.sleep(0.05)
