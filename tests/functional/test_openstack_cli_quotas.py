"""The stock `openstack` CLI's quota commands against `stowage serve`.

(`openstack limits show --absolute` also asks the Block Storage service for its
limits, which stowage does not serve; the /limits body is checked over HTTP in
test_quotas.py.)
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.functional.conftest import LiveServer, serving
from tests.functional.osc import needs_osc, osc

pytestmark = needs_osc


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with serving("sqlite") as live:
        yield live


def test_quota_set_then_show(server: LiveServer) -> None:
    osc(server, "quota", "set", "--cores", "30", "--instances", "4", "--key-pairs", "7",
        "admin", json_out=False)
    shown = {row["Resource"]: row["Limit"] for row in
             osc(server, "quota", "show", "--compute", "admin")}
    assert (shown["cores"], shown["instances"], shown["key-pairs"]) == (30, 4, 7)
    assert (shown["ram"], shown["server-groups"], shown["properties"]) == (51200, 10, 128)


def test_usage_show_of_a_window_where_nothing_ran(server: LiveServer) -> None:
    """Nova answers `{"tenant_usage": {}}` then, which the CLI shows as empty columns."""
    shown = osc(server, "usage", "show", "--project", "admin", "--start", "2024-01-01",
                "--end", "2024-02-01")
    assert shown == {"Project": None, "Servers": None, "RAM MB-Hours": None,
                     "CPU Hours": None, "Disk GB-Hours": None}
