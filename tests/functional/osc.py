"""Running the stock `openstack` CLI against a live stowage, configured as the README says.

`serving_hosts` starts the `stowage serve` a CLI test module shares (SQLite,
every service mounted, simulated hosts); `settle` waits for its control plane.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from stowage.compute.hosts import HostConfig
from tests.functional.conftest import LiveServer, serving

__all__ = ["osc", "needs_osc", "serving_hosts", "settle"]

needs_osc = pytest.mark.skipif(shutil.which("openstack") is None,
                               reason="python-openstackclient is not installed")


def osc(server: LiveServer, *args: str, json_out: bool = True) -> Any:
    """Run one command; fail with its output unless it exits 0; parse `-f json`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    env.update(OS_AUTH_TYPE="admin_token", OS_TOKEN="admin",
               OS_ENDPOINT=f"{server.url}/placement",
               OS_COMPUTE_ENDPOINT_OVERRIDE=f"{server.url}/compute/v2.1",
               OS_IDENTITY_ENDPOINT_OVERRIDE=f"{server.url}/identity/v3",
               OS_IMAGE_ENDPOINT_OVERRIDE=f"{server.url}/image",
               OS_NETWORK_ENDPOINT_OVERRIDE=f"{server.url}/network")
    cmd = ["openstack", *args] + (["-f", "json"] if json_out else [])
    # stdin is not a terminal here, so `image create` uploads it (empty) as the image data.
    result = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120,
                            check=False, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, f"{' '.join(cmd)}\n{result.stdout}\n{result.stderr}"
    return json.loads(result.stdout) if json_out and result.stdout.strip() else None


@contextmanager
def serving_hosts(*names: str, **overrides: Any) -> Iterator[LiveServer]:
    """`stowage serve` on SQLite with a simulated host per name (`overrides`: settings)."""
    with serving("sqlite", **overrides) as live:
        assert live.plane is not None
        for name in names:
            live.plane.add_host(HostConfig(name=name))
        yield live


def settle(live: LiveServer) -> None:
    """Wait (60 s at most) until the control plane has nothing left to do."""
    assert live.plane is not None and live.plane.drain(60)
