"""Quotas on servers: create and resize at the edge, the VERIFY_RESIZE counting rule,
server groups and the usage report.

    host1, host2: 16 vCPU, 8 GiB each; project "admin" limited to 4 cores
    small = 1 vCPU / 512 MB, large = 2 vCPU / 1024 MB, big = 3 vCPU / 1536 MB
"""

from __future__ import annotations

import datetime

import pytest
import sqlalchemy as sa

from stowage.compute import quota_checks
from stowage.compute import tables as compute_tables
from tests.functional.conftest import Cloud
from tests.functional.servers import action, assert_invariants, boot, flavor, image, server, settle


@pytest.fixture
def world(cloud: Cloud) -> dict[str, str]:
    for host in ("host1", "host2"):
        cloud.add_host(host, vcpus=16, memory_mb=8192, disk_gb=100)
    resp = cloud.compute.put("/os-quota-sets/admin", json={"quota_set": {"cores": 4}})
    assert resp.status_code == 200, resp.text
    return {"small": flavor(cloud, "small", 1, 512, 5),
            "large": flavor(cloud, "large", 2, 1024, 5),
            "big": flavor(cloud, "big", 3, 1536, 5), "image": image(cloud)}


def _in_use(cloud: Cloud) -> dict[str, int]:
    detail = cloud.compute.get("/os-quota-sets/admin/detail").json()["quota_set"]
    return {r: detail[r]["in_use"] for r in ("instances", "cores", "ram")}


def _server_count(cloud: Cloud) -> int:
    return len(cloud.compute.get("/servers").json()["servers"])


def _post(cloud: Cloud, flavor_id: str, image_id: str, **extra: object) -> dict[str, object]:
    body = {"server": {"name": "vm", "flavorRef": flavor_id, "imageRef": image_id,
                       "networks": "none", **extra}}
    resp = cloud.compute.post("/servers", json=body)
    settle(cloud)
    return {"status": resp.status_code, "body": resp.json()}


def test_create_exactly_at_the_limit_passes_one_over_fails(cloud: Cloud,
                                                          world: dict[str, str]) -> None:
    boot(cloud, "a", world["large"], world["image"])
    boot(cloud, "b", world["large"], world["image"])  # 4 of 4 cores
    assert _in_use(cloud) == {"instances": 2, "cores": 4, "ram": 2048}
    refused = _post(cloud, world["small"], world["image"])
    assert refused == {"status": 403, "body": {"forbidden": {"code": 403, "message":
                       "Quota exceeded for cores: Requested 1, but already used 4 of 4 cores"}}}
    assert _server_count(cloud) == 2
    limits = cloud.compute.get("/limits").json()["limits"]["absolute"]
    assert (limits["totalCoresUsed"], limits["totalInstancesUsed"]) == (4, 2)


def test_multi_create_is_lowered_to_what_fits(cloud: Cloud, world: dict[str, str]) -> None:
    made = _post(cloud, world["small"], world["image"], min_count=2, max_count=6,
                 return_reservation_id=True)
    assert made["status"] == 202
    assert _server_count(cloud) == 4  # 4 cores of 1 vCPU
    refused = _post(cloud, world["small"], world["image"], min_count=2, max_count=3)
    assert refused["body"] == {"forbidden": {"code": 403, "message":
                               "Quota exceeded for cores: Requested 3, but already used 4 "
                               "of 4 cores"}}
    cloud.compute.put("/os-quota-sets/admin", json={"quota_set": {"instances": 4, "cores": 20}})
    refused = _post(cloud, world["small"], world["image"], min_count=1, max_count=2)
    assert refused["body"]["forbidden"]["message"] == (  # type: ignore[index]
        "Quota exceeded for instances: Requested 1-2, but already used 4 of 4 instances")
    assert _server_count(cloud) == 4


def test_verify_resize_counts_the_larger_flavor(cloud: Cloud, world: dict[str, str]) -> None:
    grown = boot(cloud, "grown", world["small"], world["image"])
    action(cloud, grown, {"resize": {"flavorRef": world["large"]}})
    assert server(cloud, grown)["status"] == "VERIFY_RESIZE"
    assert _in_use(cloud) == {"instances": 1, "cores": 2, "ram": 1024}  # not 1 + 2
    action(cloud, grown, {"revertResize": None})
    assert _in_use(cloud) == {"instances": 1, "cores": 1, "ram": 512}

    shrunk = boot(cloud, "shrunk", world["large"], world["image"])
    action(cloud, shrunk, {"resize": {"flavorRef": world["small"]}})
    assert _in_use(cloud) == {"instances": 2, "cores": 3, "ram": 1536}  # still 2 for shrunk
    action(cloud, shrunk, {"confirmResize": None}, status=204)
    assert _in_use(cloud) == {"instances": 2, "cores": 2, "ram": 1024}


