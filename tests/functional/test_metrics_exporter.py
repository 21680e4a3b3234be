"""openstack-exporter's gauges on `GET /metrics` equal what the APIs answer, for a varied world.

    h1  16 VCPU ×16, 32 GiB ×1.5, 1000 GB        2 servers (small, big); aggregate "fast"
    h2   8 VCPU ×4 (2 reserved), 16 GiB ×1.0 (1024 MB reserved); zone az2 (an aggregate)
    h3  default sizes, its service disabled       nothing on it
    pool  a provider made over the Placement API: CUSTOM_POOL 10 (1 reserved) ×2.0,
          3 of it held by a consumer of its own

Every (provider, class) Placement lists is a series with the same total,
reserved, allocation ratio, usage and generation; each hypervisor's gauges
are its os-hypervisors numbers, each service's agent_state its os-services
state; the flavor and server counts are the API's.
"""

from __future__ import annotations

import re
import uuid as uuidlib
from pathlib import Path

import pytest

from tests.functional.conftest import Cloud
from tests.functional.metrics_scrape import by_label, scrape, series, value
from tests.functional.servers import boot, flavor, image, settle

MIB = 1024 * 1024
DOC = Path(__file__).resolve().parents[2] / "docs" / "operations.md"
GIB = 1024 * MIB


def _world(cloud: Cloud) -> None:
    cloud.add_host("h1")
    cloud.add_host("h2", vcpus=8, memory_mb=16384, cpu_allocation_ratio=4.0,
                   ram_allocation_ratio=1.0, reserved={"VCPU": 2, "MEMORY_MB": 1024})
    cloud.add_host("h3")
    settle(cloud)
    _aggregate(cloud, "zone2", "h2", {"availability_zone": "az2"})
    _aggregate(cloud, "fast", "h1", {"ssd": "true"})
    services = cloud.compute.get("/os-services?binary=nova-compute").json()["services"]
    h3 = next(s for s in services if s["host"] == "h3")
    resp = cloud.compute.put(f"/os-services/{h3['id']}", json={"status": "disabled",
                                                              "disabled_reason": "repairs"})
    assert resp.status_code == 200, resp.text
    small, big = flavor(cloud, "small", 1, 512, 10), flavor(cloud, "big", 4, 4096, 40)
    img = image(cloud)
    boot(cloud, "a", small, img, availability_zone="nova")
    boot(cloud, "b", big, img, availability_zone="nova")
    _pool(cloud)


def _aggregate(cloud: Cloud, name: str, host: str, metadata: dict[str, str]) -> None:
    resp = cloud.compute.post("/os-aggregates", json={"aggregate": {"name": name}})
    assert resp.status_code == 200, resp.text
    agg = resp.json()["aggregate"]["id"]
    for body in ({"add_host": {"host": host}}, {"set_metadata": {"metadata": metadata}}):
        resp = cloud.compute.post(f"/os-aggregates/{agg}/action", json=body)
        assert resp.status_code == 200, resp.text


def _pool(cloud: Cloud) -> None:
    """A provider of a custom class with a consumer of its own, over the Placement API."""
    pool, consumer = str(uuidlib.uuid4()), str(uuidlib.uuid4())
    p = cloud.placement
    assert p.put("/resource_classes/CUSTOM_POOL").status_code in (201, 204)
    assert p.post("/resource_providers", json={"name": "pool", "uuid": pool}).status_code == 200
    resp = p.put(f"/resource_providers/{pool}/inventories", json={
        "resource_provider_generation": 0,
        "inventories": {"CUSTOM_POOL": {"total": 10, "reserved": 1,
                                        "allocation_ratio": 2.0}}})
    assert resp.status_code == 200, resp.text
    resp = p.put(f"/allocations/{consumer}", json={
        "allocations": {pool: {"resources": {"CUSTOM_POOL": 3}}},
        "project_id": "p", "user_id": "u", "consumer_generation": None,
        "consumer_type": "INSTANCE"})
    assert resp.status_code == 204, resp.text


