"""RPC between the conductor, the scheduler and the compute agents.

The seam is `Transport`: `call` waits for a result, `cast` does not, `fanout`
reaches every endpoint of a target. Targets are names (`conductor`,
`scheduler`, `compute.<host>`); an endpoint is any object whose public methods
take JSON-able keyword arguments. Arguments and results cross the seam as JSON
so that code written against the in-process transport keeps working over a
broker.

Two transports implement the seam, chosen by `get_transport(url)`:
`local.LocalTransport` (one process, the default) and `amqp.AmqpTransport`
(RabbitMQ, for services in separate processes). Both follow the same rules,
which tests/functional/test_transport_contract.py checks on each:

- `register(target, endpoint)` *adds* an endpoint: a target may have several.
  `call` and `cast` go to one of them (they compete for the target's work, as
  several conductors share it); `fanout` goes to each of them.
  `unregister(target)` removes this transport's endpoints of the target,
  `unregister(target, endpoint)` only that one.
- Endpoint keyword arguments are arbitrary, so the transport reserves none of
  them: a call that may run long is made with `call_long` (the transport's
  long timeout, Nova's `long_rpc_timeout`), not with a `timeout=` argument.
- Methods whose name starts with `_` are never served.
- `drain(timeout)` waits until no handler is running *in this process* (casts
  included) and says whether it got there; work queued on a broker for
  other processes is theirs to drain.

Exceptions that cross the seam::

    MessagingError         the transport could not do its job (broker unreachable, closed)
     ├── RemoteError       the endpoint raised; carries the exception's type name
     └── MessagingTimeout  nobody serves the target (agent down) or no answer in time
"""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["Transport", "MessagingError", "RemoteError", "MessagingTimeout", "get_transport"]


class MessagingError(Exception):
    pass


class RemoteError(MessagingError):
    """The endpoint raised `exc_type` with `message`; the traceback stays remote."""

    def __init__(self, exc_type: str, message: str) -> None:
        super().__init__(f"{exc_type}: {message}")
        self.exc_type = exc_type
        self.message = message


class MessagingTimeout(MessagingError):
    pass


class Transport(Protocol):
    def register(self, target: str, endpoint: object) -> None: ...

    def unregister(self, target: str, endpoint: object | None = None) -> None: ...

    def call(self, target: str, method: str, /, **kwargs: Any) -> Any: ...

    def call_long(self, target: str, method: str, /, **kwargs: Any) -> Any: ...

    def cast(self, target: str, method: str, /, **kwargs: Any) -> None: ...

    def fanout(self, target: str, method: str, /, **kwargs: Any) -> None: ...

    def drain(self, timeout: float = 60.0) -> bool: ...

    def close(self) -> None: ...


def get_transport(url: str | None, *, namespace: str = "stowage") -> Transport:
    """The transport a `transport_url` names: empty or `local://` is in-process,
    `rabbit://user:pass@host:port/vhost` (oslo.messaging's form) is RabbitMQ.

    `namespace` prefixes every name on the broker (the `control_exchange`
    setting), so that deployments sharing a broker stay apart. Nothing
    connects here: the AMQP transport opens its connections on first use.
    """
    if not url or url == "local://":
        from stowage.messaging.local import LocalTransport

        return LocalTransport()
    if url.startswith("rabbit://"):
        from stowage.messaging.amqp import AmqpTransport

        return AmqpTransport(url, namespace=namespace)
    scheme = url.partition("://")[0]  # the rest may hold a password
    raise ValueError(f"transport_url must be empty, local:// or rabbit://..., not {scheme}://...")
