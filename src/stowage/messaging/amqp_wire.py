"""What the AMQP transport puts on the broker: names, URLs and message bodies.

Names, for namespace `ns` and target `t` (a namespace keeps deployments, or
test runs, that share a broker apart)::

    ns.t               the target's queue, on the default exchange: every
                       endpoint of `t` consumes it and they compete (call, cast)
    ns.t.fanout        a fanout exchange; each endpoint of `t` binds its own
    ns.t.fanout.<id>   exclusive queue to it, so each gets every message (fanout)
    ns.reply.<id>      a transport's exclusive reply queue (answers to its calls)

Bodies are JSON encoded here with the standard library, never by kombu's
serializer (which would quietly accept datetimes and UUIDs that the in-process
transport refuses)::

    request  {"method": "build", "args": {...}}
    reply    {"result": ...} | {"error": {"type": "ValueError", "message": "..."}}
             | {"unserved": "no endpoint serves t.m"}
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from stowage.messaging import MessagingTimeout, RemoteError

__all__ = ["Names", "kombu_url", "encode_request", "decode_request", "serve", "encode_reply",
           "decode_reply", "CONTENT_TYPE"]

LOG = logging.getLogger(__name__)

CONTENT_TYPE = "application/json"


@dataclass(frozen=True)
class Names:
    namespace: str

    def queue(self, target: str) -> str:
        return f"{self.namespace}.{target}"

    def fanout_exchange(self, target: str) -> str:
        return f"{self.namespace}.{target}.fanout"

    def fanout_queue(self, target: str, ident: str) -> str:
        return f"{self.namespace}.{target}.fanout.{ident}"

    def reply_queue(self, ident: str) -> str:
        return f"{self.namespace}.reply.{ident}"


def kombu_url(url: str) -> str:
    """`rabbit://u:p@h1:5672,u:p@h2:5672/vhost` -> kombu's `amqp://...;amqp://...` failover list.

    oslo.messaging's path is the vhost name itself (`/` when empty); kombu's
    is too, except that it reads an empty path as `/` and needs `//` for `/`.
    """
    parts = urlsplit(url)
    if parts.scheme != "rabbit":
        raise ValueError("an AMQP transport URL starts with rabbit://")
    vhost = unquote(parts.path[1:]) or "/"
    path = "//" if vhost == "/" else "/" + parts.path[1:]
    hosts = parts.netloc.split(",")
    return ";".join(f"amqp://{host}{path}" for host in hosts)


def encode_request(method: str, kwargs: dict[str, Any]) -> bytes:
    """JSON of the request; a non-JSON argument raises TypeError here, at the caller."""
    return json.dumps({"method": method, "args": kwargs}).encode()


def decode_request(body: bytes) -> tuple[str, dict[str, Any]]:
    request = json.loads(body)
    return str(request["method"]), dict(request["args"])


def serve(endpoint: object, target: str, method: str, args: dict[str, Any], *,
          is_cast: bool) -> dict[str, Any]:
    """Run `method` on the endpoint and say what happened, as the reply's body.

    Same rules as LocalTransport: private or missing methods are not served,
    any exception becomes an error with its type name. A cast's failure has
    no caller to go back to, so it is logged with its traceback.
    """
    func = None if method.startswith("_") else getattr(endpoint, method, None)
    if not callable(func):
        LOG.log(logging.WARNING if is_cast else logging.DEBUG,
                "no endpoint serves %s.%s", target, method)
        return {"unserved": f"no endpoint serves {target}.{method}"}
    try:
        return {"result": func(**args)}
    except Exception as exc:  # noqa: BLE001 - the seam turns every failure into RemoteError
        LOG.log(logging.ERROR if is_cast else logging.DEBUG, "%s %s.%s failed",
                "cast" if is_cast else "call", target, method, exc_info=True)
        return {"error": {"type": type(exc).__name__, "message": str(exc)}}


def encode_reply(reply: dict[str, Any]) -> bytes:
    """JSON of a reply; a result that is not JSON becomes the caller's TypeError."""
    try:
        return json.dumps(reply).encode()
    except (TypeError, ValueError) as exc:
        error = {"type": type(exc).__name__, "message": f"result is not JSON: {exc}"}
        return json.dumps({"error": error}).encode()


def decode_reply(body: bytes) -> Any:
    """The result a reply carries, or the exception it stands for, raised."""
    reply = json.loads(body)
    if "error" in reply:
        raise RemoteError(str(reply["error"]["type"]), str(reply["error"]["message"]))
    if "unserved" in reply:
        raise MessagingTimeout(str(reply["unserved"]))
    return reply["result"]
