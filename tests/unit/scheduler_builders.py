"""In-memory hosts, requests and a Placement double for the scheduler unit tests.

    spec(...)            a conductor request spec (JSON dict)
    Host(...)            one compute node + service + its Placement provider
    host_states(...)     what Placement would answer for these hosts, joined to records
    FakePlacement        holdings with consumer generations; can lose claims on purpose
"""

from __future__ import annotations

import json
import uuid as uuidlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from stowage.compute.scheduler.host_state import HostState, NodeRecord, build_host_states
from stowage.compute.scheduler.request import SchedulingRequest
from stowage.placement.client import Holding, PlacementConflict

FLAVOR = {"id": 1, "flavorid": "1", "name": "small", "vcpus": 2, "memory_mb": 2048,
          "root_gb": 20, "ephemeral_gb": 0, "swap": 0, "extra_specs": {}}
INSTANCE = "11111111-1111-1111-1111-111111111111"


def node_uuid(name: str) -> str:
    return str(uuidlib.uuid5(uuidlib.NAMESPACE_DNS, name))


def spec(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "instance_uuid": INSTANCE, "project_id": "p1", "user_id": "u1",
        "flavor": dict(FLAVOR), "is_volume_backed": False, "image": None,
        "availability_zone": None, "scheduler_hints": {}, "instance_group": None,
        "ignore_hosts": [], "requested_destination": None, "num_instances": 1,
        "move": False}
    base.update(changes)
    return base


def request(instance_uuids: Sequence[str] = (INSTANCE,), **changes: Any) -> SchedulingRequest:
    return SchedulingRequest.from_spec(spec(**changes), list(instance_uuids))


@dataclass
class Host:
    name: str
    vcpus: int = 16
    memory_mb: int = 32768
    disk_gb: int = 1000
    used: Mapping[str, int] = field(default_factory=dict)
    az: str = "nova"
    up: bool = True
    disabled: bool = False
    forced_down: bool = False
    pci: Mapping[str, int] = field(default_factory=dict)
    # key -> values in the host's aggregates' metadata
    aggregates: Mapping[str, frozenset[str]] = field(default_factory=dict)
    # The uuid of the host's cell (None: a deployment read without cells).
    cell: str | None = None

    @property
    def uuid(self) -> str:
        return node_uuid(self.name)

    def record(self) -> NodeRecord:
        return NodeRecord(self.uuid, self.name, self.name, self.az, service_up=self.up,
                          service_disabled=self.disabled,
                          disabled_reason="maintenance" if self.disabled else None,
                          forced_down=self.forced_down,
                          pci_stats={a: {"total": n, "free": n} for a, n in self.pci.items()},
                          aggregate_metadata=dict(self.aggregates), cell=self.cell)

    def summary(self) -> dict[str, Any]:
        totals = {"VCPU": self.vcpus, "MEMORY_MB": self.memory_mb, "DISK_GB": self.disk_gb}
        return {"resources": {rc: {"capacity": n, "used": self.used.get(rc, 0)}
                              for rc, n in totals.items()},
                "traits": [], "parent_provider_uuid": None, "root_provider_uuid": self.uuid}


def candidates(hosts: Sequence[Host], amounts: Mapping[str, int]) -> dict[str, Any]:
    """Placement's answer: one allocation request per host that has room."""
    fitting = [h for h in hosts
               if all(h.summary()["resources"][rc]["capacity"]
                      - h.summary()["resources"][rc]["used"] >= n for rc, n in amounts.items())]
    return {"allocation_requests": [{"allocations": {h.uuid: {"resources": dict(amounts)}},
                                     "mappings": {"": [h.uuid]}} for h in fitting],
            "provider_summaries": {h.uuid: h.summary() for h in hosts}}


def host_states(hosts: Sequence[Host], req: SchedulingRequest) -> list[HostState]:
    nodes = {h.uuid: h.record() for h in hosts}
    return build_host_states(nodes, candidates(hosts, req.amounts()))


def by_name(states: Sequence[HostState], name: str) -> HostState:
    return next(s for s in states if s.host == name)


class FakePlacement:
    """Holdings per consumer with generations; `lose_on` providers answer 409 once each."""

    def __init__(self) -> None:
        self.held: dict[str, Holding] = {}
        self.lose_on: set[str] = set()
        self.calls: list[tuple[str, str]] = []
        self.answer: dict[str, Any] = {"allocation_requests": [], "provider_summaries": {}}

    def allocation_candidates_body(self, params: Sequence[tuple[str, str]]) -> bytes:
        self.calls.append(("GET", "/allocation_candidates"))
        return json.dumps(self.answer).encode()

    def holding(self, consumer: str) -> Holding:
        self.calls.append(("GET", consumer))
        found = self.held.get(consumer)
        if found is None:
            return Holding()
        return Holding({rp: dict(r) for rp, r in found.allocations.items()}, found.generation,
                       found.project_id, found.user_id, found.consumer_type)

    def claim(self, consumer: str, allocations: Mapping[str, Mapping[str, int]],
              project_id: str, user_id: str, consumer_generation: int | None,
              consumer_type: str = "INSTANCE") -> None:
        self.calls.append(("PUT", consumer))
        current = self.held.get(consumer)
        if (current.generation if current else None) != consumer_generation:
            raise PlacementConflict(409, "placement.concurrent_update", "consumer generation")
        lost = self.lose_on & set(allocations)
        if lost:
            self.lose_on -= lost
            raise PlacementConflict(409, "placement.concurrent_update",
                                    "resource provider generation conflict")
        generation = 0 if current is None or current.generation is None else current.generation + 1
        self.held[consumer] = Holding({rp: dict(r) for rp, r in allocations.items()},
                                      generation, project_id, user_id, consumer_type)

    def delete_allocations(self, consumer: str) -> bool:
        self.calls.append(("DELETE", consumer))
        return self.held.pop(consumer, None) is not None

    def write_many(self, holdings: Mapping[str, Holding]) -> None:
        """All or nothing, like POST /allocations: every generation checked first."""
        self.calls.append(("POST", ",".join(holdings)))
        for consumer, h in holdings.items():
            current = self.held.get(consumer)
            if (current.generation if current else None) != h.generation:
                raise PlacementConflict(409, "placement.concurrent_update", "consumer generation")
        lost = self.lose_on & {rp for h in holdings.values() for rp in h.allocations}
        if lost:
            self.lose_on -= lost
            raise PlacementConflict(409, "placement.concurrent_update",
                                    "resource provider generation conflict")
        for consumer, h in holdings.items():
            if not h.allocations:
                self.held.pop(consumer, None)
                continue
            current = self.held.get(consumer)
            generation = 0 if current is None or current.generation is None \
                else current.generation + 1
            self.held[consumer] = Holding({rp: dict(r) for rp, r in h.allocations.items()},
                                          generation, h.project_id, h.user_id, h.consumer_type)
