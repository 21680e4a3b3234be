"""The candidates of a Placement served by this process, read without JSON.

Why: `stowage serve` runs the scheduler and Placement in one process by
default. Through the API, one decision at 1,000 hosts had Placement render
2.6 MB of JSON (provider summaries with ~70 traits each) that the scheduler
then decoded, skipping most of it: a third of the decision's CPU. Here the
scheduler asks the candidates engine itself (`placement.candidates.direct`:
the same query validation, snapshot, search and memo as the API) and reads
the result objects: the allocation requests are the engine's own memoized
views (built once per candidate, kept while its tree is unchanged), and a
provider's free amounts are computed once per provider object (the snapshot
replaces a provider's object exactly when it changes).

A remote Placement (another process, a real cloud's, behind Keystone) is
reached through the API as before; both ways give the scheduler the same
`Offer`, so they choose the same hosts (tests/functional/test_scheduler_local.py).
A query the engine refuses (an unknown class or trait: the API's 400) is
sent through the API, so that the error is the API's.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

from stowage.compute.scheduler.host_state import Offer, request_roots
from stowage.errors import DomainError
from stowage.placement.candidates import direct
from stowage.placement.candidates.snapshot import Provider
from stowage.placement.candidates.views import allocation_requests
from stowage.web.errors import HTTPError

__all__ = ["LocalCandidates"]

# Providers whose free amounts are kept; past it the table is dropped and refilled.
_MAX_KEPT = 400_000


class LocalCandidates:
    """Reads the candidates of the Placement app `served` (an app of this process)."""

    def __init__(self, served: Any, minor: int) -> None:
        self._state = served.state
        self._minor = minor
        self._lock = threading.Lock()
        # provider id -> (provider, free per class, root uuid): valid while that object is
        # current (a snapshot replaces a provider's object when it changes, reparenting
        # included).
        self._free: dict[int, tuple[Provider, Mapping[str, int], str]] = {}

    @classmethod
    def of(cls, placement: Any, minor: int) -> LocalCandidates | None:
        """The reader for `placement` when it is this process's Placement, else None."""
        served = getattr(placement, "served_app", None)
        app = served() if served is not None else None
        return None if app is None else cls(app, minor)

    def offer(self, params: Sequence[tuple[str, str]]) -> Offer | None:
        """The offer for `params`; None when the engine refuses the query (ask the API)."""
        try:
            found = direct.find(self._state, params, self._minor)
        except (HTTPError, DomainError):  # what the API answers with an error
            return None
        snap, result = found.snapshot, found.result
        providers = snap.providers
        requests = allocation_requests(snap, result.candidates, self._minor)
        free: dict[str, Mapping[str, int]] = {}
        root_of: dict[str, str] = {}
        kept = self._free
        for pid in result.summary_ids:
            provider = providers[pid]
            hit = kept.get(pid)
            if hit is None or hit[0] is not provider:
                hit = self._keep(provider, providers[provider.root_id].uuid)
            uuid = provider.uuid
            free[uuid] = hit[1]
            root_of[uuid] = hit[2]
        return Offer(requests, free, root_of, request_roots(requests, root_of))

    def _keep(self, provider: Provider, root: str) -> tuple[Provider, Mapping[str, int], str]:
        hit = (provider, {rc: inv.capacity - inv.used
                          for rc, inv in provider.inventories.items()}, root)
        with self._lock:
            if len(self._free) >= _MAX_KEPT:
                self._free.clear()
            self._free[provider.id] = hit
        return hit
