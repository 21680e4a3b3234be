"""The stock `openstack` CLI with password authentication against the built-in identity service.

No admin token, no endpoint overrides: the CLI discovers `/identity/v3`, asks
for a token with a user name and password, and finds every service in the
token's catalog, as it would against a real Keystone.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from stowage.compute.hosts import HostConfig
from tests.functional.conftest import LiveServer
from tests.functional.identity import identity_server
from tests.functional.osc import needs_osc

pytestmark = needs_osc


@pytest.fixture(scope="module")
def live() -> Iterator[LiveServer]:
    with identity_server("sqlite") as server:
        assert server.plane is not None
        server.plane.add_host(HostConfig(name="clihost1"))
        yield server


def osc_password(live: LiveServer, user: str, project: str, *args: str,
                 password: str | None = None) -> subprocess.CompletedProcess[str]:
    """`openstack --os-auth-url ... --os-username ...` exactly as a user would type it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    cmd = ["openstack", "--os-auth-url", f"{live.url}/identity/v3",
           "--os-username", user, "--os-password", password or f"{user}-pw",
           "--os-project-name", project, "--os-user-domain-name", "Default",
           "--os-project-domain-name", "Default", "--os-identity-api-version", "3",
           "--os-region-name", "RegionOne", *args, "-f", "json"]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120,
                          check=False, stdin=subprocess.DEVNULL)


def ok(result: subprocess.CompletedProcess[str]) -> Any:
    assert result.returncode == 0, f"{result.args}\n{result.stdout}\n{result.stderr}"
    return json.loads(result.stdout)


def test_admin_lists_servers_flavors_and_providers(live: LiveServer) -> None:
    assert ok(osc_password(live, "admin", "admin", "server", "list")) == []
    assert ok(osc_password(live, "admin", "admin", "flavor", "list")) == []
    providers = ok(osc_password(live, "admin", "admin", "resource", "provider", "list"))
    assert [p["name"] for p in providers] == ["clihost1"]
    projects = ok(osc_password(live, "admin", "admin", "project", "list"))
    assert {p["Name"] for p in projects} == {"admin", "alpha", "closed"}


def test_member_is_refused_what_policy_refuses_and_bad_password_fails(
        live: LiveServer) -> None:
    refused = osc_password(live, "alice", "alpha", "resource", "provider", "list")
    assert refused.returncode != 0 and "403" in refused.stderr
    wrong = osc_password(live, "alice", "alpha", "server", "list", password="nope")
    assert wrong.returncode != 0 and "401" in wrong.stderr
