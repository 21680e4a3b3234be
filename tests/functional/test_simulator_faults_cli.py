"""`stowage manage host fault add|list|clear`: the fault route from the shell (docs/faults.md).

    host1, host2 (equal; a server boots on host1 first)

The command runs as its own process against the live server's Compute API,
as an operator would run it beside a deployment.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.functional.conftest import Cloud
from tests.functional.faults import armed
from tests.functional.servers import boot, flavor, image, server


def _fault(cloud: Cloud, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    action, *rest = args
    return subprocess.run(
        [sys.executable, "-m", "stowage", "manage", "host", "fault", action, *rest,
         "--url", f"{cloud.live.url}/compute", "--database",
         f"sqlite:///{tmp_path / 'unused.db'}"],
        capture_output=True, text=True, timeout=120, check=False)


def test_add_list_and_clear(cloud: Cloud, tmp_path: Path) -> None:
    for name in ("host1", "host2"):
        cloud.add_host(name, vcpus=16, memory_mb=8192, disk_gb=100)
    added = _fault(cloud, tmp_path, "add", "host1", "spawn", "--times", "2", "--error",
                   "disk full")
    assert added.returncode == 0, added.stderr
    [line] = added.stdout.splitlines()
    fault_id, step, mode, left, error = line.split("\t")
    assert (step, mode, left, error) == ("spawn", "times", "2", "disk full")
    assert _fault(cloud, tmp_path, "add", "host1", "power_off", "--always").returncode == 0

    listed = _fault(cloud, tmp_path, "list", "host1")
    assert listed.returncode == 0, listed.stderr
    assert [row.split("\t")[1:4] for row in listed.stdout.splitlines()] == [
        ["power_off", "always", "-"], ["spawn", "times", "2"]]

    # Armed from the shell, the fault fails the build on host1; host2 takes it.
    server_id = boot(cloud, "vm", flavor(cloud, "small", 1, 512, 5), image(cloud))
    assert server(cloud, server_id)["OS-EXT-SRV-ATTR:host"] == "host2"
    assert [(f["step"], f["remaining"]) for f in armed(cloud, "host1")] == [
        ("power_off", None), ("spawn", 1)]

    one = _fault(cloud, tmp_path, "clear", "host1", "--id", fault_id)
    assert (one.returncode, one.stdout) == (0, "")
    assert [f["step"] for f in armed(cloud, "host1")] == ["power_off"]
    assert _fault(cloud, tmp_path, "clear", "host1").returncode == 0
    assert armed(cloud, "host1") == []


def test_refusals_exit_1_with_the_api_message(cloud: Cloud, tmp_path: Path) -> None:
    cloud.add_host("host1")
    unknown = _fault(cloud, tmp_path, "list", "nohost")
    assert unknown.returncode == 1
    assert unknown.stderr.strip() == "stowage: 404 Compute host nohost could not be found."
    gone = _fault(cloud, tmp_path, "clear", "host1", "--id", "no-such-fault")
    assert gone.returncode == 1
    assert gone.stderr.strip() == "stowage: 404 Fault no-such-fault could not be found."
    bad = _fault(cloud, tmp_path, "add", "host1", "spawn", "--times", "0")
    assert bad.returncode == 1
    assert bad.stderr.startswith("stowage: 400 Invalid input for field/attribute")
    assert armed(cloud, "host1") == []
