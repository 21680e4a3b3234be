"""GET /os-stowage-capacity: how many more of each flavor fit, against hand-computed numbers.

    hostA 4 VCPU 4096 MB 40 GB, zone zoneA      one small server on it
    hostB 2 VCPU 8192 MB 100 GB, aggregate agg-b
    hostC 4 VCPU 4096 MB 40 GB, forced down     (not counted)
    hostD 1 VCPU 256 MB 3 GB                    no flavor fits: its room is stranded
    (every allocation ratio 1)

    small 1/512/5:   hostA min(3, 3584/512, 35/5) = 3, hostB min(2, 16, 20) = 2
    medium 2/1024/10: hostA min(1, 3, 3) = 1,         hostB min(1, 8, 10) = 1
    big 4/4096/40:   none
"""

from __future__ import annotations

from tests.functional.conftest import Cloud
from tests.functional.servers import boot, flavor, force_down, image

RATIO_1 = {"cpu_allocation_ratio": 1.0, "ram_allocation_ratio": 1.0}


def test_capacity_per_flavor_zone_aggregate_cell_and_stranded_room(cloud: Cloud) -> None:
    cloud.add_host("hostA", vcpus=4, memory_mb=4096, disk_gb=40, availability_zone="zoneA",
                   **RATIO_1)
    small = flavor(cloud, "small", 1, 512, 5)
    flavor(cloud, "medium", 2, 1024, 10)
    flavor(cloud, "big", 4, 4096, 40)
    boot(cloud, "vm", small, image(cloud))
    cloud.add_host("hostB", vcpus=2, memory_mb=8192, disk_gb=100, **RATIO_1)
    cloud.add_host("hostC", vcpus=4, memory_mb=4096, disk_gb=40, **RATIO_1)
    force_down(cloud, "hostC")
    cloud.add_host("hostD", vcpus=1, memory_mb=256, disk_gb=3, **RATIO_1)
    resp = cloud.compute.post("/os-aggregates", json={"aggregate": {"name": "agg-b"}})
    assert resp.status_code == 200, resp.text
    agg = resp.json()["aggregate"]["id"]
    resp = cloud.compute.post(f"/os-aggregates/{agg}/action",
                              json={"add_host": {"host": "hostB"}})
    assert resp.status_code == 200, resp.text

    resp = cloud.compute.get("/os-stowage-capacity")
    assert resp.status_code == 200, resp.text
    found = {f["flavor"]: f for f in resp.json()["capacity"]["flavors"]}
    assert {n: (f["total"], f["per_host"]) for n, f in found.items()} == {
        "small": (5, {"hostA": 3, "hostB": 2}),
        "medium": (2, {"hostA": 1, "hostB": 1}),
        "big": (0, {})}
    assert found["small"]["per_zone"] == {"zoneA": 3, "nova": 2}
    assert found["small"]["per_aggregate"] == {"agg-b": 2}
    assert found["small"]["per_cell"] == {"cell1": 5}
    assert found["medium"]["per_zone"] == {"zoneA": 1, "nova": 1}
    frag = resp.json()["capacity"]["fragmentation"]
    assert frag["free"] == {"VCPU": 3 + 2 + 1, "MEMORY_MB": 3584 + 8192 + 256,
                            "DISK_GB": 35 + 100 + 3}
    assert frag["stranded"] == {"VCPU": 1, "MEMORY_MB": 256, "DISK_GB": 3}
    assert frag["hosts"] == {"hostD": {"VCPU": 1, "MEMORY_MB": 256, "DISK_GB": 3}}

    only = cloud.compute.get("/os-stowage-capacity", params={"flavor": "medium"}).json()
    assert [f["flavor"] for f in only["capacity"]["flavors"]] == ["medium"]


def test_capacity_and_drain_are_admin_only(cloud: Cloud) -> None:
    cloud.add_host("host1")
    with cloud.client("demo:p1", roles=("member", "reader")) as member:
        assert member.get("/os-stowage-capacity").status_code == 403
        assert member.get("/os-stowage-drain/host1").status_code == 403
    assert cloud.compute.get("/os-stowage-drain/nohost").status_code == 404
