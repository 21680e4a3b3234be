"""auth_token's rules, turning a request's headers into a request context.

    X-Service-Token present?  validate it (cache first)
        invalid                                  -> 401
        lacks every service_token_roles role and
          service_token_roles_required           -> 401
        carries one                              -> the user token may be expired
    X-Auth-Token              validate it (cache first)
        missing, invalid, expired                -> 401 (None here)
        valid                                    -> RequestContext
    Keystone gave no verdict                     -> 503 (HTTPError here)

Requests stowage services hand each other in-process (`Request.trusted`)
keep noauth2's reading, as with every strategy. One authenticator (and one
cache) serves every service of the process that shares a `[keystone_authtoken]`
table, so a token validated by Placement is known to Compute too.
"""

from __future__ import annotations

import functools
import logging
import time

from stowage.config import KeystoneAuthtokenSettings
from stowage.context import RequestContext
from stowage.web.auth import noauth2
from stowage.web.errors import HTTPError
from stowage.web.http import Request
from stowage.web.keystone.cache import INVALID, MemcachedCache, MemoryCache, TokenCache
from stowage.web.keystone.tokeninfo import TokenInfo
from stowage.web.keystone.validator import KeystoneUnavailable, Validator

__all__ = ["KeystoneAuthenticator", "KeystoneUnavailable", "authenticator"]

LOG = logging.getLogger(__name__)

# Seconds a token Keystone refused stays refused without asking again (capped by
# token_cache_time): a flood of one bad token costs Keystone one request a while.
NEGATIVE_CACHE_TIME = 10.0
UNAVAILABLE = "The Keystone service is temporarily unavailable."


class KeystoneAuthenticator:
    def __init__(self, conf: KeystoneAuthtokenSettings, validator: Validator | None = None,
                 cache: TokenCache | None = None) -> None:
        self.conf = conf
        self.validator = validator or Validator(conf)
        self.cache = cache or _cache_for(conf)
        self._service_roles = frozenset(conf.service_token_roles)

    def __call__(self, req: Request) -> RequestContext | None:
        if req.trusted:
            return noauth2(req)
        try:
            info = self._admitted(req)
        except KeystoneUnavailable:
            raise HTTPError(503, UNAVAILABLE) from None
        return info.context() if info is not None else None

    def _admitted(self, req: Request) -> TokenInfo | None:
        """The user token's info when auth_token would let the request through."""
        user_token = (req.headers.get("x-auth-token") or "").strip()
        service_token = (req.headers.get("x-service-token") or "").strip()
        allow_expired = False
        if service_token:
            service = self.verdict(service_token)
            if service is None:
                return None
            is_service = bool(self._service_roles.intersection(service.roles))
            if self.conf.service_token_roles_required and not is_service:
                return None
            allow_expired = is_service
        if not user_token:
            return None
        return self.verdict(user_token, allow_expired)

    def verdict(self, token: str, allow_expired: bool = False) -> TokenInfo | None:
        """The token's info if valid now (or expired but `allow_expired`), else None."""
        now = time.time()
        cached = self.cache.get(token)
        if cached is INVALID and not allow_expired:
            return None
        if isinstance(cached, TokenInfo):
            return cached if allow_expired or not cached.expired(now) else None
        info = self.validator.validate(token, allow_expired)
        self._remember(token, info, now)
        if info is None or (info.expired(now) and not allow_expired):
            return None
        return info

    def _remember(self, token: str, info: TokenInfo | None, now: float) -> None:
        cache_time = self.conf.token_cache_time
        if cache_time <= 0:
            return
        if info is None:
            self.cache.put(token, INVALID, min(cache_time, NEGATIVE_CACHE_TIME))
        else:
            self.cache.put(token, info, min(cache_time, info.expires_at - now))


def _cache_for(conf: KeystoneAuthtokenSettings) -> TokenCache:
    if conf.memcached_servers:
        return MemcachedCache(conf.memcached_servers, timeout=conf.http_connect_timeout)
    return MemoryCache()


@functools.cache
def authenticator(conf: KeystoneAuthtokenSettings) -> KeystoneAuthenticator:
    """The process's authenticator for `conf` (one validator, one cache per table)."""
    return KeystoneAuthenticator(conf)
