"""The stock `openstack` CLI (python-openstackclient + osc-placement) against stowage.

Runs the CLI's own entry point (in tests/functional/osc_runner.py, which
imports it once per test worker; STOWAGE_OSC_SUBPROCESS=1 starts the console
script for each command instead), configured exactly as the README tells a
user to, against `stowage serve` with its default mounts.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tests.functional.conftest import LiveServer, serving
from tests.functional.osc import needs_osc, osc

pytestmark = needs_osc


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with serving("sqlite") as live:  # every service mounted, as plain `stowage serve`
        yield live


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
