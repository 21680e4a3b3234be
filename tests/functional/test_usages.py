"""Usages per provider and per project/user, including consumer-type grouping (1.38).

    compute (VCPU 8, DISK_GB 100, MEMORY_MB 1024)
      vm-a  project P user U1  INSTANCE   VCPU 2  DISK_GB 10
      vm-b  project P user U2  INSTANCE   VCPU 1
      mig   project P user U1  MIGRATION  VCPU 4
      old   project P user U1  (written at 1.37: no type)  DISK_GB 5
      other project Q user U1  INSTANCE   VCPU 1
"""

from __future__ import annotations

import httpx
import pytest

from tests.functional.accounting import new_uuid, provider, put, usages

P, Q = "project-p", "project-q"


@pytest.fixture
def compute(placement: httpx.Client) -> str:
    rp = provider(placement, "compute", {"VCPU": {"total": 8}, "DISK_GB": {"total": 100},
                                         "MEMORY_MB": {"total": 1024}})
    put(placement, new_uuid(), {rp: {"VCPU": 2, "DISK_GB": 10}}, project=P, user="U1")
    put(placement, new_uuid(), {rp: {"VCPU": 1}}, project=P, user="U2")
    put(placement, new_uuid(), {rp: {"VCPU": 4}}, project=P, user="U1",
        consumer_type="MIGRATION")
    placement.put(f"/allocations/{new_uuid()}", headers={"openstack-api-version":
                                                          "placement 1.37"},
                  json={"allocations": {rp: {"resources": {"DISK_GB": 5}}},
                        "project_id": P, "user_id": "U1", "consumer_generation": None})
    put(placement, new_uuid(), {rp: {"VCPU": 1}}, project=Q, user="U1")
    return rp


def test_provider_usages_list_every_inventory_class(placement: httpx.Client,
                                                    compute: str) -> None:
    assert usages(placement, compute) == {"VCPU": 8, "DISK_GB": 15, "MEMORY_MB": 0}
    missing = placement.get(f"/resource_providers/{new_uuid()}/usages")
    assert missing.status_code == 404


def test_project_and_user_usages_before_1_38(placement: httpx.Client, compute: str) -> None:
    old = {"openstack-api-version": "placement 1.37"}
    got = placement.get("/usages", params={"project_id": P}, headers=old)
    assert got.json() == {"usages": {"VCPU": 7, "DISK_GB": 15}}
    got = placement.get("/usages", params={"project_id": P, "user_id": "U2"}, headers=old)
    assert got.json() == {"usages": {"VCPU": 1}}
    assert placement.get("/usages", params={"project_id": "nobody"},
                         headers=old).json() == {"usages": {}}
    assert placement.get("/usages", headers=old).status_code == 400


def test_usages_grouped_by_consumer_type(placement: httpx.Client, compute: str) -> None:
    got = placement.get("/usages", params={"project_id": P}).json()["usages"]
    assert got == {
        "INSTANCE": {"VCPU": 3, "DISK_GB": 10, "consumer_count": 2},
        "MIGRATION": {"VCPU": 4, "consumer_count": 1},
        "unknown": {"DISK_GB": 5, "consumer_count": 1},
    }
    only = placement.get("/usages", params={"project_id": P, "consumer_type": "MIGRATION"})
    assert only.json()["usages"] == {"MIGRATION": {"VCPU": 4, "consumer_count": 1}}
    lumped = placement.get("/usages", params={"project_id": P, "consumer_type": "all"})
    assert lumped.json()["usages"] == {
        "all": {"VCPU": 7, "DISK_GB": 15, "consumer_count": 4}}
    untyped = placement.get("/usages", params={"project_id": P, "consumer_type": "unknown"})
    assert untyped.json()["usages"] == {"unknown": {"DISK_GB": 5, "consumer_count": 1}}


def test_usages_policy_lets_project_readers_see_only_their_project(
        placement: httpx.Client, compute: str) -> None:
    reader = {"x-auth-token": f"reader:{P}", "x-roles": "reader"}
    assert placement.get("/usages", params={"project_id": P}, headers=reader).status_code == 200
    assert placement.get("/usages", params={"project_id": Q}, headers=reader).status_code == 403
