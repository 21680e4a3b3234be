"""Simulated hosts: what each one offers (inventory, traits, aggregates, AZ, PCI devices).

CONTRACT (to be implemented): `HostConfig`, `sim_hosts(n)`, `load_hosts_file(path)`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["HostConfig", "sim_hosts", "load_hosts_file"]


@dataclass(frozen=True)
class HostConfig:
    name: str
    vcpus: int = 16
    memory_mb: int = 32768
    disk_gb: int = 1000
    # resource class -> reserved amount
    reserved: Mapping[str, int] = field(default_factory=dict)
    cpu_allocation_ratio: float = 16.0
    ram_allocation_ratio: float = 1.5
    disk_allocation_ratio: float = 1.0
    traits: tuple[str, ...] = ()
    aggregates: tuple[str, ...] = ()
    availability_zone: str = "nova"
    # PCI devices: alias -> count
    pci: Mapping[str, int] = field(default_factory=dict)
    # Name of a sharing provider that serves this host's DISK_GB, or None.
    shared_storage: str | None = None


def sim_hosts(n: int) -> list[HostConfig]:
    return [HostConfig(name=f"host{i}") for i in range(1, n + 1)]


def load_hosts_file(path: str) -> list[HostConfig]:
    raise NotImplementedError
