"""The in-process transport: endpoints in this process, casts on a thread pool.

Used by the one-process deployment and by the tests. It still serialises
arguments and results to JSON, so a non-JSON argument fails here, on the
developer's machine, rather than later on a broker.
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
        self._endpoints: dict[str, object] = {}
        self._lock = threading.Lock()
        self._max_workers = max_workers
        self._pool: ThreadPoolExecutor | None = None
        self._pending: set[Future[None]] = set()

    def register(self, target: str, endpoint: object) -> None:
        with self._lock:
            self._endpoints[target] = endpoint

    def unregister(self, target: str) -> None:
        with self._lock:
            self._endpoints.pop(target, None)

    def _method(self, target: str, method: str) -> Any:
        with self._lock:
            endpoint = self._endpoints.get(target)
        if endpoint is None or method.startswith("_"):
            raise MessagingTimeout(f"no endpoint serves {target}.{method}")
        return getattr(endpoint, method)

    def call(self, target: str, method: str, /, **kwargs: Any) -> Any:
        func = self._method(target, method)
        args = _wire(kwargs)
        try:
            result = func(**args)
        except Exception as exc:  # noqa: BLE001 - the seam turns every failure into RemoteError
            raise RemoteError(type(exc).__name__, str(exc)) from exc
        return _wire(result)

    def cast(self, target: str, method: str, /, **kwargs: Any) -> None:
        func = self._method(target, method)
        args = _wire(kwargs)
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
