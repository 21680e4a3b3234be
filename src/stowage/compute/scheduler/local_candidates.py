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
import time
from collections.abc import Mapping, Sequence
from typing import Any

from stowage.compute.scheduler.host_state import Offer
from stowage.errors import DomainError
from stowage.metrics import process as metrics
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
        # provider id -> (provider, free per class): valid while that object is current.
        self._free: dict[int, tuple[Provider, Mapping[str, int]]] = {}

    @classmethod
    def of(cls, placement: Any, minor: int) -> LocalCandidates | None:
        """The reader for `placement` when it is this process's Placement, else None."""
        served = getattr(placement, "served_app", None)
        app = served() if served is not None else None
        return None if app is None else cls(app, minor)

    def offer(self, params: Sequence[tuple[str, str]]) -> Offer | None:
        """The offer for `params`; None when the engine refuses the query (ask the API)."""
        started = time.monotonic()
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
                hit = self._keep(provider)
            free[provider.uuid] = hit[1]
            root_of[provider.uuid] = providers[provider.root_id].uuid
        metrics.candidates_answered(started, result)  # as the API's answer is counted
        return Offer(requests, free, root_of)

    def _keep(self, provider: Provider) -> tuple[Provider, Mapping[str, int]]:
        hit = (provider, {rc: inv.capacity - inv.used
                          for rc, inv in provider.inventories.items()})
        with self._lock:
            if len(self._free) >= _MAX_KEPT:
                self._free.clear()
            self._free[provider.id] = hit
        return hit
