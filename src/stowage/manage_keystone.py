"""`stowage manage keystone register`: stowage's services, endpoints and service users in Keystone.

What devstack and openstack-ansible do for Nova, Neutron, Glance and
Placement, done once for stowage's APIs, through Keystone's own v3 API as the
admin (keystoneauth1, as every OpenStack service talks to Keystone)::

    region         RegionOne (--region), made if missing
    project        service (domain Default), made if missing
    role           service, made if missing (admin comes with Keystone's bootstrap)
    per service    type       name        endpoint (public / internal)
                   placement  placement   BASE/placement
                   compute    nova        BASE/compute/v2.1
                   network    neutron     BASE/network
                   image      glance      BASE/image
                   a service of the type is reused whatever its name; an endpoint of
                   the interface and region is moved to stowage's URL (switching a
                   cloud's Placement to stowage is this step)
    service users  placement, nova, neutron, glance in domain Default, holding
                   admin and service on project service (as devstack grants them)

Everything is looked up before it is made, so the command can run again: a
second run changes nothing and says so (a new --public-url moves the
endpoints). A user's password is set when the user is made, and again on
every run that gives --service-password; without it, new users get a random
password, shown once in the settings printed at the end. Progress goes to
stderr, the settings for stowage's file to stdout.
"""

from __future__ import annotations

import argparse
import secrets
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["SERVICES", "Registrar", "add_parser", "run"]


@dataclass(frozen=True)
class Registered:
    """A service stowage serves: catalog type and name, path below BASE, service user."""

    type: str
    name: str
    path: str
    user: str
    description: str


SERVICES = (
    Registered("placement", "placement", "/placement", "placement", "Placement Service"),
    Registered("compute", "nova", "/compute/v2.1", "nova", "Compute Service"),
    Registered("network", "neutron", "/network", "neutron", "Network Service"),
    Registered("image", "glance", "/image", "glance", "Image Service"),
)
SERVICE_ROLES = ("admin", "service")
DOMAIN = "default"
_TIMEOUT = 30.0


