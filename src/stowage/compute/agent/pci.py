"""PCI devices of one host, counted by alias, its SR-IOV VFs counted by PF, and the claims on them.

Placement does not see the flavor's PCI devices (stowage models them as
Nova's PCI tracker did before they moved to Placement), so the agent itself
refuses a claim the host cannot satisfy; the conductor then reschedules.

The VFs of each SR-IOV PF (`vfs` of a `sriov` network device) are counted
per PF name apart from the aliases: Placement sees them as the PF provider's
`SRIOV_NET_VF` inventory (agent/network_devices.py), and a `direct` port's
VF is claimed here *on the PF its allocation names* -- Nova's
`parent_ifname`, read from the last part of the PF provider's name -- so
the VF and the port's bandwidth always come from the same PF.

A claim is keyed by (instance uuid, migration uuid or ""): the instance's own
devices are (instance, ""), a move's destination devices (instance,
migration). The keys never change while a claim lives, so a same-host resize
holds the old and the new devices side by side and each undo drops exactly
what its step took, however often it runs. One key may hold devices by alias
and VFs by PF at once; dropping the key drops both.

Each VF a key holds is a numbered function of its PF (lowest free number
first), labelled with the port it serves once the port is known
(`claim_port_vfs`): the port's binding shows that VF's PCI address. VFs
rebuilt from the allocations after a restart (`claim_vfs`) are unlabelled
until their ports are named again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping

__all__ = ["PciTracker", "PciClaimFailed", "ClaimKey", "VfSlot"]

ClaimKey = tuple[str, str]
VfSlot = tuple[str, int]  # (PF name, VF number)


class PciClaimFailed(Exception):
    """Not enough free devices of an alias, or VFs of a PF, on this host."""


class _Pool:
    """Devices counted by name (an alias, or a PF), and what each claim key holds of them.

    Not thread-safe: the tracker's lock guards it.
    """

    def __init__(self, what: str, devices: Mapping[str, int]) -> None:
        self.what = what
        self.devices = dict(devices)
        self.claims: dict[ClaimKey, dict[str, int]] = {}

    def check(self, host: str, key: ClaimKey, wanted: Mapping[str, int]) -> None:
        for name, count in sorted(wanted.items()):
            free = self.free(name, ignoring=key)
            if count > free:
                raise PciClaimFailed(
                    f"{self.what} request {name}:{count} failed on host {host}: "
                    f"{free} of {self.devices.get(name, 0)} free")

    def free(self, name: str, ignoring: ClaimKey | None = None) -> int:
        used = sum(c.get(name, 0) for k, c in self.claims.items() if k != ignoring)
        return self.devices.get(name, 0) - used

    def stats(self) -> dict[str, dict[str, int]]:
        return {name: {"total": total, "free": self.free(name)}
                for name, total in sorted(self.devices.items())}


class PciTracker:
    def __init__(self, host: str, devices: Mapping[str, int],
                 vfs: Mapping[str, int] | None = None) -> None:
        self.host = host
        self._aliases = _Pool("PCI device", devices)
        self._vfs = _Pool("VF", vfs or {})
        # PF name -> VF number -> (claim key, port id or None)
        self._slots: dict[str, dict[int, tuple[ClaimKey, str | None]]] = {}
        self._lock = threading.Lock()

    @property
    def devices(self) -> dict[str, int]:
        return self._aliases.devices

    def claim(self, key: ClaimKey, wanted: Mapping[str, int]) -> bool:
        """Hold `wanted` (alias -> count) under `key`, replacing the key's devices.

        True if the key held no devices before. Raises PciClaimFailed,
        changing nothing, when an alias lacks devices.
        """
        return self._claim(self._aliases, key, wanted)

    def claim_vfs(self, key: ClaimKey, wanted: Mapping[str, int]) -> bool:
        """Hold `wanted` (PF name -> VF count) under `key`, replacing the key's VFs.

        True if the key held no VFs before. Raises PciClaimFailed, changing
        nothing, when a PF lacks free VFs (or is no PF of this host).
        """
        with self._lock:
            created = self._claim_locked(self._vfs, key, wanted)
            if any(n > 0 for n in wanted.values()):
                self._number(key, {pf: [None] * n for pf, n in wanted.items() if n > 0})
            return created

    def claim_port_vfs(self, key: ClaimKey, ports: Mapping[str, str]) -> dict[str, VfSlot]:
        """Hold one VF for each port (port id -> PF name) under `key`, replacing the key's
        VFs; returns port id -> (PF, VF number). A port keeps the VF it had under the key.

        Raises PciClaimFailed, changing nothing, when a PF lacks free VFs.
        """
        wanted: dict[str, list[str | None]] = {}
        for port, pf in sorted(ports.items()):
            wanted.setdefault(pf, []).append(port)
        with self._lock:
            self._claim_locked(self._vfs, key, {pf: len(p) for pf, p in wanted.items()})
            self._number(key, wanted)
            return self._labels(key)

    def port_vfs(self, key: ClaimKey) -> dict[str, VfSlot]:
        """port id -> (PF, VF number) of the labelled VFs the key holds."""
        with self._lock:
            return self._labels(key)

    def _number(self, key: ClaimKey, wanted: Mapping[str, list[str | None]]) -> None:
        """Give the key's VFs their numbers: kept where the port (or an unlabelled VF of
        the PF) was the key's already, the lowest free number otherwise."""
        old = {pf: {n: port for n, (k, port) in used.items() if k == key}
               for pf, used in self._slots.items()}
        self._release(lambda k: k == key)
        for pf, ports in wanted.items():
            used = self._slots.setdefault(pf, {})
            mine = old.get(pf, {})
            keep = {port: n for n, port in mine.items() if port is not None}
            spare = sorted(n for n, port in mine.items() if port is None or port not in ports)
            for port in ports:
                number = keep.get(port) if port is not None else None
                if number is None:
                    number = spare.pop(0) if spare else _lowest_free(used)
                used[number] = (key, port)

    def _labels(self, key: ClaimKey) -> dict[str, VfSlot]:
        return {port: (pf, n) for pf, used in self._slots.items()
                for n, (k, port) in used.items() if k == key and port is not None}

    def _release(self, which: Callable[[ClaimKey], bool]) -> None:
        for used in self._slots.values():
            for number in [n for n, (k, _) in used.items() if which(k)]:
                del used[number]

    def _claim(self, pool: _Pool, key: ClaimKey, wanted: Mapping[str, int]) -> bool:
        with self._lock:
            return self._claim_locked(pool, key, wanted)

    def _claim_locked(self, pool: _Pool, key: ClaimKey, wanted: Mapping[str, int]) -> bool:
        wanted = {name: n for name, n in wanted.items() if n > 0}
        existed = key in pool.claims
        if not wanted:
            return False
        pool.check(self.host, key, wanted)
        pool.claims[key] = wanted
        return not existed

    def drop(self, key: ClaimKey) -> None:
        with self._lock:
            for pool in (self._aliases, self._vfs):
                pool.claims.pop(key, None)
            self._release(lambda k: k == key)

    def drop_instance(self, instance_uuid: str, keep: ClaimKey | None = None) -> None:
        """Drop every claim of the instance on this host, except `keep`."""
        with self._lock:
            for pool in (self._aliases, self._vfs):
                for key in [k for k in pool.claims if k[0] == instance_uuid and k != keep]:
                    del pool.claims[key]
            self._release(lambda k: k[0] == instance_uuid and k != keep)

    def add_port_vf(self, key: ClaimKey, port: str, pf: str) -> VfSlot:
        """One more VF of `pf` under `key` for `port` (an interface attach), the key's
        other VFs kept; the VF the port holds under the key already, if it has one.

        Raises PciClaimFailed, changing nothing, when the PF has no free VF.
        """
        with self._lock:
            mine = self._labels(key)
            if port in mine:
                return mine[port]
            held = dict(self._vfs.claims.get(key, {}))
            if self._vfs.free(pf) < 1:
                raise PciClaimFailed(f"VF request {pf}:1 failed on host {self.host}: "
                                     f"0 of {self._vfs.devices.get(pf, 0)} free")
            held[pf] = held.get(pf, 0) + 1
            self._vfs.claims[key] = held
            used = self._slots.setdefault(pf, {})
            number = _lowest_free(used)
            used[number] = (key, port)
            return (pf, number)

    def drop_port_vf(self, key: ClaimKey, port: str) -> None:
        """The VF `port` holds under `key` is given back (an interface detach); idempotent."""
        with self._lock:
            slot = self._labels(key).get(port)
            if slot is None:
                return
            pf, number = slot
            del self._slots[pf][number]
            held = self._vfs.claims.get(key, {})
            held[pf] = held.get(pf, 0) - 1
            if held[pf] <= 0:
                held.pop(pf, None)
            if not held:
                self._vfs.claims.pop(key, None)

    def instance_key(self, instance_uuid: str) -> ClaimKey:
        """The key the instance's own devices are held under here (after a confirmed move,
        the move's key), (instance, "") when it holds none."""
        with self._lock:
            keys = sorted({k for pool in (self._aliases, self._vfs) for k in pool.claims
                           if k[0] == instance_uuid})
        return keys[0] if keys else (instance_uuid, "")

    def holds(self, key: ClaimKey) -> bool:
        with self._lock:
            return key in self._aliases.claims or key in self._vfs.claims

    def vfs_held(self, key: ClaimKey) -> dict[str, int]:
        """PF name -> VFs the key holds there (which PF serves a port's VF)."""
        with self._lock:
            return dict(self._vfs.claims.get(key, {}))

    def stats(self) -> dict[str, dict[str, int]]:
        """alias -> {"total": n, "free": n}, as compute_nodes.pci_stats stores it."""
        with self._lock:
            return self._aliases.stats()

    def vf_stats(self) -> dict[str, dict[str, int]]:
        """PF name -> {"total": n, "free": n}: the host's VFs."""
        with self._lock:
            return self._vfs.stats()


def _lowest_free(used: Mapping[int, object]) -> int:
    number = 0
    while number in used:
        number += 1
    return number
