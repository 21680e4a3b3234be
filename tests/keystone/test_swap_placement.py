"""Replacing a running cloud's Placement with stowage, and going back (docs/deploy-openstack.md).

    openstack CLI (admin, password auth, endpoint from the catalog)
        |                                    Keystone (tests/keystone)
        v                                      ^ tokens validated by each Placement
    upstream Placement 16.0.0 (gunicorn, PostgreSQL "placement")
        -- stop; manage placement import --from placement -->
    stowage serve --services placement --placement-config <the same file> --database stowage
        -- stop; manage placement export --to placement_back -->
    upstream Placement 16.0.0 on placement_back

The world is built through the stock CLI on upstream; after each switch
(`openstack endpoint set --url`) the same CLI reads the same providers,
inventories, traits, aggregates, usages and allocations, and the allocation
made on stowage is read back on upstream after the rollback.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import BACKENDS
from tests.dbs import throwaway_database
from tests.functional.conftest import free_port
from tests.functional.osc import needs_osc
from tests.functional.processes import StowageProcess, answers_http
from tests.functional.upstream_placement import db_sync
from tests.keystone.fixture import Keystone
from tests.keystone.swap_cloud import (
    Cloud,
    UpstreamPlacement,
    placement_conf,
    register_placement,
    set_connection,
    stowage,
)

pytestmark = [needs_osc, pytest.mark.skipif("postgresql" not in BACKENDS,
                                            reason="the cloud's database is PostgreSQL")]

PROJECT = "5c0b3f37-1c1e-4a7b-8a35-6f3d39e1a001"
USER = "5c0b3f37-1c1e-4a7b-8a35-6f3d39e1a002"
AGGREGATE = "5c0b3f37-1c1e-4a7b-8a35-6f3d39e1a003"


def _switch(cloud: Cloud, url: str) -> None:
    """docs/deploy-openstack.md's step: every `placement` endpoint of the region to `url`."""
    listed = cloud.osc("endpoint", "list", "--service", "placement", "--region",
                       cloud.keystone.region)
    assert {e["Interface"] for e in listed} == {"public", "internal"}
    for endpoint in listed:
        cloud.osc("endpoint", "set", "--url", url, endpoint["ID"], json_out=False)


def _build_world(cloud: Cloud) -> dict[str, str]:
    """A compute node with a NUMA child holding a custom class, traits, an aggregate,
    and one instance's allocation; returns the uuids by name."""
    osc = cloud.osc
    cn = osc("resource", "provider", "create", "swap-cn1")["uuid"]
    numa = osc("resource", "provider", "create", "--parent-provider", cn,
               "swap-cn1-numa0")["uuid"]
    osc("resource", "provider", "inventory", "set", cn, "--resource", "VCPU=16",
        "--resource", "VCPU:allocation_ratio=4.0", "--resource", "MEMORY_MB=32768",
        "--resource", "MEMORY_MB:reserved=512", "--resource", "DISK_GB=500")
    osc("resource", "class", "create", "CUSTOM_SWAP_FPGA", json_out=False)
    osc("resource", "provider", "inventory", "set", numa, "--resource", "CUSTOM_SWAP_FPGA=2")
    osc("trait", "create", "CUSTOM_SWAP_RACK1", json_out=False)
    osc("resource", "provider", "trait", "set", cn, "--trait", "CUSTOM_SWAP_RACK1",
        "--trait", "HW_CPU_X86_AVX2")
    generation = osc("resource", "provider", "show", cn)["generation"]
    osc("resource", "provider", "aggregate", "set", cn, "--aggregate", AGGREGATE,
        "--generation", str(generation))
    vm1 = str(uuid.uuid4())
    osc("resource", "provider", "allocation", "set", vm1, "--project-id", PROJECT,
        "--user-id", USER, "--consumer-type", "INSTANCE",
        "--allocation", f"rp={cn},VCPU=2,MEMORY_MB=2048,DISK_GB=20",
        "--allocation", f"rp={numa},CUSTOM_SWAP_FPGA=1")
    return {"cn": cn, "numa": numa, "vm1": vm1}


# What an allocation changes: generations (providers, allocations) and usages (the
# CLI's inventory list shows each class's `used`).
CHANGED_BY_ALLOCATING = ("providers", "inventory cn", "usage cn", "usage project",
                         "allocations")


