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
    # What a Keystone token says besides (auth_strategy "keystone"; oslo.context's
    # names): names and domains, a domain scope, and whether the project is the
    # cloud's admin project (true unless Keystone says otherwise, as oslo.context).
    user_name: str | None = None
    user_domain_id: str | None = None
    user_domain_name: str | None = None
    project_name: str | None = None
    project_domain_id: str | None = None
    project_domain_name: str | None = None
    domain_id: str | None = None
    domain_name: str | None = None
    is_admin_project: bool = True

    @property
    def is_admin(self) -> bool:
        return "admin" in self.roles

    def policy_target(self) -> dict[str, str | None]:
        """Default target for policy checks: the caller's own project and user."""
        return {"project_id": self.project_id, "user_id": self.user_id}