def test_resize_over_the_quota_is_refused_and_changes_nothing(cloud: Cloud,
                                                              world: dict[str, str]) -> None:
    cloud.compute.put("/os-quota-sets/admin", json={"quota_set": {"cores": 3}})
    first = boot(cloud, "first", world["small"], world["image"])
    boot(cloud, "second", world["small"], world["image"])
    resp = action(cloud, first, {"resize": {"flavorRef": world["big"]}}, status=403)
    assert resp.json() == {"forbidden": {"code": 403, "message":  # 2 used + 2 more > 3
                           "Quota exceeded for cores: Requested 2, but already used 2 of 3 "
                           "cores"}}
    assert server(cloud, first)["status"] == "ACTIVE"
    assert server(cloud, first)["flavor"]["vcpus"] == 1
    assert migrations_of_count(cloud) == 0
    action(cloud, first, {"resize": {"flavorRef": world["large"]}})  # 2 + 1 = 3, at the edge
    assert server(cloud, first)["status"] == "VERIFY_RESIZE"


def migrations_of_count(cloud: Cloud) -> int:
    return len(cloud.compute.get("/os-migrations").json()["migrations"])


def test_server_group_and_member_quotas(cloud: Cloud, world: dict[str, str]) -> None:
    cloud.compute.put("/os-quota-sets/admin",
                      json={"quota_set": {"server_groups": 1, "server_group_members": 1}})
    body = {"server_group": {"name": "g", "policy": "anti-affinity"}}
    group = cloud.compute.post("/os-server-groups", json=body)
    assert group.status_code == 200, group.text
    refused = cloud.compute.post("/os-server-groups", json=body)
    assert refused.json() == {"forbidden": {"code": 403, "message":
                              "Quota exceeded, too many server groups."}}
    assert len(cloud.compute.get("/os-server-groups").json()["server_groups"]) == 1
    hints = {"group": group.json()["server_group"]["id"]}
    boot(cloud, "member", world["small"], world["image"], hints=hints)
    resp = cloud.compute.post("/servers", json={
        "server": {"name": "second", "flavorRef": world["small"], "imageRef": world["image"],
                   "networks": "none"}, "os:scheduler_hints": hints})
    assert resp.json() == {"forbidden": {"code": 403, "message":
                           "Quota exceeded, too many servers in group"}}
    assert _server_count(cloud) == 1


def test_metadata_items_quota(cloud: Cloud, world: dict[str, str]) -> None:
    cloud.compute.put("/os-quota-sets/admin", json={"quota_set": {"metadata_items": 1}})
    refused = _post(cloud, world["small"], world["image"], metadata={"a": "1", "b": "2"})
    assert refused["body"] == {"forbidden": {"code": 403, "message":
                               "Maximum number of metadata items exceeds 1"}}
    assert _post(cloud, world["small"], world["image"], metadata={"a": "1"})["status"] == 202


def test_metadata_api_counts_against_the_same_quota(cloud: Cloud,
                                                    world: dict[str, str]) -> None:
    uuid = boot(cloud, "meta", world["small"], world["image"])
    cloud.compute.put("/os-quota-sets/admin", json={"quota_set": {"metadata_items": 1}})
    assert cloud.compute.put(f"/servers/{uuid}/metadata/a", json={"meta": {"a": "1"}}
                             ).status_code == 200
    refused = cloud.compute.post(f"/servers/{uuid}/metadata", json={"metadata": {"b": "2"}})
    assert refused.status_code == 403
    assert refused.json()["forbidden"]["message"] == "Maximum number of metadata items exceeds 1"
    assert cloud.compute.get(f"/servers/{uuid}/metadata").json() == {"metadata": {"a": "1"}}


SSH_KEY = ("ssh-ed25519 "
           "AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl")


