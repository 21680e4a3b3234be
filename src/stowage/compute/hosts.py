"""Simulated hosts: what each one offers (inventory, traits, aggregates, AZ, PCI devices).

`sim_hosts(n)` is `stowage serve --sim-hosts N`: n identical hosts. A hosts
file describes hosts one by one, in TOML (`[[hosts]]` tables) or YAML (a list,
or a mapping with a `hosts` list)::

    [[hosts]]
    name = "gpu1"
    vcpus = 32
    memory_mb = 131072
    disk_gb = 2000
    reserved = { MEMORY_MB = 2048, DISK_GB = 20 }
    cpu_allocation_ratio = 4.0
    traits = ["HW_CPU_X86_AVX2", "CUSTOM_FAST_NIC"]
    aggregates = ["0f5c5a0e-43f0-4bb4-9d1e-2ba1c1b35a11"]
    availability_zone = "az1"
    pci = { gpu = 2 }
    shared_storage = "ceph1"

A file that cannot be used is refused as a whole, with the host and the key
that are wrong: a half-loaded set of hosts would be harder to notice.
"""

from __future__ import annotations

import re
import tomllib
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import os_traits
import yaml

__all__ = ["HostConfig", "HostsFileError", "sim_hosts", "load_hosts_file", "shared_disk",
           "RESERVABLE"]

# The resource classes a host reports, hence the ones it may reserve.
RESERVABLE = ("VCPU", "MEMORY_MB", "DISK_GB")
_CUSTOM_TRAIT = re.compile(r"^CUSTOM_[A-Z0-9_]+$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$")


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
    # What os-hypervisors shows as host_ip.
    host_ip: str = "127.0.0.1"


class HostsFileError(ValueError):
    """A hosts file that cannot be used; the message names the file, host and key."""


def sim_hosts(n: int) -> list[HostConfig]:
    return [HostConfig(name=f"host{i}") for i in range(1, n + 1)]


def load_hosts_file(path: str) -> list[HostConfig]:
    """Every host of a TOML or YAML file (chosen by suffix), validated as a whole."""
    text = Path(path).read_text(encoding="utf-8")
    try:
        if path.endswith((".yaml", ".yml")):
            data: Any = yaml.safe_load(text)
        else:
            data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        raise HostsFileError(f"hosts file {path}: cannot parse: {exc}") from None
    if isinstance(data, Mapping):
        unknown = set(data) - {"hosts"}
        if unknown:
            raise HostsFileError(f"hosts file {path}: unknown top-level key(s) {sorted(unknown)}"
                                 "; hosts go in a list named 'hosts'")
        data = data.get("hosts")
    if not isinstance(data, list) or not data:
        raise HostsFileError(f"hosts file {path}: expected a non-empty list of hosts")
    hosts = [_host(path, i, raw) for i, raw in enumerate(data)]
    _check_unique(path, hosts)
    _check_shared_storage(path, hosts)
    return hosts


_FIELDS = {f.name for f in fields(HostConfig)}


def _host(path: str, index: int, raw: Any) -> HostConfig:
    where = f"hosts file {path}: host #{index + 1}"
    if not isinstance(raw, Mapping):
        raise HostsFileError(f"{where}: expected a table/mapping, got {type(raw).__name__}")
    name = raw.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise HostsFileError(f"{where}: 'name' must be a host name "
                             f"(letters, digits, '.', '_', '-'), got {name!r}")
    where = f"hosts file {path}: host {name!r}"
    unknown = set(raw) - _FIELDS
    if unknown:
        raise HostsFileError(f"{where}: unknown key(s) {sorted(unknown)}; "
                             f"known keys are {sorted(_FIELDS)}")
    values: dict[str, Any] = {"name": name}
    for key, value in raw.items():
        if key != "name":
            values[key] = _CHECKS[key](f"{where}: {key!r}", value)
    host = HostConfig(**values)
    _check_reserved(where, host)
    return host


