"""Flavor extra specs and access lists over HTTP, including what members may not do."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.functional.conftest import MEMBER, LiveServer, api_client
from tests.functional.test_flavors import at, create


def specs(client: httpx.Client, flavorid: str = "1") -> dict[str, Any]:
    resp = client.get(f"/flavors/{flavorid}/os-extra_specs")
    assert resp.status_code == 200, resp.text
    return dict(resp.json()["extra_specs"])


def test_extra_specs_lifecycle(compute: httpx.Client) -> None:
    create(compute, "gpu", "1")
    body = {"extra_specs": {"resources:VCPU": "2", "trait:HW_CPU_X86_AVX2": "required",
                            "hw:cpu_policy": "dedicated", "hw:numa_nodes": 1}}
    added = compute.post("/flavors/1/os-extra_specs", json=body)
    assert added.status_code == 200
    assert added.json()["extra_specs"]["hw:numa_nodes"] == "1"
    assert specs(compute) == {"resources:VCPU": "2", "trait:HW_CPU_X86_AVX2": "required",
                              "hw:cpu_policy": "dedicated", "hw:numa_nodes": "1"}
    assert compute.get("/flavors/1").json()["flavor"]["extra_specs"] == specs(compute)
    one = compute.get("/flavors/1/os-extra_specs/resources:VCPU")
    assert one.json() == {"resources:VCPU": "2"}
    put = compute.put("/flavors/1/os-extra_specs/resources:VCPU", json={"resources:VCPU": "4"})
    assert put.status_code == 200 and put.json() == {"resources:VCPU": "4"}
    deleted = compute.delete("/flavors/1/os-extra_specs/hw:numa_nodes")
    assert deleted.status_code == 200
    assert set(specs(compute)) == {"resources:VCPU", "trait:HW_CPU_X86_AVX2", "hw:cpu_policy"}
    missing = compute.get("/flavors/1/os-extra_specs/hw:numa_nodes")
    assert missing.status_code == 404
    assert "has no extra specs with key hw:numa_nodes" in missing.json()["itemNotFound"]["message"]
    assert compute.delete("/flavors/1/os-extra_specs/hw:numa_nodes").status_code == 404


@pytest.mark.parametrize("extra", [
    {"resources:VCPU": "two"}, {"resources1:NOT_A_CLASS": "1"},
    {"trait:HW_CPU_X86_AVX2": "yes"}, {"trait_NET:NOT_A_TRAIT": "required"},
    {"group_policy": "spread"}, {"pci_passthrough:alias": "gpu"},
    {"bad/key": "1"}, {"hw:x": ["a list"]}, {"hw:x": "v" * 256},
])
def test_malformed_extra_specs_are_400_and_store_nothing(compute: httpx.Client,
                                                         extra: dict[str, Any]) -> None:
    create(compute, "f", "1")
    body = {"extra_specs": {"hw:cpu_policy": "dedicated", **extra}}
    resp = compute.post("/flavors/1/os-extra_specs", json=body)
    assert resp.status_code == 400, resp.text
    assert resp.json()["badRequest"]["message"]
    assert specs(compute) == {}


def test_update_body_must_name_the_uri_key(compute: httpx.Client) -> None:
    create(compute, "f", "1")
    for body in ({"hw:other": "1"}, {"hw:x": "1", "hw:y": "2"}, {}):
        resp = compute.put("/flavors/1/os-extra_specs/hw:x", json=body)
        assert resp.status_code == 400
    assert specs(compute) == {}


def test_extra_specs_of_an_unknown_flavor_are_404(compute: httpx.Client) -> None:
    assert compute.get("/flavors/nope/os-extra_specs").status_code == 404
    resp = compute.post("/flavors/nope/os-extra_specs", json={"extra_specs": {"a": "b"}})
    assert resp.status_code == 404


def test_members_read_but_do_not_write_extra_specs(compute: httpx.Client,
                                                   live_stowage: LiveServer) -> None:
    create(compute, "f", "1")
    compute.post("/flavors/1/os-extra_specs", json={"extra_specs": {"hw:numa_nodes": "1"}})
    with api_client(f"{live_stowage.url}/compute/v2.1", token="alice:proj-a",
                    roles=MEMBER) as alice:
        assert specs(alice) == {"hw:numa_nodes": "1"}
        posted = alice.post("/flavors/1/os-extra_specs", json={"extra_specs": {"hw:b": "2"}})
        assert posted.status_code == 403
        assert alice.delete("/flavors/1/os-extra_specs/hw:numa_nodes").status_code == 403
    assert specs(compute) == {"hw:numa_nodes": "1"}


def test_access_list_of_a_private_flavor(compute: httpx.Client) -> None:
    create(compute, "p", "1", **{"os-flavor-access:is_public": False})
    assert compute.get("/flavors/1/os-flavor-access").json() == {"flavor_access": []}
    added = compute.post("/flavors/1/action", json={"addTenantAccess": {"tenant": "proj-a"}})
    assert added.json() == {"flavor_access": [{"flavor_id": "1", "tenant_id": "proj-a"}]}
    again = compute.post("/flavors/1/action", json={"addTenantAccess": {"tenant": "proj-a"}})
    assert again.status_code == 409
    removed = compute.post("/flavors/1/action",
                           json={"removeTenantAccess": {"tenant": "proj-a"}})
    assert removed.json() == {"flavor_access": []}
    gone = compute.post("/flavors/1/action", json={"removeTenantAccess": {"tenant": "proj-a"}})
    assert gone.status_code == 404


def test_public_flavors_have_no_access_list(compute: httpx.Client) -> None:
    create(compute, "pub", "1")
    assert compute.get("/flavors/1/os-flavor-access").status_code == 404
    add = {"addTenantAccess": {"tenant": "proj-a"}}
    refused = compute.post("/flavors/1/action", json=add)
    assert refused.status_code == 409
    assert refused.json()["conflictingRequest"]["message"] == \
        "Can not add access to a public flavor."
    # Before 2.7 Nova did not check, and neither do we.
    assert compute.post("/flavors/1/action", json=add, headers=at("2.6")).status_code == 200


@pytest.mark.parametrize("body", [
    {"addTenantAccess": {}}, {"addTenantAccess": {"tenant": ""}},
    {"removeTenantAccess": {"tenant": 5}}, {"reboot": None},
])
def test_bad_actions_are_400(compute: httpx.Client, body: dict[str, Any]) -> None:
    create(compute, "p", "1", **{"os-flavor-access:is_public": False})
    assert compute.post("/flavors/1/action", json=body).status_code == 400
    assert compute.get("/flavors/1/os-flavor-access").json() == {"flavor_access": []}


def test_members_cannot_change_access(compute: httpx.Client, live_stowage: LiveServer) -> None:
    create(compute, "p", "1", **{"os-flavor-access:is_public": False})
    with api_client(f"{live_stowage.url}/compute/v2.1", token="alice:proj-a",
                    roles=MEMBER) as alice:
        resp = alice.post("/flavors/1/action", json={"addTenantAccess": {"tenant": "proj-a"}})
        assert resp.status_code == 403
    assert compute.get("/flavors/1/os-flavor-access").json() == {"flavor_access": []}


def test_a_number_longer_than_a_value_column_is_400(compute: httpx.Client) -> None:
    """The schema's maxLength bounds strings only; a 300-digit number is checked as Nova does."""
    create(compute, "f", "1")
    for resp in (compute.post("/flavors/1/os-extra_specs", json={"extra_specs": {"k": 10**300}}),
                 compute.put("/flavors/1/os-extra_specs/k", json={"k": 10**300})):
        assert resp.status_code == 400, resp.text
        assert resp.json()["badRequest"]["message"] == \
            "Invalid input received: extra_specs value has more than 255 characters."
    assert specs(compute) == {}


