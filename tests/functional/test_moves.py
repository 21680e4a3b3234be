"""Resize, cold migrate, confirm and revert: who holds what, at every step.

The topology of most tests::

    host1 (16 VCPU, 8192 MB, 100 GB)      host2 (same)
      server (small: 1 VCPU, 512 MB, 5 GB)

The rule under test: during a move the migration (by its uuid) holds the
source allocation and the instance the destination one; confirm drops the
migration's, revert gives it back to the instance, and nothing leaks.
"""

from __future__ import annotations

import pytest

from tests.functional.conftest import Cloud
from tests.functional.servers import (
    action,
    assert_invariants,
    boot,
    flavor,
    flavor_amounts,
    flavor_id,
    held,
    host_of,
    image,
    migrations_of,
    server,
    usages,
)

SMALL = flavor_amounts(1, 512, 5)
LARGE = flavor_amounts(2, 1024, 10)


@pytest.fixture
def two_hosts(cloud: Cloud) -> dict[str, str]:
    """host1 and host2, equal; the spread weigher breaks the tie by name: host1 first."""
    nodes = {name: cloud.add_host(name, vcpus=16, memory_mb=8192, disk_gb=100)
             for name in ("host1", "host2")}
    flavor(cloud, "small", 1, 512, 5)
    flavor(cloud, "large", 2, 1024, 10)
    return nodes


def _boot_small(cloud: Cloud) -> str:
    server_id = boot(cloud, "vm", flavor_id(cloud, "small"), image(cloud))
    assert server(cloud, server_id)["status"] == "ACTIVE"
    return server_id


def _resize(cloud: Cloud, server_id: str, to: str = "large") -> dict[str, object]:
    action(cloud, server_id, {"resize": {"flavorRef": flavor_id(cloud, to)}})
    migs = migrations_of(cloud, server_id)
    assert len(migs) == 1
    return migs[0]


