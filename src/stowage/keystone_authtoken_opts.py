"""`[keystone_authtoken]` of an oslo.config file, typed as keystonemiddleware types it.

The section is passed on whole, in keystonemiddleware's own option names, so
that the Keystone strategy reads the file an operator already has. Options
keystonemiddleware declares as booleans, integers or lists are converted as
oslo.config converts them; everything else (keystoneauth's plugin options:
`auth_url`, `username`, `password`, `project_name`, ...) stays a string.
Deprecated names are read under their current name, as keystonemiddleware
does: `auth_uri` as `www_authenticate_uri`, `memcache_servers` as
`memcached_servers`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stowage.oslo_ini import IniError, IniFile, boolean, integer, strings

__all__ = ["RENAMED", "SECTION", "authtoken_options"]

SECTION = "keystone_authtoken"

_BOOLEANS = ("delay_auth_decision", "insecure", "include_service_catalog",
             "service_token_roles_required", "memcache_use_advanced_pool",
             "check_revocations_for_cached", "memcache_tls_enabled",
             "memcache_sasl_enabled", "split_loggers", "collect_timing")
_INTEGERS = ("http_connect_timeout", "http_request_max_retries", "token_cache_time",
             "revocation_cache_time", "memcache_pool_dead_retry", "memcache_pool_maxsize",
             "memcache_pool_socket_timeout", "memcache_pool_unused_timeout",
             "memcache_pool_conn_get_timeout", "timeout")
_LISTS = ("memcached_servers", "service_token_roles", "hash_algorithms")
RENAMED = {"auth_uri": "www_authenticate_uri", "memcache_servers": "memcached_servers"}


def _kind(name: str) -> Callable[[str], Any]:
    if name in _BOOLEANS:
        return boolean
    if name in _INTEGERS:
        return integer
    if name in _LISTS:
        return strings
    return str


def authtoken_options(ini: IniFile) -> dict[str, Any]:
    """The section's options under their current names, typed; IniError for a value
    keystonemiddleware would refuse (`token_cache_time = soon`)."""
    out: dict[str, Any] = {}
    for key in ini.sections.get(SECTION, {}):
        name = RENAMED.get(key, key)
        if name != key and name in ini.sections[SECTION]:
            continue  # the current name wins over the deprecated one
        raw = ini.get(SECTION, key)
        assert raw is not None
        try:
            value = _kind(name)(raw)
        except ValueError as exc:
            raise IniError(f"{ini.where(SECTION, key)}: invalid value: {exc}") from None
        if value is not None:
            out[name] = value
    return out