def add_parser(manage_sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    keystone = manage_sub.add_parser("keystone", help="register stowage in a Keystone")
    actions = keystone.add_subparsers(dest="action", required=True)
    reg = actions.add_parser("register", help="create (or update) stowage's services, "
                             "endpoints and service users in Keystone; safe to run again")
    reg.add_argument("--auth-url", required=True,
                     help="Keystone's v3 URL, e.g. http://keystone:5000/v3")
    reg.add_argument("--admin-username", default="admin")
    reg.add_argument("--admin-password", required=True)
    reg.add_argument("--admin-project", default="admin")
    reg.add_argument("--admin-user-domain", default="Default",
                     help="the admin user's domain name (default Default)")
    reg.add_argument("--admin-project-domain", default="Default",
                     help="the admin project's domain name (default Default)")
    reg.add_argument("--region", default="RegionOne")
    reg.add_argument("--public-url", required=True,
                     help="stowage's base URL for clients, e.g. https://cloud.example:8780")
    reg.add_argument("--internal-url", help="stowage's base URL for services "
                     "(default: the public one)")
    reg.add_argument("--services", default=",".join(s.type for s in SERVICES),
                     help="which of placement,compute,network,image to register "
                          "(default: all)")
    reg.add_argument("--service-project", default="service")
    reg.add_argument("--service-password", help="password of the service users (set on "
                     "every run); default: a random one for users made by this run")


class KeystoneRefused(Exception):
    """Keystone answered an admin call with an error; the message says what to do."""


class Registrar:
    """Idempotent look-up-or-make steps over Keystone's v3 API; `say` reports each."""

    def __init__(self, session: Any, auth_url: str, say: Any = print) -> None:
        self._session = session
        self._base = auth_url.rstrip("/")
        self.say = say

    def _call(self, method: str, path: str, ok: Sequence[int] = (200, 201, 204),
              **kwargs: Any) -> Any:
        resp = self._session.request(self._base + path, method, raise_exc=False, **kwargs)
        if resp.status_code not in ok:
            hint = {401: "the admin credentials were refused",
                    403: "the admin user lacks the admin role Keystone asks for this"}.get(
                resp.status_code, "Keystone refused it")
            raise KeystoneRefused(f"{method} {path}: {resp.status_code} ({hint}): "
                                  f"{resp.text[:300]}")
        return resp.json() if resp.content else None

    def _one(self, path: str, key: str) -> dict[str, Any] | None:
        found = self._call("GET", path)[key]
        return dict(found[0]) if found else None

    def region(self, region: str) -> None:
        if any(r["id"] == region for r in self._call("GET", "/regions")["regions"]):
            self.say(f"region {region}: exists")
            return
        self._call("POST", "/regions", json={"region": {"id": region}})
        self.say(f"region {region}: created")

    def project(self, name: str) -> str:
        found = self._one(f"/projects?name={name}&domain_id={DOMAIN}", "projects")
        if found:
            self.say(f"project {name}: exists ({found['id']})")
            return str(found["id"])
        made = self._call("POST", "/projects", json={"project": {
            "name": name, "domain_id": DOMAIN, "description": "OpenStack service users"}})
        self.say(f"project {name}: created ({made['project']['id']})")
        return str(made["project"]["id"])

    def role(self, name: str) -> str:
        found = self._one(f"/roles?name={name}", "roles")
        if found:
            return str(found["id"])
        made = self._call("POST", "/roles", json={"role": {"name": name}})
        self.say(f"role {name}: created")
        return str(made["role"]["id"])

    def service(self, spec: Registered) -> str:
        found = self._one(f"/services?type={spec.type}", "services")
        if found:
            self.say(f"service {spec.type}: exists as {found.get('name')!r} ({found['id']})")
            return str(found["id"])
        made = self._call("POST", "/services", json={"service": {
            "type": spec.type, "name": spec.name, "description": spec.description,
            "enabled": True}})
        self.say(f"service {spec.type}: created as {spec.name!r} ({made['service']['id']})")
        return str(made["service"]["id"])

    def endpoint(self, spec: Registered, service_id: str, interface: str, region: str,
                 url: str) -> None:
        found = self._one(f"/endpoints?service_id={service_id}&interface={interface}"
                          f"&region_id={region}", "endpoints")
        where = f"endpoint {spec.type} {interface}"
        if found and found["url"] == url:
            self.say(f"{where}: {url} (unchanged)")
        elif found:
            self._call("PATCH", f"/endpoints/{found['id']}", json={"endpoint": {"url": url}})
            self.say(f"{where}: {url} (moved from {found['url']})")
        else:
            self._call("POST", "/endpoints", json={"endpoint": {
                "service_id": service_id, "interface": interface, "region_id": region,
                "url": url, "enabled": True}})
            self.say(f"{where}: {url} (created)")

    def user(self, name: str, project_id: str, password: str | None) -> tuple[str, str | None]:
        """Make the user (or reset its password when one is given): its id, and the
        password new settings must carry (None when an existing user keeps its own)."""
        found = self._one(f"/users?name={name}&domain_id={DOMAIN}", "users")
        if found is None:
            password = password or secrets.token_urlsafe(18)
            made = self._call("POST", "/users", json={"user": {
                "name": name, "domain_id": DOMAIN, "password": password, "enabled": True,
                "default_project_id": project_id}})
            self.say(f"user {name}: created ({made['user']['id']})")
            return str(made["user"]["id"]), password
        if password:
            self._call("PATCH", f"/users/{found['id']}", json={"user": {"password": password}})
            self.say(f"user {name}: exists ({found['id']}), password set")
        else:
            self.say(f"user {name}: exists ({found['id']}), password kept")
        return str(found["id"]), password

    def grant(self, user_id: str, project_id: str, roles: dict[str, str]) -> None:
        """PUT is idempotent: a role already held is granted again without change."""
        for role_id in roles.values():
            self._call("PUT", f"/projects/{project_id}/users/{user_id}/roles/{role_id}")


def _admin_session(args: argparse.Namespace) -> Any:
    from keystoneauth1 import session
    from keystoneauth1.identity import v3

    auth = v3.Password(auth_url=args.auth_url, username=args.admin_username,
                       password=args.admin_password, project_name=args.admin_project,
                       user_domain_name=args.admin_user_domain,
                       project_domain_name=args.admin_project_domain)
    return session.Session(auth=auth, timeout=_TIMEOUT)


def register(args: argparse.Namespace, say: Any) -> dict[str, str | None]:
    """Every step, in order; the service users' passwords for the settings (None: kept)."""
    wanted = [s.strip() for s in args.services.split(",") if s.strip()]
    unknown = sorted(set(wanted) - {s.type for s in SERVICES})
    if unknown:
        raise KeystoneRefused(f"--services: unknown {', '.join(unknown)}; known: "
                              f"{', '.join(s.type for s in SERVICES)}")
    keystone = Registrar(_admin_session(args), args.auth_url, say)
    keystone.region(args.region)
    project_id = keystone.project(args.service_project)
    roles = {name: keystone.role(name) for name in SERVICE_ROLES}
    bases = {"public": args.public_url.rstrip("/"),
             "internal": (args.internal_url or args.public_url).rstrip("/")}
    passwords: dict[str, str | None] = {}
    for spec in (s for s in SERVICES if s.type in wanted):
        service_id = keystone.service(spec)
        for interface, base in bases.items():
            keystone.endpoint(spec, service_id, interface, args.region, base + spec.path)
        user_id, passwords[spec.user] = keystone.user(spec.user, project_id,
                                                      args.service_password)
        keystone.grant(user_id, project_id, roles)
        say(f"user {spec.user}: holds {', '.join(roles)} on project {args.service_project}")
    return passwords


# The settings tables of stowage that name each service user (service_users.py).
_TABLES = (("placement", "placement", "Compute calls Placement as"),
           ("network", "neutron", "Compute calls the Network service as"),
           ("nova", "nova", "the Network service calls Compute as"))


def settings_snippet(args: argparse.Namespace, passwords: dict[str, str | None]) -> str:
    """The tables for stowage's settings file: the service users' ([placement],
    [network], [nova]) and Keystone token validation ([api], [keystone_authtoken])."""
    lines = ["# stowage settings: Keystone (keystoneauth's and keystonemiddleware's names,"
             " as in nova.conf and neutron.conf)"]
    common = [f'auth_url = "{args.auth_url}"', 'auth_type = "password"']
    domains = ['user_domain_name = "Default"', 'project_domain_name = "Default"',
               f'region_name = "{args.region}"']

    def password_of(user: str) -> str:
        password = passwords[user]
        return (f'password = "{password}"' if password
                else 'password = "..."  # the password set when the user was made (kept)')

    for table, user, what in _TABLES:
        if user not in passwords:
            continue
        lines += ["", f"[{table}]  # {what} {user}", *common, f'username = "{user}"',
                  password_of(user), f'project_name = "{args.service_project}"', *domains]
        lines.append('valid_interfaces = ["internal", "public"]' if table != "nova"
                     else f'endpoint_type = "{"internal" if args.internal_url else "public"}"')
    checker = next(iter(passwords))
    lines += ["", "[api]", 'auth_strategy = "keystone"', "",
              f"[keystone_authtoken]  # how stowage checks the tokens it is sent, as {checker}",
              f'www_authenticate_uri = "{args.auth_url}"', *common,
              f'username = "{checker}"', password_of(checker),
              f'project_name = "{args.service_project}"', *domains]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """`manage keystone register`: steps on stderr, the settings on stdout; 1 on failure."""
    from keystoneauth1 import exceptions

    def say(line: str) -> None:
        print(f"stowage: {line}", file=sys.stderr, flush=True)

    try:
        passwords = register(args, say)
    except KeystoneRefused as exc:
        say(f"Keystone refused a step: {exc}")
        return 1
    except exceptions.Unauthorized as exc:
        say(f"Keystone at {args.auth_url} refused the admin credentials ({exc}); check "
            "--admin-username, --admin-password, --admin-project and the domains")
        return 1
    except (exceptions.ConnectionError, exceptions.DiscoveryFailure) as exc:
        say(f"cannot reach Keystone at {args.auth_url} ({exc}); is it running, and is "
            "--auth-url its v3 URL (e.g. http://keystone:5000/v3)?")
        return 1
    except exceptions.ClientException as exc:
        say(f"Keystone at {args.auth_url}: {type(exc).__name__}: {exc}")
        return 1
    say("done; put these tables into stowage's settings file:")
    print(settings_snippet(args, passwords))
    return 0