def _integer(minimum: int) -> Callable[[str, Any], int]:
    def check(where: str, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise HostsFileError(f"{where} must be an integer >= {minimum}, got {value!r}")
        return value
    return check


def _ratio(where: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise HostsFileError(f"{where} must be a number > 0, got {value!r}")
    return float(value)


def _text(where: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise HostsFileError(f"{where} must be a non-empty string, got {value!r}")
    return value


def _counts(keys: tuple[str, ...] | None) -> Callable[[str, Any], dict[str, int]]:
    """A mapping name -> integer >= 0; `keys` limits the names when given."""
    def check(where: str, value: Any) -> dict[str, int]:
        if not isinstance(value, Mapping):
            raise HostsFileError(f"{where} must be a table/mapping, got {value!r}")
        out: dict[str, int] = {}
        for name, count in value.items():
            if not isinstance(name, str) or not name or (keys and name not in keys):
                allowed = f" (one of {list(keys)})" if keys else ""
                raise HostsFileError(f"{where}: bad name {name!r}{allowed}")
            out[name] = _integer(0)(f"{where}[{name!r}]", count)
        return out
    return check


def _traits(where: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise HostsFileError(f"{where} must be a list of trait names, got {value!r}")
    standard = set(os_traits.get_traits())
    for name in value:
        if not isinstance(name, str) or not (_CUSTOM_TRAIT.match(name) or name in standard):
            raise HostsFileError(f"{where}: {name!r} is neither a standard trait nor a "
                                 "custom one (CUSTOM_ followed by A-Z, 0-9, _)")
    return tuple(value)


def _aggregates(where: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise HostsFileError(f"{where} must be a list of aggregate uuids, got {value!r}")
    out = []
    for item in value:
        try:
            out.append(str(uuid.UUID(str(item))))
        except ValueError:
            raise HostsFileError(f"{where}: {item!r} is not a uuid") from None
    return tuple(out)


_CHECKS: dict[str, Callable[[str, Any], Any]] = {
    "vcpus": _integer(1), "memory_mb": _integer(1), "disk_gb": _integer(0),
    "reserved": _counts(RESERVABLE),
    "cpu_allocation_ratio": _ratio, "ram_allocation_ratio": _ratio,
    "disk_allocation_ratio": _ratio,
    "traits": _traits, "aggregates": _aggregates,
    "availability_zone": _text, "pci": _counts(None), "shared_storage": _text,
    "host_ip": _text,
}


def _check_reserved(where: str, host: HostConfig) -> None:
    totals = {"VCPU": host.vcpus, "MEMORY_MB": host.memory_mb, "DISK_GB": host.disk_gb}
    for rc, amount in host.reserved.items():
        if amount > totals[rc]:
            raise HostsFileError(f"{where}: 'reserved'[{rc!r}] = {amount} exceeds the "
                                 f"total of {totals[rc]}")


def _check_unique(path: str, hosts: list[HostConfig]) -> None:
    seen: set[str] = set()
    for host in hosts:
        if host.name in seen:
            raise HostsFileError(f"hosts file {path}: host {host.name!r} is listed twice")
        seen.add(host.name)


def _check_shared_storage(path: str, hosts: list[HostConfig]) -> None:
    """Hosts naming one sharing provider must agree on its DISK_GB inventory.

    Each of their agents writes that inventory; if they disagreed, the
    provider's inventory would flip at every report.
    """
    first: dict[str, HostConfig] = {}
    for host in hosts:
        if host.shared_storage is None:
            continue
        other = first.setdefault(host.shared_storage, host)
        if shared_disk(other) != shared_disk(host):
            raise HostsFileError(
                f"hosts file {path}: host {host.name!r} and host {other.name!r} share storage "
                f"{host.shared_storage!r} but disagree on disk_gb, reserved DISK_GB or "
                "disk_allocation_ratio")


def shared_disk(host: HostConfig) -> tuple[int, int, float]:
    """The DISK_GB inventory a host reports: total, reserved, allocation ratio."""
    return host.disk_gb, int(host.reserved.get("DISK_GB", 0)), host.disk_allocation_ratio
