"""The Placement client compute uses, in-process and over HTTP: the same answers.

    rp (VCPU 8, MEMORY_MB 4096)
      instance: 2 VCPU / 512 MB  -> handed over to the migration and back
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from stowage.placement.client import Holding, PlacementClient, PlacementConflict
from tests.functional.conftest import Cloud
from tests.functional.servers import new_uuid

PROJECT, USER = "proj", "user"


@pytest.fixture(params=["local", "http"])
def client(request: pytest.FixtureRequest, cloud: Cloud) -> Iterator[PlacementClient]:
    if request.param == "local":
        yield cloud.plane.placement
        return
    remote = PlacementClient.over_http(f"{cloud.live.url}/placement")
    yield remote
    remote.close()


def _provider(client: PlacementClient) -> str:
    rp = new_uuid()
    client.ensure_provider(rp, f"rp-{rp[:8]}")
    client.set_inventories(rp, {"VCPU": {"total": 8}, "MEMORY_MB": {"total": 4096}})
    return rp


def test_claim_hand_over_and_delete(client: PlacementClient) -> None:
    rp = _provider(client)
    instance, migration = new_uuid(), new_uuid()
    client.claim(instance, {rp: {"VCPU": 2, "MEMORY_MB": 512}}, PROJECT, USER, None)
    holding = client.holding(instance)
    assert holding.allocations == {rp: {"VCPU": 2, "MEMORY_MB": 512}}

    client.write_many({
        migration: Holding(holding.allocations, None, PROJECT, USER, "MIGRATION"),
        instance: Holding({}, holding.generation, PROJECT, USER, "INSTANCE")})
    assert client.holding(instance).allocations == {}
    assert client.holding(migration).allocations == {rp: {"VCPU": 2, "MEMORY_MB": 512}}
    assert client.holding(migration).consumer_type == "MIGRATION"

    assert client.delete_allocations(migration) is True
    assert client.delete_allocations(migration) is False
    assert client.usages(rp) == {"VCPU": 0, "MEMORY_MB": 0}


def test_stale_generation_and_over_capacity_are_conflicts(client: PlacementClient) -> None:
    rp = _provider(client)
    instance = new_uuid()
    client.claim(instance, {rp: {"VCPU": 1}}, PROJECT, USER, None)
    with pytest.raises(PlacementConflict):
        client.claim(instance, {rp: {"VCPU": 2}}, PROJECT, USER, None)  # generation is 0 now
    with pytest.raises(PlacementConflict):
        client.claim(new_uuid(), {rp: {"VCPU": 500}}, PROJECT, USER, None)
    assert client.holding(instance).allocations == {rp: {"VCPU": 1}}


def test_inventory_traits_aggregates_retry_on_generation(client: PlacementClient) -> None:
    rp = _provider(client)
    client.set_traits(rp, ["CUSTOM_FAST", "HW_CPU_X86_AVX2"])
    aggregate = new_uuid()
    client.set_aggregates(rp, [aggregate])
    found = client.allocation_candidates([("resources", "VCPU:1"), ("required", "CUSTOM_FAST"),
                                          ("member_of", aggregate)])
    assert list(found["provider_summaries"]) == [rp]
