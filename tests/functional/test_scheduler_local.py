"""The scheduler reading Placement's candidates in-process chooses as it does over the API.

When Placement runs in the scheduler's process (`stowage serve`), the
scheduler reads the candidates engine's objects (scheduler/local_candidates.py)
instead of Placement's JSON answer. Both ways must give the same `Offer` and
the same selections for every kind of request; these tests run both on the
same cloud and compare: hosts of several sizes, one with a trait, two on
shared storage (a sharing provider, which the engine searches without its
encoded fast path), one with PCI devices, one forced down, and usage already
claimed on some.
"""

from __future__ import annotations

from typing import Any

import pytest

from stowage.compute.scheduler.answer import decode
from stowage.compute.scheduler.host_state import offer_of
from stowage.compute.scheduler.manager import Scheduler
from stowage.compute.scheduler.request import SchedulingRequest, candidate_query
from stowage.placement.client import PlacementClient, PlacementError
from tests.functional.conftest import Cloud
from tests.functional.servers import force_down, new_uuid
from tests.functional.test_scheduler import SMALL, spec


class Unclaimed:
    """The cloud's Placement client, but claims are only counted: both schedulers of a
    comparison then see the same usage."""

    def __init__(self, real: PlacementClient) -> None:
        self.real = real
        self.bodies = 0
        self.claims: list[tuple[str, Any]] = []

    def served_app(self) -> Any:
        return self.real.served_app()

    def allocation_candidates_body(self, params: Any) -> bytes:
        self.bodies += 1
        return self.real.allocation_candidates_body(params)

    def claim(self, consumer: str, allocations: Any, *args: Any) -> None:
        self.claims.append((consumer, allocations))


@pytest.fixture
def hosts(cloud: Cloud) -> dict[str, str]:
    """A mixed cloud, with some usage already claimed."""
    made = {
        "small": cloud.add_host("small", vcpus=4, memory_mb=8192, disk_gb=100),
        "large": cloud.add_host("large", vcpus=32, memory_mb=65536, disk_gb=400),
        "avx": cloud.add_host("avx", vcpus=16, memory_mb=32768, traits=("HW_CPU_X86_AVX2",)),
        "ceph1": cloud.add_host("ceph1", disk_gb=500, shared_storage="ceph"),
        "ceph2": cloud.add_host("ceph2", disk_gb=500, shared_storage="ceph"),
        "gpu": cloud.add_host("gpu", vcpus=8, pci={"gpu": 2}),
        "down": cloud.add_host("down", vcpus=64, memory_mb=131072),
    }
    force_down(cloud, "down")
    real = cloud.plane.placement
    real.claim(new_uuid(), {made["large"]: {"VCPU": 30, "MEMORY_MB": 60000}}, "p9", "u9", None)
    real.claim(new_uuid(), {made["avx"]: {"MEMORY_MB": 4096}}, "p9", "u9", None)
    return made


def both(cloud: Cloud) -> tuple[Scheduler, Scheduler, Unclaimed, Unclaimed]:
    settings, live = cloud.plane.settings, cloud.live
    local, remote = Unclaimed(cloud.plane.placement), Unclaimed(cloud.plane.placement)
    return (Scheduler(settings, live.db, local, cell_db=live.cell_db),
            Scheduler(settings, live.db, remote, cell_db=live.cell_db, read_in_process=False),
            local, remote)


REQUESTS = [
    {},
    {"flavor": {**SMALL, "vcpus": 8, "memory_mb": 16384, "root_gb": 50}},
    {"flavor": {**SMALL, "extra_specs": {"trait:HW_CPU_X86_AVX2": "required"}}},
    {"flavor": {**SMALL, "extra_specs": {"pci_passthrough:alias": "gpu:1"}}},
    {"ignore_hosts": ["large", "avx"]},
    {"flavor": {**SMALL, "vcpus": 64}},  # fits nowhere
]


@pytest.mark.parametrize("changes", REQUESTS, ids=range(len(REQUESTS)))
@pytest.mark.parametrize("weigher", ["spread", "pack"])
def test_in_process_and_api_choose_alike(cloud: Cloud, hosts: dict[str, str],
                                         changes: dict[str, Any], weigher: str) -> None:
    cloud.configure(weigher=weigher, max_attempts=3)
    in_process, over_api, local, remote = both(cloud)
    assert in_process._local is not None and over_api._local is None
    uuids = [new_uuid(), new_uuid(), new_uuid()]  # three instances: claims consumed in turn
    found = []
    for sched in (in_process, over_api):
        try:
            found.append(sched.select_destinations(spec(uuids[0], **changes), uuids))
        except Exception as exc:  # noqa: BLE001 -- the same refusal is what is compared
            found.append(repr(exc))
    assert found[0] == found[1]
    assert local.bodies == 0 and remote.bodies == 1  # in-process: no JSON answer at all
    assert local.claims == remote.claims


def test_the_offers_are_equal(cloud: Cloud, hosts: dict[str, str]) -> None:
    in_process, over_api, _, _ = both(cloud)
    req = SchedulingRequest.from_spec(spec(new_uuid()), [new_uuid()])
    query = candidate_query(req, 1000, None, [])
    mine = in_process.offer(query)
    theirs = offer_of(decode(cloud.plane.placement.allocation_candidates_body(query)))
    assert [dict(ar) for ar in mine.allocation_requests] == theirs.allocation_requests
    assert {rp: dict(free) for rp, free in mine.free.items()} == theirs.free
    assert mine.root_of == theirs.root_of
    assert hosts["ceph1"] in mine.root_of.values() and len(mine.free) > len(hosts) - 1


def test_a_query_the_engine_refuses_is_the_apis_error(cloud: Cloud,
                                                      hosts: dict[str, str]) -> None:
    in_process, _, local, _ = both(cloud)
    flavor = {**SMALL, "extra_specs": {"resources:CUSTOM_NO_SUCH_CLASS": "1"}}
    with pytest.raises(PlacementError) as refused:
        in_process.select_destinations(spec(new_uuid(), flavor=flavor), [new_uuid()])
    assert refused.value.status == 400 and "CUSTOM_NO_SUCH_CLASS" in refused.value.detail
    assert local.bodies == 1  # asked through the API, which gave its own error
