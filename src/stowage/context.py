"""The request context: who is calling, on behalf of which project, and the request id.

Built once per request by the auth middleware and handed to policy checks and
domain functions; nothing else in the package knows about HTTP headers.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

__all__ = ["RequestContext", "new_request_id"]


def new_request_id() -> str:
    return "req-" + str(uuid.uuid4())


@dataclass
class RequestContext:
    user_id: str | None = None
    project_id: str | None = None
    roles: tuple[str, ...] = ()
    request_id: str = field(default_factory=new_request_id)
    system_scope: str | None = None

    @property
    def is_admin(self) -> bool:
        return "admin" in self.roles

    def policy_target(self) -> dict[str, str | None]:
        """Default target for policy checks: the caller's own project and user."""
        return {"project_id": self.project_id, "user_id": self.user_id}
