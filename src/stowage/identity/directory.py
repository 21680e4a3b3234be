"""Who exists: the Default domain, projects, users, roles and role assignments.

Built once per process from the `[identity]` settings (every API worker reads
the same file, so every worker agrees); ids are derived from names, so they
stay the same across restarts and workers. Without configured users the
directory is the default one::

    project admin  <- user admin (password "admin"): role admin
    project demo   <- user demo  (password "demo"):  role member

Roles are Keystone's bootstrap roles with their implications (since
2023.2: admin => manager => member => reader): a token carries the roles a
user holds and every role they imply, as Keystone's tokens do.

Entries of the settings file are `immutable` (the API may not change or
delete them); `identity.store` adds the entries made through the API, which
are not, with `Directory.with_entries`.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from stowage.config import (
    IdentityAssignment,
    IdentityProject,
    IdentitySettings,
    IdentityUser,
)
from stowage.identity.passwords import hash_password

__all__ = ["DEFAULT_DOMAIN", "Directory", "Domain", "Project", "Role", "User",
           "Assignment", "ROLE_NAMES", "IMPLIES"]

LOG = logging.getLogger(__name__)
_NAMESPACE = uuid.UUID("6f0d5a3e-5b1c-4c36-9d67-3c0a0c1d2e11")
# Keystone's default roles (keystone-manage bootstrap, 2023.2 and later): `service`,
# for service users (Nova's os-server-external-events, Tempest's service_user), implies
# nothing and is implied by nothing.
ROLE_NAMES = ("admin", "manager", "member", "reader", "service")
# Keystone's default implied roles (keystone-manage bootstrap, 2023.2 and later).
IMPLIES = {"admin": ("manager",), "manager": ("member",), "member": ("reader",)}


def _id(kind: str, name: str) -> str:
    return uuid.uuid5(_NAMESPACE, f"{kind}:default:{name}").hex


@dataclass(frozen=True)
class Domain:
    id: str
    name: str
    description: str = "The default domain"
    enabled: bool = True


DEFAULT_DOMAIN = Domain("default", "Default")


@dataclass(frozen=True)
class Project:
    id: str
    name: str
    description: str
    enabled: bool
    domain_id: str = DEFAULT_DOMAIN.id
    immutable: bool = True


@dataclass(frozen=True)
class User:
    id: str
    name: str
    password_hash: str
    email: str | None
    description: str
    enabled: bool
    default_project_id: str | None
    domain_id: str = DEFAULT_DOMAIN.id
    immutable: bool = True


@dataclass(frozen=True)
class Role:
    id: str
    name: str
    description: str | None = None
    immutable: bool = True


@dataclass(frozen=True)
class Assignment:
    """A role held directly: on a project (`project_id`) or on the domain (`domain_id`)."""

    user_id: str
    role_id: str
    project_id: str | None = None
    domain_id: str | None = None


def expand(roles: Iterable[str]) -> tuple[str, ...]:
    """Role names plus every role they imply: ROLE_NAMES' order, then other roles sorted."""
    found: set[str] = set()
    todo = list(roles)
    while todo:
        name = todo.pop()
        if name not in found:
            found.add(name)
            todo.extend(IMPLIES.get(name, ()))
    return tuple(n for n in ROLE_NAMES if n in found) + tuple(
        sorted(found.difference(ROLE_NAMES)))


def _default_settings() -> tuple[list[IdentityUser], list[IdentityProject],
                                 list[IdentityAssignment]]:
    LOG.warning("identity: no [[identity.users]] configured; using the default directory "
                "(admin/admin, demo/demo) -- for trying stowage out only")
    users = [IdentityUser("admin", hash_password("admin"), default_project="admin"),
             IdentityUser("demo", hash_password("demo"), default_project="demo")]
    projects = [IdentityProject("admin", description="Bootstrap project for the admin user"),
                IdentityProject("demo", description="Demo project")]
    assignments = [IdentityAssignment("admin", "admin", project="admin"),
                   IdentityAssignment("admin", "admin", domain="default"),
                   IdentityAssignment("demo", "member", project="demo")]
    return users, projects, assignments


