"""What a simulated guest writes to its serial console, and what its diagnostics read.

A real guest's console log is the kernel and init talking: boot messages,
a login prompt, the shutdown sequence. The simulated guest writes the same
kind of lines at the moments a real one would -- when it boots (spawn,
power on, arriving by a cold move), when it powers off, when network
configuration is injected -- so that `os-getConsoleOutput` shows what
happened to the guest, in order. The log keeps its last `MAX_LINES` lines,
as a hypervisor rotates the console file.

Diagnostics are read from the same guest: its power state, how long since
it booted, its flavor's CPUs, memory and disks, and the NICs of its ports.
The simulated guest does no work, so its counters (CPU time, bytes and
packets) are zero rather than invented.

Its root disk, as a snapshot uploads it (`disk_bytes`), is a few KiB
generated from the instance's uuid: the same bytes every time, so an image
made from a server has a size and checksum a test can predict.
"""

from __future__ import annotations

import datetime
import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from stowage.compute.states import RUNNING

__all__ = ["MAX_LINES", "boot_lines", "shutdown_lines", "network_lines", "tail",
           "diagnostics", "legacy_diagnostics", "STATE_NAMES", "disk_bytes", "DISK_SIZE"]

MAX_LINES = 1000
DISK_SIZE = 4096  # bytes of a simulated root disk
# Nova's power_state.STATE_MAP: the names diagnostics and errors use.
STATE_NAMES = {0: "pending", 1: "running", 3: "paused", 4: "shutdown", 6: "crashed",
               7: "suspended"}


def boot_lines(instance_uuid: str, host: str, flavor: Mapping[str, Any]) -> list[str]:
    vcpus, ram = flavor.get("vcpus", 1), flavor.get("memory_mb", 0)
    return ["[    0.000000] Linux version 6.1.0-stowage (simulated guest)",
            f"[    0.000000] Command line: root=/dev/vda1 console=ttyS0 uuid={instance_uuid}",
            f"[    0.010000] smpboot: Allowing {vcpus} CPUs, 0 hotplug CPUs",
            f"[    0.020000] Memory: {ram}MB available",
            f"[    0.500000] virtio_blk virtio1: [vda] {flavor.get('root_gb', 0)} GiB disk",
            "[    1.000000] Run /sbin/init as init process",
            f"Starting guest on host {host}... OK",
            "",
            f"{flavor.get('name') or 'guest'} login: "]


def shutdown_lines() -> list[str]:
    return ["Stopping services... OK", "[   99.000000] reboot: Power down"]


def network_lines(vifs: Sequence[Mapping[str, Any]]) -> list[str]:
    lines = ["network configuration injected:"]
    for vif in vifs:
        ips = ", ".join(str(ip.get("address")) for ip in vif.get("ips") or ())
        lines.append(f"  {vif.get('mac')} on {vif.get('network')}: {ips or 'no address'}")
    return lines


def tail(lines: Sequence[str], length: int | None) -> str:
    """The last `length` lines (all when None; none when 0), as Nova's `_tail_log`."""
    if length is None:
        return "\n".join(lines)
    if length <= 0:
        return ""
    return "\n".join(lines[-length:])


def _disks(flavor: Mapping[str, Any]) -> list[str]:
    """vda for the root disk, then vdb for ephemeral and vdc for swap when the flavor has them."""
    names = ["vda"]
    if flavor.get("ephemeral_gb"):
        names.append("vdb")
    if flavor.get("swap"):
        names.append("vdc")
    return names


def _uptime(booted_at: datetime.datetime | None, now: datetime.datetime) -> int | None:
    return None if booted_at is None else max(0, int((now - booted_at).total_seconds()))


def diagnostics(flavor: Mapping[str, Any], power_state: int,
                booted_at: datetime.datetime | None, now: datetime.datetime,
                nics: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The 2.48 standard diagnostics of one guest (without config_drive: the API knows it)."""
    vcpus, ram = int(flavor.get("vcpus") or 0), int(flavor.get("memory_mb") or 0)
    nic_details = [{"mac_address": nic.get("mac"), **{
        f"{way}_{what}": 0 for way in ("rx", "tx")
        for what in ("octets", "errors", "drop", "packets", "rate")}} for nic in nics]
    disk_details = [{"read_bytes": 0, "read_requests": 0, "write_bytes": 0,
                     "write_requests": 0, "errors_count": 0} for _ in _disks(flavor)]
    return {"state": STATE_NAMES.get(power_state, "pending"),
            "driver": "libvirt", "hypervisor": "fake", "hypervisor_os": "linux",
            "uptime": _uptime(booted_at, now),
            "num_cpus": vcpus, "num_nics": len(nic_details), "num_disks": len(disk_details),
            "memory_details": {"maximum": ram, "used": ram if power_state == RUNNING else 0},
            "cpu_details": [{"id": n, "time": 0, "utilisation": 0} for n in range(vcpus)],
            "nic_details": nic_details, "disk_details": disk_details}


def legacy_diagnostics(flavor: Mapping[str, Any], nics: Sequence[Mapping[str, Any]]
                       ) -> dict[str, Any]:
    """Before 2.48 the driver's own flat dict: libvirt's keys (memory in KiB)."""
    ram_kib = int(flavor.get("memory_mb") or 0) * 1024
    found: dict[str, Any] = {f"cpu{n}_time": 0 for n in range(int(flavor.get("vcpus") or 0))}
    found.update({"memory": ram_kib, "memory-actual": ram_kib, "memory-rss": 0})
    for disk in _disks(flavor):
        found.update({f"{disk}_{what}": 0
                      for what in ("read", "read_req", "write", "write_req", "errors")})
    for nic in nics:
        device = "tap" + str(nic.get("port_id") or "")[:11]
        found.update({f"{device}_{what}": 0
                      for what in ("rx", "rx_drop", "rx_errors", "rx_packets",
                                   "tx", "tx_drop", "tx_errors", "tx_packets")})
    return found


def disk_bytes(instance_uuid: str) -> bytes:
    """The simulated root disk of `instance_uuid`: a header naming it, then a sha256
    stream seeded by it, `DISK_SIZE` bytes in all."""
    out = bytearray(f"stowage simulated disk of instance {instance_uuid}\n".encode())
    block = instance_uuid.encode()
    while len(out) < DISK_SIZE:
        block = hashlib.sha256(block).digest()
        out += block
    return bytes(out[:DISK_SIZE])
