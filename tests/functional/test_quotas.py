"""Quotas as a user sees them: os-quota-sets, os-quota-class-sets and /limits.

No hosts: these are the limits themselves (defaults, project and user
overrides, microversion gates, validation); enforcement on servers is in
test_quota_enforcement.py.
"""

from __future__ import annotations

import httpx

from tests.functional.conftest import MEMBER, READER, Cloud

DEFAULTS = {"instances": 10, "cores": 20, "ram": 51200, "metadata_items": 128,
            "key_pairs": 100, "server_groups": 10, "server_group_members": 10}
INJECTED = {"injected_files": 5, "injected_file_content_bytes": 10240,
            "injected_file_path_bytes": 255}
NETWORK = {"fixed_ips": -1, "floating_ips": -1, "security_groups": -1,
           "security_group_rules": -1}


def _at(cloud: Cloud, version: str, token: str = "admin",
        roles: tuple[str, ...] | None = None) -> httpx.Client:
    return cloud.client(token, version, roles=roles)


def test_quota_set_answers_follow_the_microversion(cloud: Cloud) -> None:
    latest = cloud.compute.get("/os-quota-sets/p1")
    assert latest.status_code == 200, latest.text
    assert latest.json() == {"quota_set": {"id": "p1", **DEFAULTS}}
    with _at(cloud, "2.35") as old, _at(cloud, "2.56") as mid:
        assert old.get("/os-quota-sets/p1").json()["quota_set"] == {
            "id": "p1", **DEFAULTS, **INJECTED, **NETWORK}
        assert mid.get("/os-quota-sets/p1/defaults").json()["quota_set"] == {
            "id": "p1", **DEFAULTS, **INJECTED}
        refused = mid.put("/os-quota-sets/p1", json={"quota_set": {"floating_ips": 3}})
        assert refused.status_code == 400
        assert "Additional properties are not allowed" in refused.text
        assert old.put("/os-quota-sets/p1", json={"quota_set": {"networks": 3}}).json() == {
            "badRequest": {"code": 400, "message": "The networks quota is disabled"}}
    refused = cloud.compute.put("/os-quota-sets/p1", json={"quota_set": {"injected_files": 1}})
    assert refused.status_code == 400
    detail = cloud.compute.get("/os-quota-sets/p1/detail").json()["quota_set"]
    assert detail["cores"] == {"in_use": 0, "limit": 20, "reserved": 0}
    assert "floating_ips" not in detail


def test_update_per_project_and_per_user_then_reset(cloud: Cloud) -> None:
    resp = cloud.compute.put("/os-quota-sets/p1",
                             json={"quota_set": {"cores": 30, "instances": "5", "ram": -1}})
    assert resp.status_code == 200, resp.text
    assert resp.json() == {"quota_set": {**DEFAULTS, "cores": 30, "instances": 5, "ram": -1}}
    resp = cloud.compute.put("/os-quota-sets/p1?user_id=u1", json={"quota_set": {"cores": 8}})
    assert resp.status_code == 200, resp.text
    assert resp.json()["quota_set"]["cores"] == 8
    assert resp.json()["quota_set"]["instances"] == 5  # the project's, where u1 has none
    assert cloud.compute.get("/os-quota-sets/p1").json()["quota_set"]["cores"] == 30
    # u2 may get at most what the project has left after u1's 8 of 30.
    too_big = cloud.compute.put("/os-quota-sets/p1?user_id=u2",
                                json={"quota_set": {"cores": 23}})
    assert too_big.json() == {"badRequest": {"code": 400, "message":
                              "Quota limit 23 for cores must be less than or equal to 22."}}
    # The project may not go below what its users were given, unless forced.
    below = cloud.compute.put("/os-quota-sets/p1", json={"quota_set": {"cores": 7}})
    assert below.json()["badRequest"]["message"] == (
        "Quota limit 7 for cores must be greater than or equal to already used and "
        "reserved 8.")
    negative = cloud.compute.put("/os-quota-sets/p1", json={"quota_set": {"cores": "-2"}})
    assert negative.status_code == 400
    assert cloud.compute.get("/os-quota-sets/p1").json()["quota_set"]["cores"] == 30
    forced = cloud.compute.put("/os-quota-sets/p1",
                               json={"quota_set": {"cores": 7, "force": True}})
    assert forced.status_code == 200 and forced.json()["quota_set"]["cores"] == 7

    assert cloud.compute.delete("/os-quota-sets/p1?user_id=u1").status_code == 202
    assert cloud.compute.get("/os-quota-sets/p1?user_id=u1").json()["quota_set"]["cores"] == 7
    assert cloud.compute.delete("/os-quota-sets/p1").status_code == 202
    assert cloud.compute.get("/os-quota-sets/p1").json()["quota_set"] == {"id": "p1",
                                                                           **DEFAULTS}


