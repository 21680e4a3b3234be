"""What a validated Keystone token says, and the request context it becomes.

Keystone's `GET /v3/auth/tokens` body already lists implied roles (a member's
token carries reader as well), so the roles are taken as they are. Scope is
one of project, domain or system (`"system": {"all": true}`), or none.
`is_admin_project` is true unless the token says otherwise, as oslo.context
and keystonemiddleware read it.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from stowage.context import RequestContext

__all__ = ["TokenInfo", "parse"]


@dataclass(frozen=True)
class TokenInfo:
    user_id: str
    user_name: str | None
    user_domain_id: str | None
    user_domain_name: str | None
    roles: tuple[str, ...]
    # POSIX seconds at which Keystone stops accepting the token.
    expires_at: float
    project_id: str | None = None
    project_name: str | None = None
    project_domain_id: str | None = None
    project_domain_name: str | None = None
    domain_id: str | None = None
    domain_name: str | None = None
    system_scope: str | None = None
    is_admin_project: bool = True

    def expired(self, now: float) -> bool:
        return now >= self.expires_at

    def context(self) -> RequestContext:
        """The same request context every strategy builds, with Keystone's extras."""
        return RequestContext(
            user_id=self.user_id, project_id=self.project_id, roles=self.roles,
            system_scope=self.system_scope, user_name=self.user_name,
            user_domain_id=self.user_domain_id, user_domain_name=self.user_domain_name,
            project_name=self.project_name, project_domain_id=self.project_domain_id,
            project_domain_name=self.project_domain_name, domain_id=self.domain_id,
            domain_name=self.domain_name, is_admin_project=self.is_admin_project)

    def to_json(self) -> dict[str, Any]:
        """A plain dict (for memcached); `from_json` reads it back."""
        return {name: (list(value) if isinstance(value, tuple) else value)
                for name, value in self.__dict__.items()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TokenInfo:
        values = dict(data)
        values["roles"] = tuple(values.get("roles", ()))
        return cls(**values)


def _expiry(text: str) -> float:
    """Keystone's `2026-11-28T16:15:15.000000Z` as POSIX seconds."""
    moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment.timestamp()


def _system_scope(token: Mapping[str, Any]) -> str | None:
    system = token.get("system")
    if not isinstance(system, Mapping):
        return None
    return "all" if system.get("all") else None


def parse(body: Mapping[str, Any]) -> TokenInfo:
    """The `token` of a `GET /v3/auth/tokens` answer; ValueError if it is not one."""
    token = body.get("token")
    if not isinstance(token, Mapping) or not isinstance(token.get("user"), Mapping):
        raise ValueError("Keystone's answer holds no token")
    user = token["user"]
    project = token.get("project") or {}
    domain = token.get("domain") or {}
    user_domain = user.get("domain") or {}
    project_domain = project.get("domain") or {}
    return TokenInfo(
        user_id=str(user["id"]), user_name=user.get("name"),
        user_domain_id=user_domain.get("id"), user_domain_name=user_domain.get("name"),
        roles=tuple(str(r["name"]) for r in token.get("roles") or ()),
        expires_at=_expiry(str(token["expires_at"])),
        project_id=project.get("id"), project_name=project.get("name"),
        project_domain_id=project_domain.get("id"),
        project_domain_name=project_domain.get("name"),
        domain_id=domain.get("id"), domain_name=domain.get("name"),
        system_scope=_system_scope(token),
        is_admin_project=bool(token.get("is_admin_project", True)))
