"""POST /reshaper: move inventory and its allocations to a child provider atomically.

Before::                          After::

    compute (VCPU 8, VGPU 4)          compute (VCPU 8)
      vm: VCPU 2, VGPU 1                vm: VCPU 2 ----+
    gpu (child, no inventory)         gpu (VGPU 4)     |
                                        vm: VGPU 1 <---+
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.functional.accounting import (
    body,
    error,
    generation,
    held,
    new_uuid,
    provider,
    put,
)
from tests.functional.accounting import consumer_generation as cgen

# Nova's report client reshapes as its service user, which holds the service role.
AS_SERVICE = {"x-roles": "admin,service"}


@pytest.fixture
def tree(placement: httpx.Client) -> dict[str, str]:
    compute = provider(placement, "compute", {"VCPU": {"total": 8}, "VGPU": {"total": 4}})
    gpu = provider(placement, "gpu", {}, parent=compute)
    vm = new_uuid()
    assert put(placement, vm, {compute: {"VCPU": 2, "VGPU": 1}}).status_code == 204
    return {"compute": compute, "gpu": gpu, "vm": vm}


def _reshape(placement: httpx.Client, tree: dict[str, str], vgpu_used: int = 1,
             compute_generation: int | None = None) -> dict[str, Any]:
    compute, gpu, vm = tree["compute"], tree["gpu"], tree["vm"]
    return {
        "inventories": {
            compute: {"resource_provider_generation":
                      compute_generation if compute_generation is not None
                      else generation(placement, compute),
                      "inventories": {"VCPU": {"total": 8}}},
            gpu: {"resource_provider_generation": generation(placement, gpu),
                  "inventories": {"VGPU": {"total": 4}}},
        },
        "allocations": {vm: body({compute: {"VCPU": 2}, gpu: {"VGPU": vgpu_used}},
                                 cgen(placement, vm))},
    }


def test_reshape_moves_inventory_and_allocations(placement: httpx.Client,
                                                  tree: dict[str, str]) -> None:
    resp = placement.post("/reshaper", json=_reshape(placement, tree), headers=AS_SERVICE)
    assert resp.status_code == 204, resp.text
    compute, gpu = tree["compute"], tree["gpu"]
    assert held(placement, tree["vm"]) == {compute: {"VCPU": 2}, gpu: {"VGPU": 1}}
    inv = placement.get(f"/resource_providers/{compute}/inventories").json()
    assert set(inv["inventories"]) == {"VCPU"}
    assert placement.get(f"/resource_providers/{gpu}/usages").json()["usages"] == {"VGPU": 1}


def test_failed_reshape_changes_nothing(placement: httpx.Client, tree: dict[str, str]) -> None:
    compute = tree["compute"]
    before = (generation(placement, compute), generation(placement, tree["gpu"]),
              held(placement, tree["vm"]))
    resp = placement.post("/reshaper", json=_reshape(placement, tree, vgpu_used=5),
                          headers=AS_SERVICE)
    status, _, detail = error(resp)
    assert status == 409
    assert "Unable to allocate inventory" in detail
    after = (generation(placement, compute), generation(placement, tree["gpu"]),
             held(placement, tree["vm"]))
    assert after == before
    inv = placement.get(f"/resource_providers/{compute}/inventories").json()
    assert set(inv["inventories"]) == {"VCPU", "VGPU"}


def test_stale_provider_generation(placement: httpx.Client, tree: dict[str, str]) -> None:
    stale = generation(placement, tree["compute"]) - 1
    resp = placement.post("/reshaper", json=_reshape(placement, tree, compute_generation=stale),
                          headers=AS_SERVICE)
    status, code, detail = error(resp)
    assert (status, code) == (409, "placement.concurrent_update")
    assert "resource provider generation conflict" in detail


def test_dropping_allocated_inventory_is_in_use(placement: httpx.Client,
                                                tree: dict[str, str]) -> None:
    data = _reshape(placement, tree)
    vm_body = data["allocations"][tree["vm"]]
    vm_body["allocations"] = {tree["compute"]: {"resources": {"VCPU": 2, "VGPU": 1}}}
    status, code, detail = error(placement.post("/reshaper", json=data, headers=AS_SERVICE))
    assert (status, code) == (409, "placement.inventory.inuse")
    assert "update conflict" in detail


def test_reshaper_needs_the_service_role(placement: httpx.Client,
                                        tree: dict[str, str]) -> None:
    data = _reshape(placement, tree)
    resp = placement.post("/reshaper", json=data,
                          headers={"x-auth-token": "user:p", "x-roles": "member"})
    assert resp.status_code == 403
    # Upstream's default (secure RBAC): an admin without the service role may not either.
    assert placement.post("/reshaper", json=data).status_code == 403
    assert placement.post("/reshaper", json=data,
                          headers={**AS_SERVICE, "openstack-api-version": "placement 1.29"}
                          ).status_code == 404
