"""The directory entries made through the Identity API, kept in the database.

    settings file ──▶ Directory (fixed, immutable)  ─┐
                                                     ├─▶ load(db, fixed): what a request sees
    identity_projects / users / roles / assignments ─┘

Every API worker shares these rows, so every worker sees an entry as soon as
it is created. Names are unique per domain (roles: globally) across both
sources: a name the settings file uses is refused here, and the unique
constraints turn two concurrent creates of one name into one row and a
`Conflict`. Writes that make issued tokens wrong -- deleting or disabling a
user or project, changing a password, removing a grant or a role -- delete
those tokens in the same transaction (Keystone revokes them too); enabling
or deleting a user forgets its failed logins (`lockout`).

The functions take already validated values; the API modules check policy,
bodies and that settings-file entries are left alone.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa

from stowage.db import Database
from stowage.identity import lockout, tokens
from stowage.identity.directory import Assignment, Directory, Project, Role, User
from stowage.identity.tables import identity_assignments as _A
from stowage.identity.tables import identity_projects as _P
from stowage.identity.tables import identity_roles as _R
from stowage.identity.tables import identity_users as _U

__all__ = ["Conflict", "load", "create_project", "update_project", "delete_project",
           "create_user", "update_user", "delete_user", "create_role", "delete_role",
           "grant", "revoke_grant"]


class Conflict(Exception):
    """A name already taken (409), in Keystone's words."""

    def __init__(self, kind: str, name: str, domain_id: str | None = None) -> None:
        where = f" at domain ID {domain_id}" if domain_id is not None else ""
        super().__init__(f"Conflict occurred attempting to store {kind} - Duplicate entry "
                         f"found with name {name}{where}.")
        self.message = str(self)


def _new_id() -> str:
    return uuid.uuid4().hex


def load(db: Database, fixed: Directory) -> Directory:
    """The settings-file directory plus every entry made through the API."""
    with db.read() as conn:
        projects = [Project(r.id, r.name, r.description, bool(r.enabled), r.domain_id,
                            immutable=False) for r in conn.execute(sa.select(_P).order_by(
                                _P.c.created_at, _P.c.id))]
        users = [User(r.id, r.name, r.password_hash or "", r.email, r.description,
                      bool(r.enabled), r.default_project_id, r.domain_id, immutable=False)
                 for r in conn.execute(sa.select(_U).order_by(_U.c.created_at, _U.c.id))]
        roles = [Role(r.id, r.name, r.description, immutable=False)
                 for r in conn.execute(sa.select(_R).order_by(_R.c.created_at, _R.c.id))]
        assignments = [_assignment(r) for r in conn.execute(
            sa.select(_A).order_by(_A.c.created_at, _A.c.user_id, _A.c.role_id))]
    return fixed.with_entries(projects, users, roles, assignments)


def _assignment(row: sa.Row[Any]) -> Assignment:
    if row.target_type == "project":
        return Assignment(row.user_id, row.role_id, project_id=row.target_id)
    return Assignment(row.user_id, row.role_id, domain_id=row.target_id)


def _insert(conn: sa.Connection, table: sa.Table, values: Mapping[str, Any],
            conflict: Conflict) -> None:
    try:
        with conn.begin_nested():
            conn.execute(table.insert().values(**values))
    except sa.exc.IntegrityError:
        raise conflict from None


def _update(conn: sa.Connection, table: sa.Table, row_id: str, values: Mapping[str, Any],
            conflict: Conflict) -> bool:
    """UPDATE one row by id; False when there is no such row."""
    try:
        with conn.begin_nested():
            # UPDATE <table> SET ... WHERE id = :row_id
            return bool(conn.execute(table.update().where(table.c.id == row_id)
                                     .values(**values)).rowcount)
    except sa.exc.IntegrityError:
        raise conflict from None


# --- projects ---------------------------------------------------------------------------

def create_project(db: Database, fixed: Directory, name: str, domain_id: str,
                   description: str, enabled: bool) -> str:
    """A new project's id; Conflict when its domain has a project of that name."""
    conflict = Conflict("project", name, domain_id)
    if fixed.project(name=name, domain_id=domain_id) is not None:
        raise conflict
    project_id = _new_id()
    with db.write() as conn:
        _insert(conn, _P, {"id": project_id, "name": name, "domain_id": domain_id,
                           "description": description, "enabled": enabled,
                           "created_at": tokens.utcnow()}, conflict)
    return project_id


def update_project(db: Database, fixed: Directory, project: Project,
                   changes: Mapping[str, Any]) -> bool:
    """Apply `changes` (name, description, enabled); disabling revokes its tokens."""
    name = changes.get("name", project.name)
    conflict = Conflict("project", name, project.domain_id)
    if name != project.name and fixed.project(name=name, domain_id=project.domain_id):
        raise conflict
    with db.write() as conn:
        found = _update(conn, _P, project.id, changes, conflict)
        if found and changes.get("enabled") is False:
            tokens.revoke_matching(conn, project_id=project.id)
    return found


