"""RPC between the conductor, the scheduler and the compute agents.

The seam is `Transport`: `call` waits for a result, `cast` does not. Targets
are names (`conductor`, `scheduler`, `compute.<host>`); an endpoint is any
object whose public methods take JSON-able keyword arguments. Arguments and
results cross the seam as JSON so that code written against the in-process
transport keeps working over a broker.

Exceptions that cross the seam::

    MessagingError
     ├── RemoteError       the endpoint raised; carries the exception's type name
     └── MessagingTimeout  nobody serves the target (agent down) or no answer in time
"""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["Transport", "MessagingError", "RemoteError", "MessagingTimeout"]


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

    def unregister(self, target: str) -> None: ...

    def call(self, target: str, method: str, /, **kwargs: Any) -> Any: ...

    def cast(self, target: str, method: str, /, **kwargs: Any) -> None: ...