def test_key_pairs_quota(cloud: Cloud) -> None:
    cloud.compute.put("/os-quota-sets/admin", json={"quota_set": {"key_pairs": 1}})
    assert cloud.compute.post("/os-keypairs", json={"keypair": {
        "name": "k1", "public_key": SSH_KEY}}).status_code == 201
    refused = cloud.compute.post("/os-keypairs", json={"keypair": {
        "name": "k2", "public_key": SSH_KEY}})
    assert refused.json() == {"forbidden": {"code": 403, "message":
                              "Quota exceeded, too many key pairs."}}
    names = [k["keypair"]["name"] for k in cloud.compute.get("/os-keypairs").json()["keypairs"]]
    assert names == ["k1"]
    in_use = cloud.compute.get("/os-quota-sets/admin/detail", params={"user_id": "admin"}
                              ).json()["quota_set"]["key_pairs"]
    assert (in_use["in_use"], in_use["limit"]) == (1, 1)


def _launched(cloud: Cloud, uuid: str, launched: datetime.datetime,
              terminated: datetime.datetime | None = None) -> None:
    table = compute_tables.instances
    with cloud.live.cell_db.write() as conn:
        conn.execute(sa.update(table).where(table.c.uuid == uuid).values(
            launched_at=launched, terminated_at=terminated))


def test_usage_report_over_a_time_window(cloud: Cloud, world: dict[str, str]) -> None:
    start = datetime.datetime(2024, 1, 1)
    running = boot(cloud, "running", world["large"], world["image"])
    gone = boot(cloud, "gone", world["small"], world["image"])
    _launched(cloud, running, start + datetime.timedelta(hours=2))
    _launched(cloud, gone, start - datetime.timedelta(hours=5),
              start + datetime.timedelta(hours=1))
    window = {"start": "2024-01-01T00:00:00", "end": "2024-01-01T10:00:00"}
    resp = cloud.compute.get("/os-simple-tenant-usage/admin", params=window)
    assert resp.status_code == 200, resp.text
    usage = resp.json()["tenant_usage"]
    assert usage["total_hours"] == pytest.approx(9.0)  # 8 h running + 1 h gone
    assert usage["total_vcpus_usage"] == pytest.approx(2 * 8 + 1 * 1)
    assert usage["total_memory_mb_usage"] == pytest.approx(1024 * 8 + 512 * 1)
    assert usage["total_local_gb_usage"] == pytest.approx(5 * 9)
    assert (usage["start"], usage["stop"]) == ("2024-01-01T00:00:00.000000",
                                               "2024-01-01T10:00:00.000000")
    by_id = {s["instance_id"]: s for s in usage["server_usages"]}
    assert by_id[gone]["state"] == "terminated" and by_id[gone]["uptime"] == 6 * 3600
    assert by_id[running]["flavor"] == "large" and by_id[running]["state"] == "active"

    page = cloud.compute.get("/os-simple-tenant-usage",
                             params={**window, "detailed": "1", "limit": "1"}).json()
    assert len(page["tenant_usages"][0]["server_usages"]) == 1
    assert "marker=" in page["tenant_usages_links"][0]["href"]
    outside = cloud.compute.get("/os-simple-tenant-usage/admin",
                                params={"start": "2023-01-01T00:00:00",
                                        "end": "2023-01-02T00:00:00"})
    assert outside.json() == {"tenant_usage": {}}
    backwards = cloud.compute.get("/os-simple-tenant-usage/admin",
                                  params={"start": window["end"], "end": window["start"]})
    assert backwards.status_code == 400
    assert cloud.compute.get("/os-simple-tenant-usage/admin",
                             params={"start": "yesterday"}).status_code == 400


def test_usage_without_a_window_is_the_instant_now(cloud: Cloud,
                                                  world: dict[str, str]) -> None:
    """Nova reads `start` and `end` as now, one after the other: a 200 listing what runs."""
    running = boot(cloud, "running", world["large"], world["image"])
    shown = cloud.compute.get("/os-simple-tenant-usage/admin")
    assert shown.status_code == 200, shown.text
    usage = shown.json()["tenant_usage"]
    assert [s["instance_id"] for s in usage["server_usages"]] == [running]
    assert usage["start"] <= usage["stop"] and usage["total_hours"] < 0.01
    listed = cloud.compute.get("/os-simple-tenant-usage", params={"detailed": "1"})
    assert listed.status_code == 200, listed.text
    assert [(u["tenant_id"], len(u["server_usages"]))
            for u in listed.json()["tenant_usages"]] == [("admin", 1)]
    since = cloud.compute.get("/os-simple-tenant-usage/admin",
                              params={"start": "2024-01-01T00:00:00"})
    assert since.json()["tenant_usage"]["server_usages"][0]["instance_id"] == running
    until_past = cloud.compute.get("/os-simple-tenant-usage/admin",
                                   params={"end": "2024-01-01T00:00:00"})
    assert until_past.status_code == 400
    assert "The start time cannot occur after the end time." in until_past.text