def test_policy_readers_see_their_own_and_only_admins_change(cloud: Cloud) -> None:
    with _at(cloud, "latest", "demo:p1", MEMBER) as member, \
            _at(cloud, "latest", "peek:p1", READER) as reader:
        assert reader.get("/os-quota-sets/p1").status_code == 200
        assert reader.get("/os-quota-sets/p1/detail").status_code == 200
        assert reader.get("/os-quota-sets/p2").status_code == 403
        assert member.get("/os-quota-sets/p2/defaults").status_code == 200
        assert member.put("/os-quota-sets/p1",
                          json={"quota_set": {"cores": 1}}).status_code == 403
        assert member.delete("/os-quota-sets/p1").status_code == 403
        assert member.get("/os-quota-class-sets/default").status_code == 403
        assert member.get("/limits").status_code == 200
        assert member.get("/limits?tenant_id=p2").status_code == 403
    assert cloud.compute.get("/os-quota-sets/p1").json()["quota_set"]["cores"] == 20


def test_the_default_class_changes_every_project_default(cloud: Cloud) -> None:
    with _at(cloud, "2.49") as old:
        shown = old.get("/os-quota-class-sets/default").json()["quota_class_set"]
        assert "server_groups" not in shown and shown["floating_ips"] == -1
    resp = cloud.compute.put("/os-quota-class-sets/default",
                             json={"quota_class_set": {"instances": 50}})
    assert resp.status_code == 200, resp.text
    assert resp.json() == {"quota_class_set": {**DEFAULTS, "instances": 50}}
    shown = cloud.compute.get("/os-quota-class-sets/default").json()["quota_class_set"]
    assert shown == {"id": "default", **DEFAULTS, "instances": 50}
    assert cloud.compute.get("/os-quota-sets/p9").json()["quota_set"]["instances"] == 50
    assert cloud.compute.get("/os-quota-sets/p9/defaults").json()["quota_set"][
        "instances"] == 50
    refused = cloud.compute.put("/os-quota-class-sets/default",
                                json={"quota_class_set": {"security_groups": 1}})
    assert refused.status_code == 400


def test_limits_body_at_each_microversion(cloud: Cloud) -> None:
    cloud.compute.put("/os-quota-sets/admin", json={"quota_set": {"metadata_items": 7}})
    absolute = cloud.compute.get("/limits").json()
    assert absolute == {"limits": {"rate": [], "absolute": {
        "maxTotalRAMSize": 51200, "maxTotalInstances": 10, "maxTotalCores": 20,
        "maxTotalKeypairs": 100, "maxServerMeta": 7, "maxServerGroups": 10,
        "maxServerGroupMembers": 10, "totalRAMUsed": 0, "totalCoresUsed": 0,
        "totalInstancesUsed": 0, "totalServerGroupsUsed": 0}}}
    with _at(cloud, "2.1") as old, _at(cloud, "2.38") as mid:
        body = old.get("/limits").json()["limits"]["absolute"]
        assert body["maxImageMeta"] == 7 and body["maxPersonality"] == 5
        assert body["maxSecurityGroups"] == -1 and body["totalFloatingIpsUsed"] == 0
        body = mid.get("/limits").json()["limits"]["absolute"]
        assert "maxImageMeta" in body and "maxSecurityGroups" not in body
    other = cloud.compute.get("/limits?tenant_id=p1").json()["limits"]["absolute"]
    assert other["maxServerMeta"] == 128
    assert cloud.compute.get("/limits?bogus=1").status_code == 400  # 2.75
