"""Simulated hosts: what each offers (inventory, traits, aggregates, AZ, PCI and network devices).

`sim_hosts(n)` is `stowage serve --sim-hosts N`: n identical hosts (each with
the OVS bridge `SIM_BRIDGE` when `[compute] sim_network_devices` is on). A
hosts file describes hosts one by one, in TOML (`[[hosts]]` tables) or YAML
(a list, or a mapping with a `hosts` list)::

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
    service_version = 38               # an old compute (see compute/upgrade.py)

    [[hosts.network_devices]]          # an OVS bridge (Neutron's Open vSwitch agent)
    name = "br-physnet0"
    kind = "ovs"
    physnet = "physnet0"
    egress_kbps = 10000000
    ingress_kbps = 10000000
    vnic_types = ["normal"]

    [[hosts.network_devices]]          # an SR-IOV PF (Neutron's NIC Switch agent)
    name = "ens5"
    kind = "sriov"
    physnet = "physnet1"
    egress_kbps = 25000000
    ingress_kbps = 25000000
    vnic_types = ["direct", "macvtap", "direct-physical"]
    vfs = 8

    [[hosts.faults]]                   # armed when the agent starts (docs/faults.md)
    step = "spawn"
    mode = "times"                     # once (default) | times | always
    times = 2
    error = "disk full"

What a network device turns into in Placement is `agent/network_devices.py`'s
business; docs/network-devices.md explains both.

`aggregates` are Placement aggregates the agent keeps on its node provider
(never removing those os-aggregates mirrored there); `availability_zone` is
the host's zone while no host aggregate with `availability_zone` metadata
holds it: an aggregate's zone wins, as zones are aggregates in Nova
(docs/aggregates.md).

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

from stowage.compute.agent.faults import ARMABLE_STEPS, FaultSpec, FaultSpecError

__all__ = ["HostConfig", "NetworkDevice", "HostsFileError", "sim_hosts", "load_hosts_file",
           "shared_disk", "RESERVABLE", "OVS", "SRIOV", "AGENT_TYPES", "VNIC_TYPES",
           "DEFAULT_VNIC_TYPES", "SIM_BRIDGE", "MAX_TOTAL"]

# The resource classes a host reports, hence the ones it may reserve.
RESERVABLE = ("VCPU", "MEMORY_MB", "DISK_GB")
_CUSTOM_TRAIT = re.compile(r"^CUSTOM_[A-Z0-9_]+$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$")
# A Linux network interface name (IFNAMSIZ - 1 = 15 characters); never ':', which
# separates the parts of a device provider's name.
_IFNAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,14}$")
# Placement's largest inventory total, and its longest provider name.
MAX_TOTAL = 2147483647
_MAX_PROVIDER_NAME = 200

# Device kinds, each named by the Neutron agent that reports such devices.
OVS, SRIOV = "ovs", "sriov"
AGENT_TYPES = {OVS: "Open vSwitch agent", SRIOV: "NIC Switch agent"}
# The vnic types each agent binds, and those a device of that kind gets when it names none.
VNIC_TYPES = {OVS: ("normal", "direct", "smart-nic"),
              SRIOV: ("direct", "macvtap", "direct-physical", "accelerator-direct",
                      "accelerator-direct-physical")}
DEFAULT_VNIC_TYPES = {OVS: ("normal",), SRIOV: ("direct", "macvtap", "direct-physical")}


@dataclass(frozen=True)
class NetworkDevice:
    """A physical network device of a host: an OVS bridge or an SR-IOV physical function.

    `egress_kbps` / `ingress_kbps` of 0 mean no bandwidth inventory in that
    direction (as Neutron leaves out a direction it was given no figure
    for). `vfs` is the PF's virtual functions (SR-IOV only). An empty
    `vnic_types` means the kind's default.
    """

    name: str
    kind: str
    physnet: str
    egress_kbps: int = 0
    ingress_kbps: int = 0
    vnic_types: tuple[str, ...] = ()
    vfs: int = 0

    def __post_init__(self) -> None:
        if not self.vnic_types:
            object.__setattr__(self, "vnic_types", DEFAULT_VNIC_TYPES[self.kind])


# `[compute] sim_network_devices = true`: what each host of `--sim-hosts N` gets.
SIM_BRIDGE = NetworkDevice("br-physnet0", OVS, "physnet0", egress_kbps=10_000_000,
                           ingress_kbps=10_000_000)


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
    # OVS bridges and SR-IOV PFs, reported as Neutron's agents report them.
    network_devices: tuple[NetworkDevice, ...] = ()
    # The compute service version the agent reports (None: the current one,
    # `upgrade.SERVICE_VERSION`); an older one plays a compute not yet upgraded.
    service_version: int | None = None
    # The cell the host belongs to, by name ("": the default cell, cell1); a host's
    # servers keep their records in its cell's database (docs/cells.md).
    cell: str = ""
    # Faults armed when the host's agent starts (compute/agent/faults.py, docs/faults.md).
    faults: tuple[FaultSpec, ...] = ()


class HostsFileError(ValueError):
    """A hosts file that cannot be used; the message names the file, host and key."""


def sim_hosts(n: int, network_devices: bool = False) -> list[HostConfig]:
    """n default hosts; with `network_devices`, each has the OVS bridge `SIM_BRIDGE`."""
    devices = (SIM_BRIDGE,) if network_devices else ()
    return [HostConfig(name=f"host{i}", network_devices=devices) for i in range(1, n + 1)]


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
    _check_provider_names(where, host)
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


_DEVICE_KEYS = ("name", "kind", "physnet", "egress_kbps", "ingress_kbps", "vnic_types", "vfs")


def _network_devices(where: str, value: Any) -> tuple[NetworkDevice, ...]:
    """A host's devices: names unique, and one OVS bridge per physnet (Neutron's bridge_mappings).

    Several SR-IOV PFs may serve one physnet (Neutron's physical_device_mappings).
    """
    if not isinstance(value, list):
        raise HostsFileError(f"{where} must be a list of devices (in TOML, "
                             f"[[hosts.network_devices]] tables), got {value!r}")
    devices = [_device(where, i, raw) for i, raw in enumerate(value)]
    names: set[str] = set()
    bridges: dict[str, str] = {}
    for device in devices:
        if device.name in names:
            raise HostsFileError(f"{where}: device {device.name!r} is listed twice")
        names.add(device.name)
        if device.kind == OVS:
            other = bridges.setdefault(device.physnet, device.name)
            if other != device.name:
                raise HostsFileError(
                    f"{where}: bridges {other!r} and {device.name!r} both serve physnet "
                    f"{device.physnet!r}; the Open vSwitch agent maps a physnet to one bridge")
    return tuple(devices)


def _device(where: str, index: int, raw: Any) -> NetworkDevice:
    at = f"{where}[#{index + 1}]"
    if not isinstance(raw, Mapping):
        raise HostsFileError(f"{at}: expected a table/mapping, got {type(raw).__name__}")
    name = raw.get("name")
    if not isinstance(name, str) or not _IFNAME.match(name):
        raise HostsFileError(f"{at}: 'name' must be a network interface name (up to 15 "
                             f"letters, digits, '.', '_', '-'), got {name!r}")
    at = f"{where}[{name!r}]"
    unknown = set(raw) - set(_DEVICE_KEYS)
    if unknown:
        raise HostsFileError(f"{at}: unknown key(s) {sorted(unknown)}; "
                             f"known keys are {sorted(_DEVICE_KEYS)}")
    kind = raw.get("kind")
    if kind not in AGENT_TYPES:
        raise HostsFileError(f"{at}: 'kind' must be one of {sorted(AGENT_TYPES)}, got {kind!r}")
    if "vfs" in raw and kind != SRIOV:
        raise HostsFileError(f"{at}: 'vfs' is for kind 'sriov' only")
    return NetworkDevice(
        name=name, kind=kind, physnet=_physnet(f"{at}: 'physnet'", raw.get("physnet")),
        egress_kbps=_amount(f"{at}: 'egress_kbps'", raw.get("egress_kbps", 0)),
        ingress_kbps=_amount(f"{at}: 'ingress_kbps'", raw.get("ingress_kbps", 0)),
        vnic_types=_vnic_types(f"{at}: 'vnic_types'", kind, raw.get("vnic_types", [])),
        vfs=_amount(f"{at}: 'vfs'", raw.get("vfs", 0)))


def _physnet(where: str, value: Any) -> str:
    # Neutron keeps a physnet name in 64 characters.
    if not isinstance(value, str) or not value.strip() or len(value) > 64:
        raise HostsFileError(f"{where} must be a physical network name (1 to 64 "
                             f"characters), got {value!r}")
    return value


def _amount(where: str, value: Any) -> int:
    """An inventory total: 0 (none) up to Placement's largest."""
    number = _integer(0)(where, value)
    if number > MAX_TOTAL:
        raise HostsFileError(f"{where} must be at most {MAX_TOTAL}, got {number}")
    return number


def _vnic_types(where: str, kind: str, value: Any) -> tuple[str, ...]:
    """Known to the kind's agent, no repeats; empty means the kind's default."""
    allowed = VNIC_TYPES[kind]
    if not isinstance(value, list):
        raise HostsFileError(f"{where} must be a list of vnic types, got {value!r}")
    for item in value:
        if item not in allowed:
            raise HostsFileError(f"{where}: {item!r} is not a vnic type the "
                                 f"{AGENT_TYPES[kind]} binds (one of {list(allowed)})")
    if len(set(value)) != len(value):
        raise HostsFileError(f"{where} lists a vnic type twice: {value!r}")
    return tuple(value)


def _faults(where: str, value: Any) -> tuple[FaultSpec, ...]:
    """Faults to arm at start, one per step ("agent", a kill, is not one to arm)."""
    if not isinstance(value, list):
        raise HostsFileError(f"{where} must be a list of faults (in TOML, "
                             f"[[hosts.faults]] tables), got {value!r}")
    specs: dict[str, FaultSpec] = {}
    for index, raw in enumerate(value):
        at = f"{where}[#{index + 1}]"
        if not isinstance(raw, Mapping):
            raise HostsFileError(f"{at}: expected a table/mapping, got {type(raw).__name__}")
        try:
            spec = FaultSpec.from_mapping(raw)
        except FaultSpecError as exc:
            raise HostsFileError(f"{at}: {exc}") from None
        if spec.step not in ARMABLE_STEPS:
            raise HostsFileError(f"{at}: step {spec.step!r} kills the agent; it cannot be "
                                 "armed at start")
        if spec.step in specs:
            raise HostsFileError(f"{where}: step {spec.step!r} is listed twice")
        specs[spec.step] = spec
    return tuple(specs.values())


_CHECKS: dict[str, Callable[[str, Any], Any]] = {
    "vcpus": _integer(1), "memory_mb": _integer(1), "disk_gb": _integer(0),
    "reserved": _counts(RESERVABLE),
    "cpu_allocation_ratio": _ratio, "ram_allocation_ratio": _ratio,
    "disk_allocation_ratio": _ratio,
    "traits": _traits, "aggregates": _aggregates,
    "availability_zone": _text, "pci": _counts(None), "shared_storage": _text,
    "host_ip": _text, "network_devices": _network_devices,
    "service_version": _integer(0), "cell": _text, "faults": _faults,
}


def _check_reserved(where: str, host: HostConfig) -> None:
    totals = {"VCPU": host.vcpus, "MEMORY_MB": host.memory_mb, "DISK_GB": host.disk_gb}
    for rc, amount in host.reserved.items():
        if amount > totals[rc]:
            raise HostsFileError(f"{where}: 'reserved'[{rc!r}] = {amount} exceeds the "
                                 f"total of {totals[rc]}")


def _check_provider_names(where: str, host: HostConfig) -> None:
    """Each device provider's name (`<host>:<agent>:<device>`) must fit Placement's 200."""
    for device in host.network_devices:
        name = f"{host.name}:{AGENT_TYPES[device.kind]}:{device.name}"
        if len(name) > _MAX_PROVIDER_NAME:
            raise HostsFileError(
                f"{where}: the provider name {name!r} of network device {device.name!r} is "
                f"longer than Placement's {_MAX_PROVIDER_NAME} characters; shorten the host "
                "name or the device name")


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
