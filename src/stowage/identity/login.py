"""Who a `POST /v3/auth/tokens` body proves to be, and what the new token may do.

    identity (password and/or token)  ->  the user
    scope (project, domain, unscoped) ->  the roles the user holds there
                                      ->  a Grant for tokens.issue

Every refusal is `LoginRefused` (a 401). Its client-facing `detail` is
Keystone's generic "requires authentication" unless Keystone (with its default
`insecure_debug = false`) names the cause too: only the lockout's "account is
locked" and an unsupported method do. Why it was refused -- a disabled user, a
disabled or unknown project, no role on the scope -- is `reason`, which goes to
the log (Keystone logs it the same way), never to the client.

Keystone's order is kept because the lockout makes it visible: the explicit
scope's project or domain is looked up first (an unknown or disabled one
refuses before any password is checked, so nothing is counted); then the
user, whose `enabled` is checked before the password (Keystone's
`UserAuthInfo`): a disabled user is the generic 401 whatever the password,
its failures are not counted and a lock on it is not announced. An unknown
user, a disabled one and a wrong password all read the same and cost the
same -- the first two are checked against `passwords.dummy_hash` -- so that
neither the answer nor its time tells which user names exist. A body
without an explicit scope gets the user's default project, when the user
holds a role on it (Keystone's rule).
"""

from __future__ import annotations

import logging
from typing import Any

from stowage.db import Database
from stowage.identity import tokens
from stowage.identity.directory import Directory, Domain, Project, User
from stowage.identity.lockout import Lockout, locked_message
from stowage.identity.passwords import dummy_hash, verify_password

__all__ = ["LoginRefused", "grant_for", "check_password", "METHODS"]

LOG = logging.getLogger(__name__)
METHODS = ("password", "token")
_GENERIC = "The request you have made requires authentication."


class LoginRefused(Exception):
    """A 401; `detail` is what the client is told, `reason` (logged) why it was refused."""

    def __init__(self, detail: str = _GENERIC, reason: str | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        if reason is not None:
            LOG.warning("%s", reason)


def _refused(reason: str) -> LoginRefused:
    """Keystone's `Unauthorized(message)`: the message is logged, the client reads the
    generic sentence (Keystone shows it only with `insecure_debug`)."""
    return LoginRefused(_GENERIC, reason)


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
    if user is None or not user.enabled:
        verify_password(password, dummy_hash())  # the same work as a wrong password
        raise LoginRefused() if user is None else _refused(f"User is disabled: {user.id}")
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
        raise _refused("Authentication methods named different users.")
    if not users[0].enabled:
        raise _refused(f"User is disabled: {users[0].id}")
    return users[0], parent


def _project(directory: Directory, ref: dict[str, Any]) -> Project:
    if ref.get("id"):
        project = directory.project(ref["id"])
    else:
        domain = _domain(directory, ref.get("domain"))
        project = (directory.project(name=ref.get("name"), domain_id=domain.id)
                   if domain is not None and ref.get("name") else None)
    if project is None:
        raise _refused(f"Could not find project: {ref.get('id') or ref.get('name')}.")
    if not project.enabled:
        raise _refused(f"Project is disabled: {project.id}")
    return project


def _target(directory: Directory, scope: Any) -> Project | Domain | str | None:
    """The project or domain an explicit scope names ("system", "unscoped", or None
    without a scope), looked up before the user is, as Keystone's `AuthInfo` does."""
    if scope is None or scope == "unscoped":
        return None if scope is None else "unscoped"
    if not isinstance(scope, dict) or not scope:
        raise LoginRefused("The scope must be a project, a domain or 'unscoped'.")
    if "project" in scope:
        return _project(directory, scope["project"])
    if "domain" in scope:
        domain = _domain(directory, scope["domain"])
        if domain is None:
            raise _refused(f"Could not find domain: {scope['domain']}.")
        return domain
    return "system"


def _scoped(directory: Directory, user: User,
            target: Project | Domain | str | None) -> dict[str, Any]:
    """project_id / domain_id and the user's roles there; no roles for an unscoped token."""
    if target is None:
        default = (directory.project(user.default_project_id)
                   if user.default_project_id else None)
        if default is not None and default.enabled and directory.roles_on(
                user.id, project_id=default.id):
            target = default
    if isinstance(target, Project):
        roles = directory.roles_on(user.id, project_id=target.id)
        if not roles:
            raise _refused(f"User {user.id} has no access to project {target.id}")
        return {"project_id": target.id, "roles": tuple(r.name for r in roles)}
    if isinstance(target, Domain):
        roles = directory.roles_on(user.id, domain_id=target.id)
        if not roles:
            raise _refused(f"User {user.id} has no access to domain {target.id}")
        return {"domain_id": target.id, "roles": tuple(r.name for r in roles)}
    if target == "system":
        raise _refused(f"User {user.id} has no access to the system")
    return {"roles": ()}


def grant_for(db: Database, directory: Directory, auth: dict[str, Any],
              lockout: Lockout | None = None) -> tokens.Grant:
    """What the validated auth body earns; LoginRefused otherwise."""
    lockout = lockout if lockout is not None else Lockout(db, attempts=0, duration=1)
    target = _target(directory, auth.get("scope"))
    user, parent = _identify(db, directory, lockout, auth["identity"])
    scope = _scoped(directory, user, target)
    methods = tuple(dict.fromkeys(auth["identity"]["methods"]))
    if parent is None:
        return tokens.Grant(user.id, methods=methods, **scope)
    # A token exchanged for another keeps its expiry and audit chain (Keystone's rescoping).
    methods = tuple(dict.fromkeys(methods + parent.methods))
    return tokens.Grant(user.id, methods=methods, expires_at=parent.expires_at,
                        parent_audit_id=parent.audit_ids[0], **scope)
