"""Keystone's own API, through keystoneauth1, for the tests: who exists and holds what.

`KeystoneAdmin` logs in as the bootstrap admin (project admin, domain
Default) and makes projects, users and role assignments as an operator's
`openstack project/user/role` commands would; `token()` logs any user in and
returns the token a client would send as `X-Auth-Token`.
"""

from __future__ import annotations

import uuid
from typing import Any

from keystoneauth1 import session as ks_session
from keystoneauth1.identity import v3

__all__ = ["KeystoneAdmin", "User"]

DOMAIN = "default"
# Keystone's bootstrap makes admin, member and reader (admin implies member
# implies reader); `service` is made on first use, as a deployment's set-up does.
BOOTSTRAP_ROLES = ("admin", "member", "reader")


class User:
    """A user made by `KeystoneAdmin.user`, with its password and default project."""

    def __init__(self, id: str, name: str, password: str, project_id: str | None) -> None:
        self.id, self.name, self.password, self.project_id = id, name, password, project_id


class KeystoneAdmin:
    def __init__(self, auth_url: str, password: str) -> None:
        self.auth_url = auth_url.rstrip("/")
        self.password = password
        auth = v3.Password(auth_url=self.auth_url, username="admin", password=password,
                           project_name="admin", user_domain_id=DOMAIN,
                           project_domain_id=DOMAIN)
        self.session = ks_session.Session(auth=auth, timeout=30)
        self._roles: dict[str, str] = {}

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        resp = self.session.request(self.auth_url + path, method, **kwargs)
        return resp.json() if resp.content else None

    def project(self, name: str | None = None) -> str:
        """A new project of domain Default; its id."""
        body = {"project": {"name": name or f"p-{uuid.uuid4().hex[:12]}",
                            "domain_id": DOMAIN}}
        return str(self._call("POST", "/projects", json=body)["project"]["id"])

    def user(self, *roles: str, project_id: str | None = None,
             name: str | None = None, password: str = "secret-pw") -> User:
        """A new user holding `roles` on `project_id` (a new project when None and
        roles are asked for)."""
        if roles and project_id is None:
            project_id = self.project()
        name = name or f"u-{uuid.uuid4().hex[:12]}"
        body = {"user": {"name": name, "password": password, "domain_id": DOMAIN,
                         **({"default_project_id": project_id} if project_id else {})}}
        user_id = str(self._call("POST", "/users", json=body)["user"]["id"])
        for role in roles:
            self.grant(user_id, role, project_id=project_id)
        return User(user_id, name, password, project_id)

    def role_id(self, name: str) -> str:
        """The id of role `name`, made if Keystone does not have it yet."""
        if name not in self._roles:
            found = self._call("GET", f"/roles?name={name}")["roles"]
            if found:
                self._roles[name] = found[0]["id"]
            else:
                made = self._call("POST", "/roles", json={"role": {"name": name}})
                self._roles[name] = made["role"]["id"]
        return self._roles[name]

    def grant(self, user_id: str, role: str, project_id: str | None = None,
              system: bool = False) -> None:
        """Assign `role` to the user on a project, or on the system (`system: all`)."""
        target = "/system" if system else f"/projects/{project_id}"
        self._call("PUT", f"{target}/users/{user_id}/roles/{self.role_id(role)}")

    def token(self, user: User | str, password: str | None = None,
              project_id: str | None = None, system: bool = False) -> str:
        """A fresh token of `user` (a User, or the name `admin`), project- or system-scoped."""
        if isinstance(user, User):
            name, password = user.name, user.password
            project_id = project_id or (None if system else user.project_id)
        else:
            name = user
        scope: dict[str, Any] = {"system_scope": "all"} if system else (
            {"project_id": project_id} if project_id else {})
        auth = v3.Password(auth_url=self.auth_url, username=name, password=password,
                           user_domain_id=DOMAIN, **scope)
        return str(ks_session.Session(auth=auth, timeout=30).get_token())

    def admin_token(self, system: bool = False) -> str:
        """A token of the bootstrap admin, on project admin or on the system."""
        admin_project = None if system else self.admin_project_id
        return self.token("admin", self.password, project_id=admin_project, system=system)

    @property
    def admin_project_id(self) -> str:
        return str(self.session.get_project_id())

    def revoke(self, token: str) -> None:
        """Revoke `token` (DELETE /v3/auth/tokens), as `openstack token revoke` does."""
        self._call("DELETE", "/auth/tokens", headers={"X-Subject-Token": token})

    def validate(self, token: str) -> dict[str, Any]:
        """Keystone's own reading of `token` (GET /v3/auth/tokens)."""
        return dict(self._call("GET", "/auth/tokens",
                               headers={"X-Subject-Token": token})["token"])