def test_placement_gauges_are_placements_numbers(cloud: Cloud) -> None:
    _world(cloud)
    samples = scrape(cloud.compute, "../../metrics")
    expected: dict[tuple[str, str], dict[str, float]] = {}
    for rp in cloud.placement.get("/resource_providers").json()["resource_providers"]:
        inv = cloud.placement.get(f"/resource_providers/{rp['uuid']}/inventories").json()
        used = cloud.placement.get(f"/resource_providers/{rp['uuid']}/usages").json()
        for rc, record in inv["inventories"].items():
            expected[(rp["name"], rc)] = {
                "total": record["total"], "reserved": record["reserved"],
                "allocation_ratio": record["allocation_ratio"],
                "usage": used["usages"][rc], "generation": rp["generation"]}
    assert {rp for rp, _ in expected} == {"h1", "h2", "h3", "pool"}
    for field in ("total", "reserved", "allocation_ratio", "usage", "generation"):
        found = by_label(samples, f"openstack_placement_resource_{field}", "hostname",
                         "resourcetype")
        assert dict(found) == {key: pytest.approx(v[field]) for key, v in expected.items()}
    assert expected[("pool", "CUSTOM_POOL")]["usage"] == 3
    assert expected[("h1", "VCPU")]["usage"] == 5
    assert value(samples, "openstack_placement_up") == 1


def test_nova_gauges_are_the_compute_apis_numbers(cloud: Cloud) -> None:
    _world(cloud)
    samples = scrape(cloud.compute, "../../metrics")
    old = {"openstack-api-version": "compute 2.87"}
    hypervisors = cloud.compute.get("/os-hypervisors/detail", headers=old).json()["hypervisors"]
    fields = {"running_vms": ("running_vms", 1), "current_workload": ("current_workload", 1),
              "vcpus_available": ("vcpus", 1), "vcpus_used": ("vcpus_used", 1),
              "memory_available_bytes": ("memory_mb", MIB),
              "memory_used_bytes": ("memory_mb_used", MIB),
              "local_storage_available_bytes": ("local_gb", GIB),
              "local_storage_used_bytes": ("local_gb_used", GIB),
              "free_disk_bytes": ("free_disk_gb", GIB)}
    for metric, (key, unit) in fields.items():
        found = by_label(samples, f"openstack_nova_{metric}", "hostname")
        assert dict(found) == {(h["hypervisor_hostname"],): h[key] * unit for h in hypervisors}
    placed = by_label(samples, "openstack_nova_running_vms", "hostname", "availability_zone",
                      "aggregates")
    assert set(placed) == {("h1", "", "fast"), ("h2", "az2", ""), ("h3", "", "")}
    services = cloud.compute.get("/os-services").json()["services"]
    states = by_label(samples, "openstack_nova_agent_state", "id", "hostname", "service",
                      "adminState", "zone", "disabledReason")
    assert dict(states) == {
        (s["id"], s["host"], s["binary"], s["status"], s["zone"], s["disabled_reason"] or ""):
        (1 if s["state"] == "up" else 0) for s in services}
    servers = cloud.compute.get("/servers?all_tenants=1").json()["servers"]
    assert value(samples, "openstack_nova_total_vms") == len(servers) == 2
    flavors = cloud.compute.get("/flavors?is_public=None").json()["flavors"]
    assert value(samples, "openstack_nova_flavors") == len(flavors)
    assert {dict(labels)["name"] for labels in series(samples, "openstack_nova_flavor")} == \
        {f["name"] for f in flavors}
    assert value(samples, "openstack_nova_availability_zones") == 2
    assert value(samples, "stowage_cell_up", cell="cell1") == 1


def test_every_exported_metric_is_documented(cloud: Cloud) -> None:
    _world(cloud)
    doc = DOC.read_text(encoding="utf-8")
    names = {re.sub(r"_(bucket|sum|count|created)$", "", name)
             for name, _ in scrape(cloud.compute, "../../metrics")}
    assert "stowage_http_requests_total" in names
    assert [name for name in sorted(names) if f"`{name}" not in doc] == []
