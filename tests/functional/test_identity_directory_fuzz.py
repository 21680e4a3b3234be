"""Fuzz the identity directory writes: never a 5xx, and a 4xx changes nothing.

Every write route of the identity service except `/v3/auth/tokens` (which
`test_identity_fuzz.py` attacks) gets a `Spec`: valid bodies to mutate and
the path parameters it takes. Paths name a seeded entry made through the API
(re-made when a request deleted it), a settings-file entry, or something
hostile; the caller is the admin most of the time, else a project member::

    seeded:   project fz-project, user fz-user, role fz-role  (API-made)
    settings: project alpha, user alice, role member, domain default

After each request: status < 500; on a 4xx the directory tables and the
token table are unchanged.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stowage.identity.api import all_routes
from stowage.identity.tables import metadata as identity_metadata
from tests.functional.conftest import LiveServer
from tests.functional.fuzz_values import Ref, body_variants, encode, path_segment, weighted
from tests.functional.identity import login, token_client

EXAMPLES = int(os.environ.get("STOWAGE_FUZZ_EXAMPLES", "25"))
V3 = "/identity/v3"
WRITES = ("POST", "PUT", "PATCH", "DELETE")
_GRANT = "/v3/{kind}s/{{{kind}_id}}/users/{{user_id}}/roles/{{role_id}}"


@dataclass(frozen=True)
class Spec:
    bodies: list[Any] = field(default_factory=list)
    # path parameter -> the refs it is drawn from
    params: dict[str, list[str]] = field(default_factory=dict)


_PROJECTS = ["project", "alpha"]
_USERS = ["user", "alice"]
_ROLES = ["role", "member"]
SPECS: dict[tuple[str, str], Spec] = {
    ("POST", "/v3/projects"): Spec([{"project": {"name": "fz-new", "description": "d",
                                                 "enabled": True, "domain_id": "default"}}]),
    ("PATCH", "/v3/projects/{project_id}"): Spec(
        [{"project": {"name": "fz-renamed", "enabled": False, "description": None}}],
        {"project_id": _PROJECTS}),
    ("DELETE", "/v3/projects/{project_id}"): Spec([], {"project_id": _PROJECTS}),
    ("POST", "/v3/users"): Spec([{"user": {"name": "fz-new", "password": "pw",
                                           "default_project_id": Ref("project"),
                                           "email": "a@b.c", "enabled": True}}]),
    ("PATCH", "/v3/users/{user_id}"): Spec(
        [{"user": {"name": "fz-renamed", "password": "pw2", "enabled": False}}],
        {"user_id": _USERS}),
    ("DELETE", "/v3/users/{user_id}"): Spec([], {"user_id": _USERS}),
    ("POST", "/v3/users/{user_id}/password"): Spec(
        [{"user": {"password": "pw3", "original_password": "fz-pw"}}], {"user_id": _USERS}),
    ("POST", "/v3/roles"): Spec([{"role": {"name": "fz-new", "description": "d"}}]),
    ("DELETE", "/v3/roles/{role_id}"): Spec([], {"role_id": _ROLES}),
}
for _kind, _targets in (("project", _PROJECTS), ("domain", ["domain"])):
    for _method in ("PUT", "DELETE"):
        SPECS[(_method, _GRANT.format(kind=_kind))] = Spec(
            [], {f"{_kind}_id": _targets, "user_id": _USERS, "role_id": _ROLES})


def _write_routes() -> list[tuple[str, str]]:
    return [(r.method, r.path) for r in all_routes()
            if r.method in WRITES and r.path != "/v3/auth/tokens"]


def test_every_identity_write_route_has_a_fuzz_spec() -> None:
    assert sorted(set(_write_routes())) == sorted(SPECS)


class World:
    """The seeded entries and the callers' tokens; `resolve` turns a Ref into an id."""

    def __init__(self, live: LiveServer) -> None:
        self.live = live
        self.admin = token_client(live, login(live, "admin", "admin"), V3)
        self.member = token_client(live, login(live, "alice", "alpha"), V3)
        self.ids: dict[str, str] = {"domain": "default"}
        for kind, name in (("projects", "alpha"), ("users", "alice"), ("roles", "member")):
            found = self.admin.get(f"/{kind}", params={"name": name}).json()[kind]
            self.ids[name] = found[0]["id"]
        self.ensure()

    def ensure(self) -> None:
        """Re-make the seeded entries a request deleted (or renamed out of the way)."""
        made = {"project": ("projects", {"project": {"name": "fz-project"}}),
                "user": ("users", {"user": {"name": "fz-user", "password": "fz-pw"}}),
                "role": ("roles", {"role": {"name": "fz-role"}})}
        for key, (kind, body) in made.items():
            if key in self.ids and self._stored(key):
                continue
            resp = self.admin.post(f"/{kind}", json=body)
            if resp.status_code == 409:  # the name survived under another id: delete it
                name = body[key]["name"]
                old = self.admin.get(f"/{kind}", params={"name": name}).json()[kind][0]
                self.admin.delete(f"/{kind}/{old['id']}")
                resp = self.admin.post(f"/{kind}", json=body)
            assert resp.status_code == 201, resp.text
            self.ids[key] = resp.json()[key]["id"]

    def _stored(self, key: str) -> bool:
        table = identity_metadata.tables[f"identity_{key}s"]
        with self.live.db.engine.connect() as conn:
            return conn.execute(sa.select(table.c.id).where(
                table.c.id == self.ids[key])).first() is not None

    def resolve(self, ref: Ref) -> str:
        return self.ids[ref.name]

    def snapshot(self) -> dict[str, list[tuple[Any, ...]]]:
        with self.live.db.engine.connect() as conn:
            return {t.name: sorted(tuple(map(str, row)) for row in conn.execute(sa.select(t)))
                    for t in identity_metadata.sorted_tables}

    def close(self) -> None:
        """Remove the seeded entries, and with the role every grant a request made of it
        (say, to alice on alpha): later tests on this server see the settings' roles."""
        for key, kind in (("role", "roles"), ("user", "users"), ("project", "projects")):
            if key in self.ids:
                self.admin.delete(f"/{kind}/{self.ids[key]}")
        self.admin.close()
        self.member.close()


