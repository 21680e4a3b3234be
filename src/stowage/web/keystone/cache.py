"""Where validated tokens are kept: in this process, or in memcached for all workers.

An entry is a `TokenInfo` or `INVALID` (Keystone said 404), and lives until
the earlier of `token_cache_time` and the token's own expiry, so a cached
token never outlives Keystone's verdict on it. Revocation is therefore seen
only when the entry expires -- the trade keystonemiddleware makes as well.

Keys: the token itself in-process (never leaves the process), its SHA-256 in
memcached (keys there are shared, short and visible to `stats cachedump`).
A memcached that does not answer is a cache miss, never an error.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Final, Protocol

from stowage.web.keystone.tokeninfo import TokenInfo

__all__ = ["INVALID", "MemcachedCache", "MemoryCache", "TokenCache", "Verdict"]

LOG = logging.getLogger(__name__)


class _Invalid:
    def __repr__(self) -> str:
        return "INVALID"


INVALID: Final = _Invalid()
Verdict = TokenInfo | _Invalid


class TokenCache(Protocol):
    def get(self, key: str) -> Verdict | None: ...

    def put(self, key: str, verdict: Verdict, ttl: float) -> None: ...


class MemoryCache:
    """A bounded LRU map of token -> (deadline, verdict), safe across threads."""

    def __init__(self, max_entries: int = 10_000) -> None:
        self._max = max_entries
        self._entries: OrderedDict[str, tuple[float, Verdict]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> Verdict | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            if time.monotonic() >= entry[0]:
                del self._entries[key]
                return None
            self._entries.move_to_end(key)
            return entry[1]

    def put(self, key: str, verdict: Verdict, ttl: float) -> None:
        if ttl <= 0:
            return
        with self._lock:
            self._entries[key] = (time.monotonic() + ttl, verdict)
            self._entries.move_to_end(key)
            while len(self._entries) > self._max:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


class MemcachedCache:
    """Entries in memcached (pymemcache's HashClient over `servers`, "host:port")."""

    PREFIX = "stowage-token-"

    def __init__(self, servers: Sequence[str], timeout: float, client: Any = None) -> None:
        if client is None:
            from pymemcache.client.hash import HashClient

            client = HashClient([_address(s) for s in servers], connect_timeout=timeout,
                                timeout=timeout, ignore_exc=True)
        self._client = client

    def _key(self, token: str) -> str:
        return self.PREFIX + hashlib.sha256(token.encode()).hexdigest()

    def get(self, key: str) -> Verdict | None:
        try:
            raw = self._client.get(self._key(key))
        except Exception as exc:  # an unreachable cache is a miss
            LOG.warning("memcached get failed: %s", exc)
            return None
        if raw is None:
            return None
        data = json.loads(raw)
        return INVALID if data == "invalid" else TokenInfo.from_json(data)

    def put(self, key: str, verdict: Verdict, ttl: float) -> None:
        if ttl < 1:
            return  # memcached counts whole seconds; 0 would mean "forever"
        value = "invalid" if verdict is INVALID else verdict.to_json()  # type: ignore[union-attr]
        try:
            self._client.set(self._key(key), json.dumps(value).encode(), expire=int(ttl))
        except Exception as exc:
            LOG.warning("memcached set failed: %s", exc)


def _address(server: str) -> tuple[str, int]:
    host, _, port = server.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"[keystone_authtoken] memcached_servers: {server!r} is not host:port")
    return host.strip("[]"), int(port)
