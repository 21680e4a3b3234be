"""Running the stock `openstack` CLI against a live stowage, configured as the README says.

`serving_hosts` starts the `stowage serve` a CLI test module shares (SQLite,
every service mounted, simulated hosts); `settle` waits for its control plane.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from stowage.compute.hosts import HostConfig
from tests.functional.conftest import LiveServer, serving

__all__ = ["osc", "needs_osc", "serving_hosts", "settle"]

# Where `tests` is importable from, wherever pytest was started.
_REPO_ROOT = Path(__file__).resolve().parents[2]
# Seconds one command may take (the CLI's own waits, e.g. `--wait`, included).
_COMMAND_TIMEOUT = 120

needs_osc = pytest.mark.skipif(shutil.which("openstack") is None,
                               reason="python-openstackclient is not installed")


def osc(server: LiveServer, *args: str, json_out: bool = True) -> Any:
    """Run one command; fail with its output unless it exits 0; parse `-f json`."""
    env = {"OS_AUTH_TYPE": "admin_token", "OS_TOKEN": "admin",
           "OS_ENDPOINT": f"{server.url}/placement",
           "OS_COMPUTE_ENDPOINT_OVERRIDE": f"{server.url}/compute/v2.1",
           "OS_IDENTITY_ENDPOINT_OVERRIDE": f"{server.url}/identity/v3",
           "OS_IMAGE_ENDPOINT_OVERRIDE": f"{server.url}/image",
           "OS_NETWORK_ENDPOINT_OVERRIDE": f"{server.url}/network"}
    argv = [*args] + (["-f", "json"] if json_out else [])
    rc, stdout, stderr = _command(argv, env)
    assert rc == 0, f"openstack {' '.join(argv)}\n{stdout}\n{stderr}"
    return json.loads(stdout) if json_out and stdout.strip() else None


def _command(argv: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    """`openstack argv`: in this worker's runner process (osc_runner.py), or as a process of
    its own with STOWAGE_OSC_SUBPROCESS=1 (a second slower per command, same CLI code)."""
    if os.environ.get("STOWAGE_OSC_SUBPROCESS") == "1":
        full = {k: v for k, v in os.environ.items() if not k.startswith("OS_")} | env
        # stdin is not a terminal here, so `image create` uploads it (empty) as the image data.
        done = subprocess.run(["openstack", *argv], env=full, capture_output=True, text=True,
                              timeout=_COMMAND_TIMEOUT, check=False,
                              stdin=subprocess.DEVNULL)
        return done.returncode, done.stdout, done.stderr
    return _Runner.shared().run(argv, env)


class _Runner:
    """The worker's `osc_runner` process, started on first use and ended with the worker."""

    _instance: _Runner | None = None

    @classmethod
    def shared(cls) -> _Runner:
        if cls._instance is None or cls._instance.proc.poll() is not None:
            cls._instance = cls()
            atexit.register(cls._instance.close)
        return cls._instance

    def __init__(self) -> None:
        to_runner_r, self._to_runner = os.pipe()
        self._from_runner, from_runner_w = os.pipe()
        env = {**os.environ, "OSC_RUNNER_FDS": f"{to_runner_r},{from_runner_w}"}
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.functional.osc_runner"],
                                     env=env, stdin=subprocess.DEVNULL, cwd=_REPO_ROOT,
                                     pass_fds=(to_runner_r, from_runner_w))
        os.close(to_runner_r)
        os.close(from_runner_w)
        self._requests = os.fdopen(self._to_runner, "w", encoding="utf-8")
        self._answers = os.fdopen(self._from_runner, encoding="utf-8")
        self._answer()  # {"ready": true}: the CLI is imported

    def _answer(self) -> dict[str, Any]:
        ready, _, _ = select.select([self._answers], [], [], _COMMAND_TIMEOUT)
        line = self._answers.readline() if ready else ""
        if not line:
            self.close()
            raise AssertionError("the openstack CLI runner died or hung (see stderr)")
        return dict(json.loads(line))

    def run(self, argv: list[str], env: dict[str, str]) -> tuple[int, str, str]:
        self._requests.write(json.dumps({"argv": argv, "env": env}) + "\n")
        self._requests.flush()
        answer = self._answer()
        return int(answer["rc"]), str(answer["stdout"]), str(answer["stderr"])

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._requests.close()
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        with contextlib.suppress(OSError):
            self._answers.close()


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