def test_unshelve_of_an_offloaded_server_needs_its_cores_back(cloud: Cloud,
                                                               world: dict[str, str]) -> None:
    shelved = boot(cloud, "shelved", world["large"], world["image"])
    action(cloud, shelved, {"shelve": None})
    assert server(cloud, shelved)["status"] == "SHELVED_OFFLOADED"
    assert _in_use(cloud) == {"instances": 1, "cores": 0, "ram": 0}
    boot(cloud, "meanwhile", world["big"], world["image"])  # 3 of 4 cores
    resp = action(cloud, shelved, {"unshelve": None}, status=403)
    assert resp.json() == {"forbidden": {"code": 403, "message":
                           "Quota exceeded for resources: ['cores']"}}
    assert server(cloud, shelved)["status"] == "SHELVED_OFFLOADED"
    cloud.compute.put("/os-quota-sets/admin", json={"quota_set": {"cores": 5}})
    action(cloud, shelved, {"unshelve": None})  # 3 + 2 = 5, at the edge
    assert server(cloud, shelved)["status"] == "ACTIVE"


def test_a_create_that_lost_a_race_is_undone_by_the_recheck(
        cloud: Cloud, world: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """As if a concurrent request had counted before this one wrote: the first check
    passes everything, the recheck after the write finds the project over."""
    boot(cloud, "a", world["large"], world["image"])
    cloud.compute.put("/os-quota-sets/admin", json={"quota_set": {"instances": 1}})
    monkeypatch.setattr(quota_checks, "instances_that_fit",
                        lambda conn, owner, flavor, low, high: high)
    refused = _post(cloud, world["small"], world["image"])
    assert refused["body"] == {"forbidden": {"code": 403, "message":
                               "Quota exceeded for instances: Requested 1, but already used "
                               "2 of 1 instances"}}
    assert _server_count(cloud) == 1
    assert_invariants(cloud)


def test_a_user_limit_below_the_project_one_refuses_that_user_only(
        cloud: Cloud, world: dict[str, str]) -> None:
    cloud.compute.put("/os-quota-sets/admin?user_id=admin",
                      json={"quota_set": {"instances": 1}})
    boot(cloud, "mine", world["small"], world["image"])
    refused = _post(cloud, world["small"], world["image"])
    assert refused["body"] == {"forbidden": {"code": 403, "message":
                               "Quota exceeded for instances: Requested 1, but already used "
                               "1 of 1 instances"}}
    detail = cloud.compute.get("/os-quota-sets/admin/detail?user_id=admin").json()
    assert detail["quota_set"]["instances"] == {"in_use": 1, "limit": 1, "reserved": 0}
    with cloud.client("other:admin", roles=("member", "reader")) as other:
        made = other.post("/servers", json={"server": {
            "name": "theirs", "flavorRef": world["small"], "imageRef": world["image"],
            "networks": "none"}})
    settle(cloud)
    assert made.status_code == 202, made.text
    assert _server_count(cloud) == 2


def test_unlimited_quotas_are_not_counted(cloud: Cloud, world: dict[str, str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing can be over an unlimited quota, so a boot and an upsize read no usage
    (a Placement read and the moves' holdings each); a user limit still is counted."""
    counted: list[str] = []
    real_used = quota_checks.Owner.used

    def used(owner: quota_checks.Owner, conn: object, resources: object,
             user_id: str | None = None) -> object:
        counted.append(str(user_id))
        return real_used(owner, conn, resources, user_id)  # type: ignore[arg-type]

    unlimited = {"instances": -1, "cores": -1, "ram": -1}
    cloud.compute.put("/os-quota-sets/admin", json={"quota_set": unlimited})
    monkeypatch.setattr(quota_checks.Owner, "used", used)
    grown = boot(cloud, "grown", world["small"], world["image"])
    action(cloud, grown, {"resize": {"flavorRef": world["big"]}})
    assert server(cloud, grown)["status"] == "VERIFY_RESIZE"
    assert counted == []
    cloud.compute.put("/os-quota-sets/admin?user_id=admin", json={"quota_set": {"cores": 3}})
    counted.clear()  # the PUT itself counts, to refuse a limit below the usage
    refused = _post(cloud, world["small"], world["image"])
    assert refused["body"] == {"forbidden": {"code": 403, "message":
                               "Quota exceeded for cores: Requested 1, but already used "
                               "3 of 3 cores"}}
    assert "admin" in counted
    assert_invariants(cloud)
