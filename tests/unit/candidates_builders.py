"""Hand-built snapshots and requests for the candidate-engine unit tests."""

from __future__ import annotations

from typing import Any

from stowage.placement.candidates import query
from stowage.placement.candidates.search import SearchResult, search
from stowage.placement.candidates.snapshot import Inventory, Provider, Snapshot
from stowage.web.http import Request
from stowage.web.microversion import Version

ALL_TRAITS = {"MISC_SHARES_VIA_AGGREGATE", "HW_CPU_X86_AVX", "HW_CPU_X86_SSE",
              "CUSTOM_PHYSNET_A", "CUSTOM_PHYSNET_B", "CUSTOM_GOLD", "STORAGE_DISK_SSD"}
ALL_CLASSES = {"VCPU", "MEMORY_MB", "DISK_GB", "SRIOV_NET_VF", "NET_BW_EGR_KILOBIT_PER_SEC",
               "PCPU"}


def inv(total: int, *, reserved: int = 0, ratio: float = 1.0, min_unit: int = 1,
        max_unit: int | None = None, step: int = 1, used: int = 0) -> Inventory:
    exact = (total - reserved) * ratio
    return Inventory(int(exact), used, min_unit, total if max_unit is None else max_unit,
                     step, exact)


def provider(pid: int, parent: int | None = None, root: int | None = None,
             traits: set[str] | None = None, aggs: set[str] | None = None,
             **inventories: Any) -> Provider:
    invs = {rc: (v if isinstance(v, Inventory) else inv(v)) for rc, v in inventories.items()}
    return Provider(pid, f"rp-{pid}", parent, root or pid, invs,
                    frozenset(traits or ()), frozenset(aggs or ()))


def snapshot(*providers: Provider) -> Snapshot:
    return Snapshot({p.id: p for p in providers}, set(ALL_CLASSES), set(ALL_TRAITS))


def request(qs: str, minor: int = 39) -> query.CandidateRequest:
    req = Request(method="GET", path="/allocation_candidates", query_string=qs,
                  headers={}, body=b"", base_url="", version=Version(1, minor))
    return query.parse_request(req)


def run(snap: Snapshot, qs: str, minor: int = 39, **kw: Any) -> SearchResult:
    return search(snap, request(qs, minor), **kw)


def allocations(result: SearchResult) -> list[dict[int, dict[str, int]]]:
    return [c.allocations for c in result.candidates]


def as_set(result: SearchResult) -> set[frozenset[tuple[int, str, int]]]:
    return {frozenset((p, rc, n) for p, res in c.allocations.items() for rc, n in res.items())
            for c in result.candidates}
