"""Shelve-offloading an evacuated server before its source is back frees the source at once.

    host1 (dies, comes back later)     host2
      server (small)                     the evacuation's destination

Nova's offload removes every allocation of the instance (the dead source's
included, which the instance holds there; stowage's evacuation migration
holds it instead), and leaves the migration `done`: when host1's agent
starts again it destroys the guest it still has, frees nothing (nothing is
left) and sets the migration `completed`. Unshelve claims a host from
scratch, before or after that. The audit holds at every point.
"""

from __future__ import annotations

import pytest

from tests.functional.conftest import Cloud
from tests.functional.evacuation import SMALL, evacuate, server_on_host1, the_migration
from tests.functional.servers import (
    EMPTY,
    action,
    assert_invariants,
    guests,
    held,
    server,
    start_agent,
    stop_agent,
    usages,
)

RUNNING = 1


@pytest.fixture
def hosts(cloud: Cloud) -> dict[str, str]:
    """host1 and host2 (evacuation.py), the server on host1."""
    return server_on_host1(cloud)


def _offloaded(cloud: Cloud, hosts: dict[str, str], mig_uuid: str) -> None:
    """What the user sees after the offload: nothing held anywhere, the migration `done`."""
    server_id = hosts["server"]
    view = server(cloud, server_id)
    assert (view["status"], view["OS-EXT-SRV-ATTR:host"]) == ("SHELVED_OFFLOADED", None)
    assert held(cloud, server_id) == {} and held(cloud, mig_uuid) == {}
    assert usages(cloud, hosts["host1"]) == EMPTY
    assert usages(cloud, hosts["host2"]) == EMPTY
    assert the_migration(cloud, server_id)["status"] == "done"  # as Nova leaves it
    assert_invariants(cloud)


def _unshelved(cloud: Cloud, hosts: dict[str, str], mig_uuid: str) -> str:
    """Unshelve claims one host from scratch; the migration holds nothing. Returns the host."""
    server_id = hosts["server"]
    action(cloud, server_id, {"unshelve": None})
    view = server(cloud, server_id)
    host = str(view["OS-EXT-SRV-ATTR:host"])
    assert view["status"] == "ACTIVE"
    assert held(cloud, server_id) == {hosts[host]: SMALL}
    assert held(cloud, mig_uuid) == {}
    other = "host2" if host == "host1" else "host1"
    assert usages(cloud, hosts[host]) == {**EMPTY, **SMALL}
    assert usages(cloud, hosts[other]) == EMPTY
    assert_invariants(cloud)
    return host


def test_offloading_an_evacuated_server_frees_its_source_at_once(
        cloud: Cloud, hosts: dict[str, str]) -> None:
    server_id = hosts["server"]
    host1 = stop_agent(cloud, "host1")
    evacuate(cloud, server_id)
    mig = the_migration(cloud, server_id)
    assert held(cloud, mig["uuid"]) == {hosts["host1"]: SMALL}

    action(cloud, server_id, {"shelve": None})  # offloaded at once (shelved_offload_time 0)
    _offloaded(cloud, hosts, mig["uuid"])
    assert guests(cloud, server_id) == {("host1", ""): RUNNING}  # host1 is still down

    # host1 is back: it destroys its leftover guest and frees nothing, as Nova's
    # _destroy_evacuated_instances; the migration is `completed` then.
    start_agent(cloud, host1)
    assert guests(cloud, server_id) == {}
    assert held(cloud, server_id) == {} and held(cloud, mig["uuid"]) == {}
    assert usages(cloud, hosts["host1"]) == EMPTY
    assert usages(cloud, hosts["host2"]) == EMPTY
    assert the_migration(cloud, server_id)["status"] == "completed"
    assert_invariants(cloud)

    host = _unshelved(cloud, hosts, mig["uuid"])
    assert guests(cloud, server_id) == {(host, ""): RUNNING}

    # Another restart of host1 finds nothing to do.
    start_agent(cloud, stop_agent(cloud, "host1"))
    assert held(cloud, server_id) == {hosts[host]: SMALL}
    assert guests(cloud, server_id) == {(host, ""): RUNNING}
    assert_invariants(cloud)


def test_an_evacuated_server_offloaded_and_unshelved_before_its_source_is_back(
        cloud: Cloud, hosts: dict[str, str]) -> None:
    server_id = hosts["server"]
    host1 = stop_agent(cloud, "host1")
    evacuate(cloud, server_id)
    mig = the_migration(cloud, server_id)
    action(cloud, server_id, {"shelve": None})
    _offloaded(cloud, hosts, mig["uuid"])

    assert _unshelved(cloud, hosts, mig["uuid"]) == "host2"  # host1 is still down
    assert the_migration(cloud, server_id)["status"] == "done"
    assert guests(cloud, server_id) == {("host1", ""): RUNNING, ("host2", ""): RUNNING}

    # host1 is back: only its leftover guest goes; the server keeps host2.
    start_agent(cloud, host1)
    assert guests(cloud, server_id) == {("host2", ""): RUNNING}
    assert held(cloud, server_id) == {hosts["host2"]: SMALL}
    assert held(cloud, mig["uuid"]) == {}
    assert usages(cloud, hosts["host1"]) == EMPTY
    assert the_migration(cloud, server_id)["status"] == "completed"
    assert_invariants(cloud)