def delete_project(db: Database, project_id: str) -> bool:
    """Delete the project, the roles held on it, and the tokens scoped to it."""
    with db.write() as conn:
        gone = conn.execute(_P.delete().where(_P.c.id == project_id)).rowcount
        if gone:
            # DELETE FROM identity_assignments WHERE target_type = 'project' AND target_id = :p
            conn.execute(_A.delete().where(_A.c.target_type == "project",
                                           _A.c.target_id == project_id))
            tokens.revoke_matching(conn, project_id=project_id)
    return bool(gone)


# --- users ------------------------------------------------------------------------------

def create_user(db: Database, fixed: Directory, values: Mapping[str, Any]) -> str:
    """A new user's id. `values`: name, domain_id, password_hash, email, description,
    enabled, default_project_id. Conflict when the domain has a user of that name."""
    conflict = Conflict("user", values["name"], values["domain_id"])
    if fixed.user(name=values["name"], domain_id=values["domain_id"]) is not None:
        raise conflict
    user_id = _new_id()
    with db.write() as conn:
        _insert(conn, _U, {**values, "id": user_id, "created_at": tokens.utcnow()}, conflict)
    return user_id


def update_user(db: Database, fixed: Directory, user: User,
                changes: Mapping[str, Any]) -> bool:
    """Apply `changes`; a new password or disabling revokes every token of the user."""
    name = changes.get("name", user.name)
    conflict = Conflict("user", name, user.domain_id)
    if name != user.name and fixed.user(name=name, domain_id=user.domain_id):
        raise conflict
    with db.write() as conn:
        found = _update(conn, _U, user.id, changes, conflict)
        if found and ("password_hash" in changes or changes.get("enabled") is False):
            tokens.revoke_matching(conn, user_id=user.id)
        if found and changes.get("enabled") is True:
            lockout.forget(conn, user.id)  # Keystone's way to unlock a locked-out user
    return found


def delete_user(db: Database, user_id: str) -> bool:
    """Delete the user, every role it holds, and every token it was issued."""
    with db.write() as conn:
        gone = conn.execute(_U.delete().where(_U.c.id == user_id)).rowcount
        if gone:
            conn.execute(_A.delete().where(_A.c.user_id == user_id))
            lockout.forget(conn, user_id)
            tokens.revoke_matching(conn, user_id=user_id)
    return bool(gone)


# --- roles ------------------------------------------------------------------------------

def create_role(db: Database, fixed: Directory, name: str, description: str | None) -> str:
    """A new (global) role's id; Conflict when a role has that name."""
    conflict = Conflict("role", name)
    if fixed.role(name=name) is not None:
        raise conflict
    role_id = _new_id()
    with db.write() as conn:
        _insert(conn, _R, {"id": role_id, "name": name, "description": description,
                           "created_at": tokens.utcnow()}, conflict)
    return role_id


def delete_role(db: Database, role: Role) -> bool:
    """Delete the role and its grants; the tokens carrying it are revoked."""
    with db.write() as conn:
        gone = conn.execute(_R.delete().where(_R.c.id == role.id)).rowcount
        if gone:
            # SELECT DISTINCT user_id FROM identity_assignments WHERE role_id = :role_id
            holders = conn.execute(sa.select(_A.c.user_id).where(_A.c.role_id == role.id)
                                   .distinct()).scalars().all()
            conn.execute(_A.delete().where(_A.c.role_id == role.id))
            tokens.revoke_carrying(conn, holders, role.name)
    return bool(gone)


# --- grants -----------------------------------------------------------------------------

def grant(db: Database, user_id: str, role_id: str, target_type: str, target_id: str) -> None:
    """Give the user the role on the target; granting a held role again changes nothing."""
    values = {"user_id": user_id, "role_id": role_id, "target_type": target_type,
              "target_id": target_id, "created_at": tokens.utcnow()}
    with db.write() as conn:
        try:
            with conn.begin_nested():
                conn.execute(_A.insert().values(**values))
        except sa.exc.IntegrityError:
            pass  # already held (a concurrent grant of the same role): PUT is idempotent


def revoke_grant(db: Database, user_id: str, role_id: str, target_type: str,
                 target_id: str) -> bool:
    """Take the role back; the user's tokens scoped to the target go with it."""
    with db.write() as conn:
        gone = conn.execute(_A.delete().where(
            _A.c.user_id == user_id, _A.c.role_id == role_id,
            _A.c.target_type == target_type, _A.c.target_id == target_id)).rowcount
        if gone:
            scope = ({"project_id": target_id} if target_type == "project"
                     else {"domain_id": target_id})
            tokens.revoke_matching(conn, user_id=user_id, **scope)
    return bool(gone)
