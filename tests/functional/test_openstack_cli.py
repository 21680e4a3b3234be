"""The stock `openstack` CLI (python-openstackclient + osc-placement) against stowage.

Runs the real console script in a subprocess, configured exactly as the README
tells a user to, against `stowage serve` with its default mounts.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from stowage import config
from tests.dbs import throwaway_database
from tests.functional.conftest import LiveServer, start_server

pytestmark = pytest.mark.skipif(shutil.which("openstack") is None,
                                reason="python-openstackclient is not installed")


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with throwaway_database("sqlite") as url:
        live = start_server(config.Settings(database=url), at_root=False)
        try:
            yield live
        finally:
            live.stop()
            live.db.dispose()


def osc(server: LiveServer, *args: str, json_out: bool = True) -> Any:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    env.update(OS_AUTH_TYPE="admin_token", OS_TOKEN="admin",
               OS_ENDPOINT=f"{server.url}/placement",
               OS_IDENTITY_ENDPOINT_OVERRIDE=f"{server.url}/identity/v3")
    cmd = ["openstack", *args] + (["-f", "json"] if json_out else [])
    result = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120,
                            check=False)
    assert result.returncode == 0, f"{' '.join(cmd)}\n{result.stdout}\n{result.stderr}"
    return json.loads(result.stdout) if json_out and result.stdout.strip() else None


def test_provider_lifecycle_with_inventory_traits_aggregates(server: LiveServer) -> None:
    created = osc(server, "resource", "provider", "create", "cli-compute1")
    rp = created["uuid"]
    assert created["name"] == "cli-compute1"
    assert created["root_provider_uuid"] == rp

    listed = osc(server, "resource", "provider", "list")
    assert [p["uuid"] for p in listed] == [rp]
    assert osc(server, "resource", "provider", "show", rp)["name"] == "cli-compute1"

    inv = osc(server, "resource", "provider", "inventory", "set", rp,
              "--resource", "VCPU=8", "--resource", "MEMORY_MB=4096",
              "--resource", "VCPU:allocation_ratio=2.0")
    assert {row["resource_class"] for row in inv} == {"VCPU", "MEMORY_MB"}
    rows = osc(server, "resource", "provider", "inventory", "list", rp)
    vcpu = next(r for r in rows if r["resource_class"] == "VCPU")
    assert vcpu["total"] == 8 and vcpu["allocation_ratio"] == 2.0

    traits = osc(server, "resource", "provider", "trait", "set", rp,
                 "--trait", "HW_CPU_X86_AVX2", "--trait", "COMPUTE_VOLUME_MULTI_ATTACH")
    assert {t["name"] for t in traits} == {"HW_CPU_X86_AVX2", "COMPUTE_VOLUME_MULTI_ATTACH"}

    generation = osc(server, "resource", "provider", "show", rp)["generation"]
    agg = str(uuid.uuid4())
    aggs = osc(server, "resource", "provider", "aggregate", "set", rp, "--aggregate", agg,
               "--generation", str(generation))
    assert [a["uuid"] for a in aggs] == [agg]

    cands = osc(server, "allocation", "candidate", "list", "--resource", "VCPU=2",
                "--resource", "MEMORY_MB=512", "--required", "HW_CPU_X86_AVX2")
    assert {c["resource provider"] for c in cands} == {rp}

    consumer, project, user = (str(uuid.uuid4()) for _ in range(3))
    osc(server, "resource", "provider", "allocation", "set", consumer,
        "--allocation", f"rp={rp},VCPU=2,MEMORY_MB=512",
        "--project-id", project, "--user-id", user)
    usages = osc(server, "resource", "provider", "usage", "show", rp)
    used = {u["resource_class"]: u["usage"] for u in usages}
    assert used == {"VCPU": 2, "MEMORY_MB": 512}
    per_project = osc(server, "resource", "usage", "show", project)
    assert {u["resource_class"]: u["usage"] for u in per_project} == used

    osc(server, "resource", "provider", "allocation", "delete", consumer, json_out=False)
    osc(server, "resource", "provider", "delete", rp, json_out=False)
    assert osc(server, "resource", "provider", "list") == []