def test_resize_then_confirm(cloud: Cloud, two_hosts: dict[str, str]) -> None:
    server_id = _boot_small(cloud)
    assert held(cloud, server_id) == {two_hosts["host1"]: SMALL}

    mig = _resize(cloud, server_id)
    assert server(cloud, server_id)["status"] == "VERIFY_RESIZE"
    assert (mig["status"], mig["migration_type"]) == ("finished", "resize")
    assert (mig["source_compute"], mig["dest_compute"]) == ("host1", "host2")
    assert held(cloud, str(mig["uuid"])) == {two_hosts["host1"]: SMALL}
    assert held(cloud, server_id) == {two_hosts["host2"]: LARGE}
    assert_invariants(cloud)

    action(cloud, server_id, {"confirmResize": None}, status=204)
    view = server(cloud, server_id)
    assert (view["status"], view["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", "host2")
    assert view["flavor"]["original_name"] == "large"
    assert migrations_of(cloud, server_id)[0]["status"] == "confirmed"
    assert held(cloud, str(mig["uuid"])) == {}
    assert held(cloud, server_id) == {two_hosts["host2"]: LARGE}
    assert usages(cloud, two_hosts["host1"]) == {"VCPU": 0, "MEMORY_MB": 0, "DISK_GB": 0}
    assert_invariants(cloud)


def test_resize_then_revert(cloud: Cloud, two_hosts: dict[str, str]) -> None:
    server_id = _boot_small(cloud)
    mig = _resize(cloud, server_id)

    action(cloud, server_id, {"revertResize": None})
    view = server(cloud, server_id)
    assert (view["status"], view["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", "host1")
    assert view["flavor"]["original_name"] == "small"
    assert migrations_of(cloud, server_id)[0]["status"] == "reverted"
    assert held(cloud, str(mig["uuid"])) == {}
    assert held(cloud, server_id) == {two_hosts["host1"]: SMALL}
    assert usages(cloud, two_hosts["host2"]) == {"VCPU": 0, "MEMORY_MB": 0, "DISK_GB": 0}
    assert_invariants(cloud)


def test_same_host_resize_beyond_max_unit(cloud: Cloud) -> None:
    """One host with 4 VCPUs (max_unit 4): old 3 + new 4 VCPUs held at once, by two consumers.

        host1 (4 VCPU x 16.0)
          migration: 3 VCPU (old flavor)   instance: 4 VCPU (new flavor)
    """
    node = cloud.add_host("host1", vcpus=4, memory_mb=8192, disk_gb=100)
    cloud.configure(allow_resize_to_same_host=True)
    flavor(cloud, "three", 3, 512, 5)
    flavor(cloud, "four", 4, 512, 5)
    server_id = boot(cloud, "vm", flavor_id(cloud, "three"), image(cloud))

    mig = _resize(cloud, server_id, to="four")
    assert server(cloud, server_id)["status"] == "VERIFY_RESIZE"
    assert (mig["source_compute"], mig["dest_compute"]) == ("host1", "host1")
    assert held(cloud, str(mig["uuid"])) == {node: flavor_amounts(3, 512, 5)}
    assert held(cloud, server_id) == {node: flavor_amounts(4, 512, 5)}
    assert usages(cloud, node)["VCPU"] == 7
    assert_invariants(cloud)

    action(cloud, server_id, {"confirmResize": None}, status=204)
    assert held(cloud, server_id) == {node: flavor_amounts(4, 512, 5)}
    assert usages(cloud, node)["VCPU"] == 4
    assert_invariants(cloud)


def test_cold_migrate_to_a_chosen_host(cloud: Cloud) -> None:
    nodes = {h: cloud.add_host(h, vcpus=16, memory_mb=8192, disk_gb=100)
             for h in ("host1", "host2", "host3")}
    flavor(cloud, "small", 1, 512, 5)
    server_id = _boot_small(cloud)

    action(cloud, server_id, {"migrate": {"host": "host3"}})
    mig = migrations_of(cloud, server_id)[0]
    assert (mig["migration_type"], mig["dest_compute"]) == ("migration", "host3")
    assert server(cloud, server_id)["status"] == "VERIFY_RESIZE"
    assert held(cloud, str(mig["uuid"])) == {nodes["host1"]: SMALL}
    assert held(cloud, server_id) == {nodes["host3"]: SMALL}

    action(cloud, server_id, {"confirmResize": None}, status=204)
    assert host_of(cloud, server_id) == "host3"
    assert held(cloud, server_id) == {nodes["host3"]: SMALL}
    assert_invariants(cloud)


def test_anti_affinity_is_kept_on_boot_and_on_migrate(cloud: Cloud) -> None:
    """Two members on host1 and host2; migrating one must not land on the other's host."""
    nodes = {h: cloud.add_host(h, vcpus=16, memory_mb=8192, disk_gb=100)
             for h in ("host1", "host2")}
    flavor(cloud, "small", 1, 512, 5)
    group = cloud.compute.post("/os-server-groups", json={
        "server_group": {"name": "apart", "policy": "anti-affinity"}}).json()["server_group"]
    first = boot(cloud, "a", flavor_id(cloud, "small"), image(cloud), hints={"group": group["id"]})
    second = boot(cloud, "b", flavor_id(cloud, "small"), image(cloud),
                  hints={"group": group["id"]})
    assert {host_of(cloud, first), host_of(cloud, second)} == {"host1", "host2"}

    action(cloud, first, {"migrate": None})
    view = server(cloud, first)
    assert view["status"] == "ACTIVE"  # no valid host: back where it was
    assert migrations_of(cloud, first)[0]["status"] == "error"
    assert held(cloud, first) == {nodes[host_of(cloud, first)]: SMALL}
    assert_invariants(cloud)

    third = cloud.add_host("host3", vcpus=16, memory_mb=8192, disk_gb=100)
    action(cloud, first, {"migrate": None})
    assert server(cloud, first)["status"] == "VERIFY_RESIZE"
    assert held(cloud, first) == {third: SMALL}
    assert_invariants(cloud)


def test_revert_after_the_source_host_filled_up(cloud: Cloud) -> None:
    """host1 has room for two small servers; while `vm` is resized away, `filler`
    takes the rest of host1. The revert still fits: the migration kept vm's share.

        host1 (2 VCPU x 1.0): migration 1 + filler 1     host2: vm (large)
    """
    source = cloud.add_host("host1", vcpus=2, memory_mb=8192, disk_gb=100,
                            cpu_allocation_ratio=1.0)
    cloud.add_host("host2", vcpus=2, memory_mb=8192, disk_gb=100, cpu_allocation_ratio=1.0)
    flavor(cloud, "small", 1, 512, 5)
    flavor(cloud, "large", 2, 1024, 10)
    server_id = _boot_small(cloud)
    assert host_of(cloud, server_id) == "host1"
    _resize(cloud, server_id)
    filler = boot(cloud, "filler", flavor_id(cloud, "small"), image(cloud))
    assert host_of(cloud, filler) == "host1"
    assert usages(cloud, source)["VCPU"] == 2

    action(cloud, server_id, {"revertResize": None})
    assert server(cloud, server_id)["status"] == "ACTIVE"
    assert held(cloud, server_id) == {source: SMALL}
    assert usages(cloud, source)["VCPU"] == 2
    assert_invariants(cloud)


def test_delete_in_verify_resize_leaves_nothing(cloud: Cloud, two_hosts: dict[str, str]) -> None:
    server_id = _boot_small(cloud)
    mig = _resize(cloud, server_id)
    assert cloud.compute.delete(f"/servers/{server_id}").status_code == 204
    action_done = cloud.plane.drain(60)
    assert action_done
    assert held(cloud, server_id) == {}
    assert held(cloud, str(mig["uuid"])) == {}
    for node in two_hosts.values():
        assert usages(cloud, node) == {"VCPU": 0, "MEMORY_MB": 0, "DISK_GB": 0}
    assert cloud.compute.get(f"/servers/{server_id}").status_code == 404
    assert_invariants(cloud)


def test_resize_of_a_stopped_server_stays_stopped(cloud: Cloud,
                                                  two_hosts: dict[str, str]) -> None:
    server_id = _boot_small(cloud)
    action(cloud, server_id, {"os-stop": None})
    assert server(cloud, server_id)["status"] == "SHUTOFF"
    _resize(cloud, server_id)
    assert server(cloud, server_id)["status"] == "VERIFY_RESIZE"
    action(cloud, server_id, {"confirmResize": None}, status=204)
    assert server(cloud, server_id)["status"] == "SHUTOFF"
    action(cloud, server_id, {"os-start": None})
    assert server(cloud, server_id)["status"] == "ACTIVE"
    assert_invariants(cloud)


def test_volume_backed_server_holds_no_root_disk_through_a_resize(
        cloud: Cloud, two_hosts: dict[str, str]) -> None:
    """Newton's rule: a root disk on a volume takes no DISK_GB from the host, before,
    during and after the move; only ephemeral/swap disk would."""
    bdm = [{"uuid": "5d4bd7ec-3f5b-4c1e-9d0a-1b2c3d4e5f60", "source_type": "volume",
            "destination_type": "volume", "boot_index": 0}]
    server_id = boot(cloud, "vm", flavor_id(cloud, "small"), "",
                     block_device_mapping_v2=bdm)
    assert server(cloud, server_id)["status"] == "ACTIVE"
    assert held(cloud, server_id) == {two_hosts["host1"]: {"VCPU": 1, "MEMORY_MB": 512}}

    mig = _resize(cloud, server_id)
    assert held(cloud, str(mig["uuid"])) == {two_hosts["host1"]: {"VCPU": 1, "MEMORY_MB": 512}}
    assert held(cloud, server_id) == {two_hosts["host2"]: {"VCPU": 2, "MEMORY_MB": 1024}}
    assert_invariants(cloud)
    action(cloud, server_id, {"confirmResize": None}, status=204)
    assert held(cloud, server_id) == {two_hosts["host2"]: {"VCPU": 2, "MEMORY_MB": 1024}}
    assert_invariants(cloud)