@pytest.fixture(scope="module")
def world(live_identity: LiveServer) -> Iterator[World]:
    made = World(live_identity)
    yield made
    made.close()


def _fuzz(test: Callable[..., None]) -> Callable[..., None]:
    return settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
                    suppress_health_check=list(HealthCheck))(test)


@pytest.mark.parametrize("route", sorted(SPECS), ids=" ".join)
def test_no_5xx_and_no_change_on_4xx(world: World, route: tuple[str, str]) -> None:
    method, template = route
    spec = SPECS[route]
    params = st.fixed_dictionaries({name: path_segment(refs)
                                    for name, refs in spec.params.items()})
    body = body_variants(spec.bodies) if spec.bodies else st.just(("none", None))
    caller = weighted((4, st.just("admin")), (1, st.just("member")))

    @_fuzz
    @given(params, body, caller)
    def attack(values: dict[str, Any], chosen: tuple[str, Any], who: str) -> None:
        world.ensure()
        path = template[len("/v3"):].format(**{
            k: world.resolve(v) if isinstance(v, Ref) else v for k, v in values.items()})
        kind, value = chosen
        content = (value if kind == "bytes" else None if kind == "none"
                   else encode(value, world.resolve).encode())
        client = world.admin if who == "admin" else world.member
        before = world.snapshot()
        resp: httpx.Response = client.request(
            method, path, content=content,
            headers={"content-type": "application/json"} if content is not None else {})
        assert resp.status_code < 500, f"{method} {path} -> {resp.status_code} {resp.text}"
        if resp.status_code >= 400:
            assert world.snapshot() == before, f"a {resp.status_code} changed: {resp.text}"

    attack()
