"""PCI devices of one host, counted by alias, and the claims held on them.

Placement does not see PCI devices (stowage models them as Nova's PCI
tracker did before they moved to Placement), so the agent itself refuses a
claim the host cannot satisfy; the conductor then reschedules.

A claim is keyed by (instance uuid, migration uuid or ""): the instance's own
devices are (instance, ""), a move's destination devices (instance,
migration). The keys never change while a claim lives, so a same-host resize
holds the old and the new devices side by side and each undo drops exactly
what its step took, however often it runs.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

__all__ = ["PciTracker", "PciClaimFailed", "ClaimKey"]

ClaimKey = tuple[str, str]


class PciClaimFailed(Exception):
    """Not enough free devices of an alias on this host."""


class PciTracker:
    def __init__(self, host: str, devices: Mapping[str, int]) -> None:
        self.host = host
        self.devices = dict(devices)
        self._claims: dict[ClaimKey, dict[str, int]] = {}
        self._lock = threading.Lock()

    def claim(self, key: ClaimKey, wanted: Mapping[str, int]) -> bool:
        """Hold `wanted` under `key` (replacing what `key` held); True if the claim is new.

        Raises PciClaimFailed, changing nothing, when an alias lacks devices.
        """
        wanted = {alias: n for alias, n in wanted.items() if n > 0}
        with self._lock:
            existed = key in self._claims
            if not wanted:
                return False
            for alias, count in sorted(wanted.items()):
                free = self._free(alias, ignoring=key)
                if count > free:
                    raise PciClaimFailed(
                        f"PCI device request {alias}:{count} failed on host {self.host}: "
                        f"{free} of {self.devices.get(alias, 0)} free")
            self._claims[key] = wanted
            return not existed

    def drop(self, key: ClaimKey) -> None:
        with self._lock:
            self._claims.pop(key, None)

    def drop_instance(self, instance_uuid: str, keep: ClaimKey | None = None) -> None:
        """Drop every claim of the instance on this host, except `keep`."""
        with self._lock:
            for key in [k for k in self._claims if k[0] == instance_uuid and k != keep]:
                del self._claims[key]

    def holds(self, key: ClaimKey) -> bool:
        with self._lock:
            return key in self._claims

    def stats(self) -> dict[str, dict[str, int]]:
        """alias -> {"total": n, "free": n}, as compute_nodes.pci_stats stores it."""
        with self._lock:
            return {alias: {"total": total, "free": self._free(alias)}
                    for alias, total in sorted(self.devices.items())}

    def _free(self, alias: str, ignoring: ClaimKey | None = None) -> int:
        used = sum(c.get(alias, 0) for k, c in self._claims.items() if k != ignoring)
        return self.devices.get(alias, 0) - used