class Directory:
    """The whole directory, read-only after construction (no I/O)."""

    def __init__(self, projects: Iterable[Project], users: Iterable[User],
                 assignments: Iterable[Assignment],
                 roles: Iterable[Role] | None = None) -> None:
        self.domains = (DEFAULT_DOMAIN,)
        self.projects = tuple(projects)
        self.users = tuple(users)
        self.roles = tuple(roles) if roles is not None else tuple(
            Role(_id("role", name), name) for name in ROLE_NAMES)
        self.assignments = tuple(assignments)

    def with_entries(self, projects: Iterable[Project], users: Iterable[User],
                     roles: Iterable[Role], assignments: Iterable[Assignment]) -> Directory:
        """This directory plus entries made through the API (listed after its own)."""
        return Directory(self.projects + tuple(projects), self.users + tuple(users),
                         self.assignments + tuple(assignments), self.roles + tuple(roles))

    @classmethod
    def from_settings(cls, settings: IdentitySettings) -> Directory:
        """The configured directory; ValueError names a reference to nothing."""
        users, projects, assignments = (list(settings.users), list(settings.projects),
                                        list(settings.assignments))
        if not users:
            users, projects, assignments = _default_settings()
        built_projects = [Project(p.id or _id("project", p.name), p.name, p.description,
                                  p.enabled) for p in projects]
        _unique("project", [p.name for p in built_projects], [p.id for p in built_projects])
        project_ids = {p.name: p.id for p in built_projects}
        built_users = []
        for u in users:
            if u.default_project is not None and u.default_project not in project_ids:
                raise ValueError(f"[identity] user {u.name!r}: no project {u.default_project!r}")
            built_users.append(User(u.id or _id("user", u.name), u.name, u.password_hash,
                                     u.email, u.description, u.enabled,
                                     project_ids.get(u.default_project or "")))
        _unique("user", [u.name for u in built_users], [u.id for u in built_users])
        user_ids = {u.name: u.id for u in built_users}
        roles = {name: _id("role", name) for name in ROLE_NAMES}
        return cls(built_projects, built_users,
                   [_assignment(a, user_ids, project_ids, roles) for a in assignments])

    # --- lookups: None when nothing matches ------------------------------------------

    def domain(self, domain_id: str | None = None, name: str | None = None) -> Domain | None:
        return next((d for d in self.domains if (domain_id is None or d.id == domain_id)
                     and (name is None or d.name == name)), None)

    def project(self, project_id: str | None = None, name: str | None = None,
                domain_id: str | None = None) -> Project | None:
        return next((p for p in self.projects if (project_id is None or p.id == project_id)
                     and (name is None or p.name == name)
                     and (domain_id is None or p.domain_id == domain_id)), None)

    def user(self, user_id: str | None = None, name: str | None = None,
             domain_id: str | None = None) -> User | None:
        return next((u for u in self.users if (user_id is None or u.id == user_id)
                     and (name is None or u.name == name)
                     and (domain_id is None or u.domain_id == domain_id)), None)

    def role(self, role_id: str | None = None, name: str | None = None) -> Role | None:
        return next((r for r in self.roles if (role_id is None or r.id == role_id)
                     and (name is None or r.name == name)), None)

    # --- what a user holds ---------------------------------------------------------

    def roles_on(self, user_id: str, project_id: str | None = None,
                 domain_id: str | None = None) -> tuple[Role, ...]:
        """The effective roles (implied ones included) a user holds on a project or domain."""
        held = [self.role(a.role_id) for a in self.assignments if a.user_id == user_id
                and a.project_id == project_id and a.domain_id == domain_id]
        names = expand(r.name for r in held if r is not None)
        return tuple(r for r in self.roles if r.name in names)

    def projects_of(self, user_id: str) -> tuple[Project, ...]:
        """Enabled projects on which the user holds a role."""
        ids = {a.project_id for a in self.assignments if a.user_id == user_id}
        return tuple(p for p in self.projects if p.id in ids and p.enabled)

    def domains_of(self, user_id: str) -> tuple[Domain, ...]:
        ids = {a.domain_id for a in self.assignments if a.user_id == user_id}
        return tuple(d for d in self.domains if d.id in ids)

    def effective_assignments(self) -> tuple[Assignment, ...]:
        """Every assignment with the roles it implies spelled out (`effective`)."""
        out: list[Assignment] = []
        for a in self.assignments:
            role = self.role(a.role_id)
            for name in expand([role.name] if role else []):
                held = self.role(name=name)
                implied = Assignment(a.user_id, held.id if held else _id("role", name),
                                     a.project_id, a.domain_id)
                if implied not in out:
                    out.append(implied)
        return tuple(out)


def _unique(kind: str, names: list[str], ids: list[str]) -> None:
    for values, what in ((names, "name"), (ids, "id")):
        dup = sorted({v for v in values if values.count(v) > 1})
        if dup:
            raise ValueError(f"[identity] two {kind}s have the {what} {dup[0]!r}")


def _assignment(a: IdentityAssignment, users: dict[str, str], projects: dict[str, str],
                roles: dict[str, str]) -> Assignment:
    if a.user not in users:
        raise ValueError(f"[identity] assignment names no known user: {a.user!r}")
    if a.role not in roles:
        raise ValueError(f"[identity] assignment role {a.role!r} is not one of "
                         f"{', '.join(ROLE_NAMES)}")
    if (a.project is None) == (a.domain is None):
        raise ValueError(f"[identity] assignment of {a.user!r} needs a project or a domain")
    if a.project is not None and a.project not in projects:
        raise ValueError(f"[identity] assignment names no known project: {a.project!r}")
    if a.domain is not None and a.domain not in (DEFAULT_DOMAIN.id, DEFAULT_DOMAIN.name):
        raise ValueError(f"[identity] assignment domain must be 'default', not {a.domain!r}")
    return Assignment(users[a.user], roles[a.role],
                      projects[a.project] if a.project is not None else None,
                      DEFAULT_DOMAIN.id if a.domain is not None else None)
