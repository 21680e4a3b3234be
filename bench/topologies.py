"""The two benchmark topologies, built over the public HTTP API only.

Why over HTTP: both targets must end up with identical data written the same
way, without either side's internals; the API is the only thing they share.

flat (N providers)::

    cn-0 .. cn-(N-1)   VCPU 32, MEMORY_MB 131072, DISK_GB 2048
                       trait HW_CPU_X86_AVX2, member of aggregate AGG

nested (N trees of 7 providers)::

    cn-i                DISK_GB 2048, trait COMPUTE_VOLUME_MULTI_ATTACH
    ├── cn-i-numa0      VCPU 16, MEMORY_MB 65536, trait CUSTOM_FOO
    │   ├── cn-i-numa0-fpga0   FPGA 1
    │   └── cn-i-numa0-fpga1   FPGA 1
    └── cn-i-numa1      (same as numa0)
        ├── cn-i-numa1-fpga0   FPGA 1
        └── cn-i-numa1-fpga1   FPGA 1

FPGA is a standard resource class (os-resource-classes), so no custom class
is created; CUSTOM_FOO is created as a trait first.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from client import call, new_client, retries_so_far, thread_client

__all__ = ["QUERIES", "Topology", "build"]

# Stable namespace so both targets get the same uuids for the same N.
_NS = uuid.UUID("7a1f3a52-3c86-4b8e-9b7a-00000be0c400")
AGGREGATE = str(uuid.uuid5(_NS, "aggregate"))

QUERIES = {
    "flat": ("resources=VCPU:1,DISK_GB:10,MEMORY_MB:256"
             f"&member_of={AGGREGATE}&required=HW_CPU_X86_AVX2"),
    "nested": ("resources=DISK_GB:10&required=COMPUTE_VOLUME_MULTI_ATTACH"
               "&resources_COMPUTE=VCPU:1,MEMORY_MB:256&required_COMPUTE=CUSTOM_FOO"
               "&resources_FPGA=FPGA:1&group_policy=none"
               "&same_subtree=_COMPUTE,_FPGA"),
}


@dataclass
class Topology:
    """What was built: which tree (index) each provider belongs to."""

    name: str
    size: int
    tree_of: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    retried: int = 0  # requests retried after a 5xx (SQLite "database is locked")


def _inv(**totals: int) -> dict[str, Any]:
    return {rc: {"total": t, "max_unit": t} for rc, t in totals.items()}


def _provider(base: str, name: str, parent: str | None, inventories: dict[str, Any],
              traits: list[str], aggregates: list[str]) -> str:
    """Create one provider and write its inventory, traits, aggregates."""
    c = thread_client(base)
    rp = str(uuid.uuid5(_NS, name))
    body: dict[str, Any] = {"name": name, "uuid": rp}
    if parent:
        body["parent_provider_uuid"] = parent
    gen = call(c, "POST", "/resource_providers", body).json()["generation"]
    if inventories:
        gen = call(c, "PUT", f"/resource_providers/{rp}/inventories",
                   {"resource_provider_generation": gen,
                    "inventories": inventories}).json()["resource_provider_generation"]
    if aggregates:
        gen = call(c, "PUT", f"/resource_providers/{rp}/aggregates",
                   {"resource_provider_generation": gen,
                    "aggregates": aggregates}).json()["resource_provider_generation"]
    if traits:
        call(c, "PUT", f"/resource_providers/{rp}/traits",
             {"resource_provider_generation": gen, "traits": traits})
    return rp


def _flat_one(base: str, i: int) -> list[str]:
    return [_provider(base, f"cn-{i}", None,
                      _inv(VCPU=32, MEMORY_MB=131072, DISK_GB=2048),
                      ["HW_CPU_X86_AVX2"], [AGGREGATE])]


def _nested_one(base: str, i: int) -> list[str]:
    root = _provider(base, f"cn-{i}", None, _inv(DISK_GB=2048),
                     ["COMPUTE_VOLUME_MULTI_ATTACH"], [])
    made = [root]
    for n in range(2):
        numa = _provider(base, f"cn-{i}-numa{n}", root,
                         _inv(VCPU=16, MEMORY_MB=65536), ["CUSTOM_FOO"], [])
        made.append(numa)
        for f in range(2):
            made.append(_provider(base, f"cn-{i}-numa{n}-fpga{f}", numa,
                                  _inv(FPGA=1), [], []))
    return made


_BUILDERS: dict[str, Callable[[str, int], list[str]]] = {
    "flat": _flat_one, "nested": _nested_one}


def build(base: str, name: str, size: int, threads: int = 8,
          label: str = "") -> Topology:
    """Build `size` providers (flat) or trees (nested) at `base`, with progress."""
    with new_client(base) as c:
        call(c, "PUT", "/traits/CUSTOM_FOO", ok=(201, 204))
    topo = Topology(name, size)
    one = _BUILDERS[name]
    start, retried = time.monotonic(), retries_so_far()
    step = max(size // 10, 1)
    with ThreadPoolExecutor(threads) as pool:
        for i, rps in enumerate(pool.map(lambda i: one(base, i), range(size))):
            topo.tree_of.update(dict.fromkeys(rps, i))
            done = i + 1
            if done % step == 0 or done == size:
                rate = done / (time.monotonic() - start)
                print(f"  {label} building {name}: {done}/{size} ({rate:.0f}/s)",
                      flush=True)
    topo.seconds = time.monotonic() - start
    topo.retried = retries_so_far() - retried
    return topo
