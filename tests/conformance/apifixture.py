"""The base gabbi fixture: a fresh server and database for one YAML file.

Upstream's ``APIFixture`` configures an in-process WSGI app; ours starts a
real server process instead, on the port the suite was built for, against a
database made for this file alone. Subclasses describe their data in
``seed()`` (written over HTTP) and their server in ``server_options``.

The suite builder (``suite.run_file``) tells the fixture which target,
database and port to use through ``planned()``: gabbi instantiates fixture
classes itself, without arguments, so a module-level plan is the seam.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from gabbi import fixture

from .databases import FreshDatabase, create_database
from .seeding import Seeder
from .server import ServerProcess
from .settings import RunSettings
from .targets import ServerOptions, launch_for

__all__ = ["APIFixture", "FilePlan", "current_plan", "planned"]


@dataclass(frozen=True)
class FilePlan:
    """Where and how the server for one YAML file runs."""

    settings: RunSettings
    port: int
    workdir: Path


_plan: FilePlan | None = None


@contextlib.contextmanager
def planned(plan: FilePlan) -> Iterator[FilePlan]:
    """Make ``plan`` the one the fixtures use while the suite runs."""
    global _plan
    previous, _plan = _plan, plan
    try:
        yield plan
    finally:
        _plan = previous


def current_plan() -> FilePlan:
    if _plan is None:
        raise RuntimeError("conformance fixture used outside suite.run_file")
    return _plan


# The variables upstream's APIFixture puts in os.environ for $ENVIRON[...].
_UUID_VARS = (
    "RP_UUID", "RP_NAME", "RP_UUID1", "RP_NAME1", "RP_UUID2", "RP_NAME2",
    "PROJECT_ID", "ADMIN_PROJECT_ID", "SERVICE_PROJECT_ID", "USER_ID",
    "PROJECT_ID_ALT", "USER_ID_ALT", "INSTANCE_UUID", "MIGRATION_UUID",
    "CONSUMER_UUID", "PARENT_PROVIDER_UUID", "ALT_PARENT_PROVIDER_UUID",
)
_FIXED_VARS = {
    "CUSTOM_RES_CLASS": "CUSTOM_IRON_NFV",
    "CUSTOM_RES_CLASS1": "CUSTOM_IRON_NFV1",
    "CUSTOM_RES_CLASS2": "CUSTOM_IRON_NFV2",
}


def new_uuid() -> str:
    return str(uuid.uuid4())


class APIFixture(fixture.GabbiFixture):  # type: ignore[misc]
    """A placement server with an empty database (plus the standard traits
    and resource classes every placement has)."""

    server_options = ServerOptions()

    def start_fixture(self) -> None:
        plan = current_plan()
        for name in _UUID_VARS:
            os.environ[name] = new_uuid()
        os.environ.update(_FIXED_VARS)
        self.server: ServerProcess | None = None
        self.database: FreshDatabase | None = create_database(
            plan.settings.database, plan.workdir,
            migrated=plan.settings.target == "stowage")
        try:
            launch = launch_for(plan.settings.target, plan.port,
                                self.database.url, self.server_options,
                                plan.workdir)
            self.server = ServerProcess(launch, plan.port,
                                        plan.workdir / "server.log")
            self.server.start()
            seeder = Seeder(self.server.base_url)
            try:
                self.seed(seeder)
            finally:
                seeder.close()
        except BaseException:
            # gabbi does not call stop_fixture when start_fixture raises.
            self.stop_fixture()
            raise

    def seed(self, api: Seeder) -> None:
        """Write this fixture's data; the plain APIFixture has none."""

    def stop_fixture(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None
        if self.database is not None:
            self.database.drop()
            self.database = None


class CORSFixture(APIFixture):
    """A server with CORS on: origin http://valid.example.com may send the
    openstack-api-version header."""

    server_options = ServerOptions(cors=True)


class OpenPolicyFixture(APIFixture):
    """A server whose policy lets anyone do anything (every rule but
    admin_api is "@"), so non-admin requests reach the handlers."""

    server_options = ServerOptions(open_policy=True)


class SecureRBACPolicyFixture(APIFixture):
    """A server enforcing upstream's new (secure RBAC) policy defaults."""

    server_options = ServerOptions(enforce_new_defaults=True)


class LegacyRBACPolicyFixture(APIFixture):
    """A server enforcing the deprecated (legacy) policy defaults; the same
    as APIFixture, but says so explicitly."""

    server_options = ServerOptions(enforce_new_defaults=False)
