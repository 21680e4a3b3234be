"""Who a `POST /v3/auth/tokens` body proves to be, and what the new token may do.

    identity (password and/or token)  ->  the user
    scope (project, domain, unscoped) ->  the roles the user holds there
                                      ->  a Grant for tokens.issue

Every refusal is `LoginRefused` (a 401): an unknown user and a wrong password
read the same, as Keystone's do, and cost the same -- an unknown user's
password is checked against `passwords.dummy_hash` -- so that neither the
answer nor its time tells which user names exist. A locked-out user
(`lockout`) gets Keystone's "account is locked" 401 instead. A body without
an explicit scope gets the user's default project, when the user holds a
role on it (Keystone's rule).
"""

from __future__ import annotations

from typing import Any

from stowage.db import Database
from stowage.identity import tokens
from stowage.identity.directory import Directory, Domain, Project, User
from stowage.identity.lockout import Lockout, locked_message
from stowage.identity.passwords import dummy_hash, verify_password

__all__ = ["LoginRefused", "grant_for", "check_password", "METHODS"]

METHODS = ("password", "token")
_GENERIC = "The request you have made requires authentication."


class LoginRefused(Exception):
    """A 401; `detail` is what the client is told."""

    def __init__(self, detail: str = _GENERIC) -> None:
        super().__init__(detail)
        self.detail = detail


def _domain(directory: Directory, ref: Any) -> Domain | None:
    if not isinstance(ref, dict) or not (ref.get("id") or ref.get("name")):
        return None
    return directory.domain(ref.get("id"), ref.get("name"))


def _named_user(directory: Directory, ref: dict[str, Any]) -> User | None:
    """The user a password body names (by id, or by name in a domain); None if nobody."""
    if ref.get("id"):
        return directory.user(ref["id"])
    if ref.get("name"):
        domain = _domain(directory, ref.get("domain"))
        return None if domain is None else directory.user(name=ref["name"],
                                                          domain_id=domain.id)
    return None


def _password_user(directory: Directory, lockout: Lockout, body: dict[str, Any]) -> User:
    ref = body["user"]
    password = str(ref.get("password", ""))
    user = _named_user(directory, ref)
    if user is None:
        verify_password(password, dummy_hash())  # the same work as a wrong password
        raise LoginRefused()
    check_password(lockout, user, password)
    return user


def check_password(lockout: Lockout, user: User, password: str) -> None:
    """LoginRefused unless `password` is the user's and the user is not locked out; a
    wrong one is counted, a right one clears the count (login and password change)."""
    now = tokens.utcnow()
    if lockout.is_locked(user.id, now):
        raise LoginRefused(locked_message(user.id))
    if not verify_password(password, user.password_hash or dummy_hash()):
        lockout.failed(user.id, now)
        raise LoginRefused()
    lockout.succeeded(user.id)


def _identify(db: Database, directory: Directory, lockout: Lockout,
              identity: dict[str, Any]) -> tuple[User, tokens.Token | None]:
    """The user every named method proves, and the token exchanged (if any)."""
    methods = identity["methods"]
    if any(m not in METHODS for m in methods):
        raise LoginRefused("Attempted to authenticate with an unsupported method.")
    users: list[User] = []
    parent = None
    for method in dict.fromkeys(methods):
        if method not in identity:
            raise LoginRefused()
        if method == "password":
            users.append(_password_user(directory, lockout, identity["password"]))
        else:
            parent = tokens.lookup(db, identity["token"]["id"])
            found = directory.user(parent.user_id) if parent else None
            if found is None:
                raise LoginRefused()
            users.append(found)
    if any(u.id != users[0].id for u in users):
        raise LoginRefused("Authentication methods named different users.")
    if not users[0].enabled:
        raise LoginRefused()
    return users[0], parent


def _project(directory: Directory, ref: dict[str, Any]) -> Project:
    if ref.get("id"):
        project = directory.project(ref["id"])
    else:
        domain = _domain(directory, ref.get("domain"))
        project = (directory.project(name=ref.get("name"), domain_id=domain.id)
                   if domain is not None and ref.get("name") else None)
    if project is None:
        raise LoginRefused(f"Could not find project: {ref.get('id') or ref.get('name')}.")
    if not project.enabled:
        raise LoginRefused(f"Project {project.id} is disabled.")
    return project


def _scoped(directory: Directory, user: User, scope: Any) -> dict[str, Any]:
    """project_id / domain_id and roles of the asked scope; {} for an unscoped token."""
    if scope is None or scope == "unscoped":
        default = (directory.project(user.default_project_id)
                   if user.default_project_id else None)
        if scope is None and default is not None and default.enabled and directory.roles_on(
                user.id, project_id=default.id):
            scope = {"project": {"id": default.id}}
        else:
            return {"roles": ()}
    if not isinstance(scope, dict) or not scope:
        raise LoginRefused("The scope must be a project, a domain or 'unscoped'.")
    if "project" in scope:
        project = _project(directory, scope["project"])
        roles = directory.roles_on(user.id, project_id=project.id)
        if not roles:
            raise LoginRefused(f"User {user.id} has no access to project {project.id}")
        return {"project_id": project.id, "roles": tuple(r.name for r in roles)}
    if "domain" in scope:
        domain = _domain(directory, scope["domain"])
        if domain is None:
            raise LoginRefused("Could not find domain.")
        roles = directory.roles_on(user.id, domain_id=domain.id)
        if not roles:
            raise LoginRefused(f"User {user.id} has no access to domain {domain.id}")
        return {"domain_id": domain.id, "roles": tuple(r.name for r in roles)}
    raise LoginRefused(f"User {user.id} has no access to the system")


def grant_for(db: Database, directory: Directory, auth: dict[str, Any],
              lockout: Lockout | None = None) -> tokens.Grant:
    """What the validated auth body earns; LoginRefused otherwise."""
    lockout = lockout if lockout is not None else Lockout(db, attempts=0, duration=1)
    user, parent = _identify(db, directory, lockout, auth["identity"])
    scope = _scoped(directory, user, auth.get("scope"))
    methods = tuple(dict.fromkeys(auth["identity"]["methods"]))
    if parent is None:
        return tokens.Grant(user.id, methods=methods, **scope)
    # A token exchanged for another keeps its expiry and audit chain (Keystone's rescoping).
    methods = tuple(dict.fromkeys(methods + parent.methods))
    return tokens.Grant(user.id, methods=methods, expires_at=parent.expires_at,
                        parent_audit_id=parent.audit_ids[0], **scope)