def _read(cloud: Cloud, world: dict[str, str],
          only: tuple[str, ...] | None = None) -> dict[str, Any]:
    """What an operator checks (`only` those reads), each answer sorted so that order
    does not count."""
    osc = cloud.osc
    cn, numa = world["cn"], world["numa"]

    def rows(answer: Any, key: str = "resource_class") -> Any:
        return sorted(answer, key=lambda row: str(row[key]))

    reads: dict[str, Callable[[], Any]] = {
        "providers": lambda: rows(osc("resource", "provider", "list"), "name"),
        "inventory cn": lambda: rows(osc("resource", "provider", "inventory", "list", cn)),
        "inventory numa": lambda: rows(osc("resource", "provider", "inventory", "list",
                                           numa)),
        "usage cn": lambda: rows(osc("resource", "provider", "usage", "show", cn)),
        # 1.37: upstream 16.0.0 on PostgreSQL answers 500 to 1.38's per consumer type
        # project usages (a GROUP BY PostgreSQL refuses).
        "usage project": lambda: rows(osc("resource", "usage", "show", PROJECT,
                                          version="1.37")),
        "traits cn": lambda: rows(osc("resource", "provider", "trait", "list", cn), "name"),
        "aggregates cn": lambda: rows(osc("resource", "provider", "aggregate", "list", cn),
                                      "uuid"),
    }

    def allocations(consumer: str) -> Callable[[], Any]:
        return lambda: rows(osc("resource", "provider", "allocation", "show", consumer),
                            "resource_provider")
    reads.update({f"allocations {name}": allocations(consumer)
                  for name, consumer in world.items() if name.startswith("vm")})
    return {key: read() for key, read in reads.items()
            if only is None or key.startswith(only)}


def _allocate(cloud: Cloud, world: dict[str, str], name: str) -> None:
    """A new instance's allocation on the compute node."""
    world[name] = str(uuid.uuid4())
    cloud.osc("resource", "provider", "allocation", "set", world[name], "--project-id",
              PROJECT, "--user-id", USER, "--consumer-type", "INSTANCE", "--allocation",
              f"rp={world['cn']},VCPU=4,MEMORY_MB=4096")


def _stowage_serving(tmp_path: Path, conf: Path, database: str, port: int) -> StowageProcess:
    """docs/deploy-openstack.md's serve line: the kept file, stowage's database."""
    serve = StowageProcess("stowage-placement", [
        "serve", "--services", "placement", "--placement-config", str(conf),
        "--database", database, "--bind", f"127.0.0.1:{port}"],
        tmp_path, answers_http(f"http://127.0.0.1:{port}/"))
    serve.start()
    serve.wait_ready()
    return serve


def _audit(conf: Path, database: str, world: dict[str, str]) -> None:
    """`manage placement audit` on the imported database: no provider over capacity;
    with Nova outside stowage, each consumer is one stowage's Compute does not know."""
    done = stowage("--placement-config", str(conf), "manage", "placement", "audit",
                   "--database", database, status=1)
    [line] = done.stdout.splitlines()
    assert line.startswith(f"{world['vm1']} holds ") and line.endswith("unknown consumer")
    assert "'CUSTOM_SWAP_FPGA': 1" in line
    assert "1 problem(s) found" in done.stderr


def _upstream_url(url: str) -> str:
    """The URL as upstream's placement.conf names it (psycopg2, which upstream uses)."""
    return url.replace("postgresql+psycopg://", "postgresql+psycopg2://", 1)


def test_swap_upstream_placement_for_stowage_and_back(tmp_path: Path,
                                                      keystone: Keystone) -> None:
    keystone.ensure_running()
    cloud = Cloud(keystone)
    conf_dir = tmp_path / "etc-placement"
    conf_dir.mkdir()
    conf = conf_dir / "placement.conf"
    with throwaway_database("postgresql") as upstream_db, \
            throwaway_database("postgresql") as stowage_db, \
            throwaway_database("postgresql") as back_db:
        placement_conf(conf, keystone, _upstream_url(upstream_db))
        db_sync(upstream_db)
        upstream = UpstreamPlacement(conf_dir, free_port()).start()
        stopped: list[Callable[[], Any]] = [upstream.stop]
        try:
            register_placement(keystone, upstream.url)
            world = _build_world(cloud)
            before = _read(cloud, world)
            assert [p["name"] for p in before["providers"]] == ["swap-cn1", "swap-cn1-numa0"]
            assert {u["resource_class"]: u["usage"] for u in before["usage cn"]} == {
                "VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20}

            upstream.stop()
            stowage("manage", "placement", "import", "--from", _upstream_url(upstream_db),
                    "--database", stowage_db)
            _audit(conf, stowage_db, world)
            port = free_port()
            serve = _stowage_serving(tmp_path, conf, stowage_db, port)
            stopped.append(serve.stop)
            _switch(cloud, f"http://127.0.0.1:{port}")
            assert _read(cloud, world) == before
            _allocate(cloud, world, "vm2")
            # Only what the allocation changes is read again: the rest was just compared.
            on_stowage = {**before, **_read(cloud, world, CHANGED_BY_ALLOCATING)}
            assert {u["resource_class"]: u["usage"] for u in on_stowage["usage cn"]} == {
                "VCPU": 6, "MEMORY_MB": 6144, "DISK_GB": 20}

            serve.stop()
            stowage("manage", "placement", "export", "--to", _upstream_url(back_db),
                    "--database", stowage_db)
            set_connection(conf, _upstream_url(back_db))
            back = UpstreamPlacement(conf_dir, free_port()).start()
            stopped.append(back.stop)
            _switch(cloud, back.url)
            assert _read(cloud, world) == on_stowage
            _allocate(cloud, world, "vm3")
            assert len(_read(cloud, world, ("allocations vm3",))["allocations vm3"]) == 1
        finally:
            for stop in reversed(stopped):
                stop()
