"""Nova 34's own SchedulerReportClient, configured as a nova.conf does it, against stowage::

    .venv-nova: nova.conf [placement] auth_type=password, auth_url, service user,
                region_name, valid_interfaces -- no endpoint
        |  token as the placement service user; endpoint from Keystone's catalog
        v
    stowage Placement (auth_strategy keystone), registered by `manage keystone register`

The cycle (nova_report_cycle.py, run in Nova's interpreter): provider and
inventory, a claim, a move to a migration consumer, the allocation's
removal and the provider's deletion; what it read back is checked here.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.functional.conftest import LiveServer
from tests.keystone.fixture import Keystone
from tests.keystone.service_users import PASSWORD, registered_placement
from tests.nova.environment import ensure_environment

CYCLE = Path(__file__).with_name("nova_report_cycle.py")


@pytest.fixture(scope="module")
def placement(keystone: Keystone, tmp_path_factory: pytest.TempPathFactory
              ) -> Iterator[LiveServer]:
    with registered_placement(keystone, tmp_path_factory.mktemp("nova-rc")) as (live, _):
        yield live


def test_novas_report_client_runs_a_cycle_with_a_password_section_and_the_catalog(
        keystone: Keystone, placement: LiveServer, tmp_path: Path) -> None:
    python = ensure_environment()
    conf = tmp_path / "nova.conf"
    conf.write_text(
        "[placement]\nauth_type = password\n"
        f"auth_url = {keystone.auth_url}\nusername = placement\npassword = {PASSWORD}\n"
        "project_name = service\nuser_domain_name = Default\nproject_domain_name = Default\n"
        f"region_name = {keystone.region}\nvalid_interfaces = internal,public\n")
    done = subprocess.run([str(python), str(CYCLE), str(conf)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["endpoint"].rstrip("/") == f"{placement.url}/placement"
    assert seen["claimed"] is True and seen["moved"] is True
    node = next(iter(seen["held"]))
    assert seen["held"][node]["resources"] == {"VCPU": 2, "MEMORY_MB": 1024}
    assert seen["after_move"][node]["resources"] == {"VCPU": 2, "MEMORY_MB": 1024}
    assert list(seen["usages"]) == [seen["migration"]]  # the provider's only consumer
    assert seen["left"] == {} and seen["name"] == "nova-node"
    assert seen["after_delete"] == 404