# --- 2.86: Nova's registry of known extra specs -------------------------------------


@pytest.mark.parametrize(("extra", "message"), [
    ({"hw:cpu_policy": "dedicate"},
     "Validation failed; 'dedicate' is not one of: dedicated, shared, mixed."),
    ({"hw:numa_nodes": 0}, "Validation failed; '0' is less than the min value of '1'."),
    ({"hw:cpu_polic": "dedicated"},
     "Validation failed; extra spec 'hw:cpu_polic' does not appear to be a valid extra spec."),
    ({"hw:mem_page_size": True},
     "Validation failed; 'True' is not of the format "
     "'(large|small|any|\\d+([kKMGT]i?)?(b|bit|B)?)'."),
])
def test_registry_refuses_from_2_86(compute: httpx.Client, extra: dict[str, Any],
                                    message: str) -> None:
    create(compute, "f", "1")
    body = {"extra_specs": {"hw:cpu_thread_policy": "prefer", **extra}}
    resp = compute.post("/flavors/1/os-extra_specs", json=body)
    assert resp.status_code == 400, resp.text
    assert resp.json()["badRequest"]["message"] == message
    ((key, value),) = extra.items()
    resp = compute.put(f"/flavors/1/os-extra_specs/{key}", json=extra)
    assert resp.json()["badRequest"]["message"] == message
    assert specs(compute) == {}
    old = compute.post("/flavors/1/os-extra_specs", json=body, headers=at("2.85"))
    assert old.status_code == 200, old.text  # opaque before 2.86, as in Nova
    assert specs(compute)[key] == str(value)


def test_registry_leaves_unknown_namespaces_alone(compute: httpx.Client) -> None:
    create(compute, "f", "1")
    body = {"extra_specs": {"my_company:tier": "gold", "plain": "x",
                            "aggregate_instance_extra_specs:ssd": "true",
                            "capabilities:cpu_info:arch": "x86_64",
                            "hw:numa_cpus.0": "0-1", "hw:numa_mem.0": "512",
                            "resources_G1:CUSTOM_GOLD": "1", "trait1:CUSTOM_FAST": "required"}}
    resp = compute.post("/flavors/1/os-extra_specs", json=body)
    assert resp.status_code == 200, resp.text
    assert specs(compute) == body["extra_specs"]
