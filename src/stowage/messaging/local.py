"""The in-process transport: endpoints in this process, casts on a thread pool.

Used by the one-process deployment and by the tests. It still serialises
arguments and results to JSON, so a non-JSON argument fails here, on the
developer's machine, rather than later on a broker.

A target may have several endpoints, as it may have several consumers on a
broker: `call` and `cast` take them in turn (round robin), `fanout` runs the
method on each. Calls run on the caller's thread and have no timeout, so
`call_long` is `call`; an unserved target or method fails at once with
MessagingTimeout, as a broker's "no route" would.
"""

from __future__ import annotations

import json
import logging
import threading
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any

from stowage.messaging import MessagingTimeout, RemoteError

__all__ = ["LocalTransport"]

LOG = logging.getLogger(__name__)


def _wire(value: Any) -> Any:
    return json.loads(json.dumps(value))


class LocalTransport:
    """Direct calls for `call`, a bounded pool for `cast`; constructed without threads."""

    def __init__(self, max_workers: int = 16) -> None:
        self._endpoints: dict[str, list[object]] = {}
        # How many calls and casts each target has taken: the next endpoint in turn.
        self._turns: dict[str, int] = {}
        self._lock = threading.Lock()
        self._max_workers = max_workers
        self._pool: ThreadPoolExecutor | None = None
        self._pending: set[Future[None]] = set()

    def register(self, target: str, endpoint: object) -> None:
        """Add `endpoint` to the target's endpoints (registering it twice changes nothing)."""
        with self._lock:
            endpoints = self._endpoints.setdefault(target, [])
            if not any(e is endpoint for e in endpoints):
                endpoints.append(endpoint)

    def unregister(self, target: str, endpoint: object | None = None) -> None:
        """Remove `endpoint` from the target, or every endpoint of it when None."""
        with self._lock:
            kept = [e for e in self._endpoints.get(target, [])
                    if endpoint is not None and e is not endpoint]
            if kept:
                self._endpoints[target] = kept
            else:
                self._endpoints.pop(target, None)

    def _next_endpoint(self, target: str) -> object | None:
        with self._lock:
            endpoints = self._endpoints.get(target)
            if not endpoints:
                return None
            turn = self._turns.get(target, 0)
            self._turns[target] = turn + 1
            return endpoints[turn % len(endpoints)]

    @staticmethod
    def _bound(endpoint: object | None, target: str, method: str) -> Any:
        func = None if method.startswith("_") else getattr(endpoint, method, None)
        if endpoint is None or not callable(func):
            raise MessagingTimeout(f"no endpoint serves {target}.{method}")
        return func

    def call(self, target: str, method: str, /, **kwargs: Any) -> Any:
        func = self._bound(self._next_endpoint(target), target, method)
        args = _wire(kwargs)
        try:
            result = func(**args)
        except Exception as exc:  # noqa: BLE001 - the seam turns every failure into RemoteError
            raise RemoteError(type(exc).__name__, str(exc)) from exc
        return _wire(result)

    def call_long(self, target: str, method: str, /, **kwargs: Any) -> Any:
        """`call`: in-process calls have no timeout to lengthen."""
        return self.call(target, method, **kwargs)

    def cast(self, target: str, method: str, /, **kwargs: Any) -> None:
        func = self._bound(self._next_endpoint(target), target, method)
        self._submit(target, method, func, _wire(kwargs))

    def fanout(self, target: str, method: str, /, **kwargs: Any) -> None:
        """Cast to every endpoint of the target; a target without any is not an error."""
        if method.startswith("_"):
            raise MessagingTimeout(f"no endpoint serves {target}.{method}")
        args = _wire(kwargs)
        with self._lock:
            endpoints = list(self._endpoints.get(target, []))
        for endpoint in endpoints:
            func = getattr(endpoint, method, None)
            if callable(func):
                self._submit(target, method, func, args)
            else:
                LOG.warning("fanout %s.%s: an endpoint has no such method", target, method)

    def _submit(self, target: str, method: str, func: Any, args: dict[str, Any]) -> None:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self._max_workers, thread_name_prefix="cast")
            future = self._pool.submit(self._run_cast, target, method, func, args)
            self._pending.add(future)
        future.add_done_callback(self._forget)

    def _forget(self, future: Future[None]) -> None:
        with self._lock:
            self._pending.discard(future)

    @staticmethod
    def _run_cast(target: str, method: str, func: Any, args: dict[str, Any]) -> None:
        try:
            func(**args)
        except Exception:
            LOG.exception("cast %s.%s failed", target, method)

    def drain(self, timeout: float = 60.0) -> bool:
        """Wait until no cast is running (tests and benchmarks); True when idle."""
        while True:
            with self._lock:
                pending = set(self._pending)
            if not pending:
                return True
            done, not_done = wait(pending, timeout=timeout)
            if not_done:
                return False

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)
