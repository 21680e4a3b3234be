"""One INFO line per HTTP request, in the shape Placement's and Nova's request logs write.

    [req-6c1e...] 127.0.0.1 "GET /placement/resource_providers?name=a" status: 200 len: 81
        microversion: 1.39 time: 0.004211

Nova's `requestlog` middleware (which follows Placement's) writes the peer,
the method and URI (mount prefix and query included), the status, the body
length, the microversion the request was served at (`-` for an API without
microversions) and the seconds it took; oslo.log puts the request id in
front, which is what an operator greps for when a client reports the
`X-OpenStack-Request-Id` it got. Only requests read off a socket are logged;
a service calling another in-process is part of the request that caused it.
"""

from __future__ import annotations

import logging

__all__ = ["write", "microversion_of"]

LOG = logging.getLogger(__name__)


def microversion_of(headers: list[tuple[str, str]]) -> str:
    """The version a response was served at, from its `OpenStack-API-Version` header."""
    for name, value in headers:
        if name.lower() == "openstack-api-version":
            return value.rpartition(" ")[2]
    return "-"


def write(request_id: str, remote_addr: str, method: str, uri: str, status: int,
          length: int, microversion: str, seconds: float) -> None:
    LOG.info('[%s] %s "%s %s" status: %s len: %s microversion: %s time: %.6f',
             request_id, remote_addr, method, uri, status, length, microversion, seconds)
