"""shelve, shelveOffload and unshelve: what the user sees, and what each consumer holds.

    host1 (16 VCPU, 8192 MB, 100 GB)      host2 (same)
      vm (small: 1 VCPU, 512 MB, 5 GB)

The rules under test: a SHELVED server holds its flavor on its host; a
SHELVED_OFFLOADED one has no host and holds nothing anywhere; unshelving an
offloaded server claims a host from scratch for the instance, and its
snapshot image goes once it runs again.
"""

from __future__ import annotations

import time

from stowage.compute import heal
from stowage.placement.client import PlacementClient
from tests.functional.conftest import MEMBER, Cloud
from tests.functional.servers import (
    EMPTY,
    action,
    assert_invariants,
    boot,
    flavor,
    flavor_amounts,
    held,
    image,
    server,
    usages,
)
from tests.functional.shelving import (
    SMALL,
    event_names,
    guest_power,
    images_named,
    post_action,
    set_service,
    sts,
    two_hosts_and_a_server,
)

SHUTDOWN, RUNNING = 4, 1


def test_shelve_offloads_at_once_by_default(cloud: Cloud) -> None:
    """Nova's default shelved_offload_time = 0: snapshot, then the host is freed at once."""
    shelf = two_hosts_and_a_server(cloud)

    action(cloud, shelf.server, {"shelve": None})
    view = server(cloud, shelf.server)
    assert sts(view) == ("SHELVED_OFFLOADED", "shelved_offloaded", None, SHUTDOWN, None)
    assert view["OS-EXT-SRV-ATTR:hypervisor_hostname"] is None
    assert view["OS-EXT-AZ:availability_zone"] == "nova"  # the zone it was in, as Nova
    assert held(cloud, shelf.server) == {}
    assert usages(cloud, shelf.nodes["host1"]) == EMPTY
    assert guest_power(cloud, "host1", shelf.server) == 0
    [snapshot] = images_named(cloud, "vm-shelved")
    assert (snapshot["status"], snapshot["visibility"]) == ("active", "private")
    assert snapshot["instance_uuid"] == shelf.server
    assert snapshot["image_type"] == "snapshot"
    assert event_names(cloud, shelf.server, "shelve") == [
        ("compute_shelve_instance", "Success"), ("compute_shelve_offload_instance", "Success")]
    assert_invariants(cloud)


def test_shelve_keeps_the_host_when_offload_is_off(cloud: Cloud) -> None:
    """shelved_offload_time = -1: SHELVED, powered off, still holding its flavor on host1."""
    shelf = two_hosts_and_a_server(cloud, offload_time=-1)

    action(cloud, shelf.server, {"shelve": None})
    assert sts(server(cloud, shelf.server)) == ("SHELVED", "shelved", None, SHUTDOWN, "host1")
    assert held(cloud, shelf.server) == {shelf.nodes["host1"]: SMALL}
    assert guest_power(cloud, "host1", shelf.server) == SHUTDOWN
    assert len(images_named(cloud, "vm-shelved")) == 1
    assert_invariants(cloud)

    action(cloud, shelf.server, {"shelveOffload": None})
    assert sts(server(cloud, shelf.server)) == (
        "SHELVED_OFFLOADED", "shelved_offloaded", None, SHUTDOWN, None)
    assert held(cloud, shelf.server) == {}
    assert usages(cloud, shelf.nodes["host1"]) == EMPTY
    assert guest_power(cloud, "host1", shelf.server) == 0
    assert len(images_named(cloud, "vm-shelved")) == 1
    assert_invariants(cloud)


def test_a_stopped_server_shelves_too(cloud: Cloud) -> None:
    shelf = two_hosts_and_a_server(cloud, offload_time=-1)
    action(cloud, shelf.server, {"os-stop": None})

    action(cloud, shelf.server, {"shelve": None})
    assert sts(server(cloud, shelf.server)) == ("SHELVED", "shelved", None, SHUTDOWN, "host1")
    action(cloud, shelf.server, {"unshelve": None})
    assert sts(server(cloud, shelf.server)) == ("ACTIVE", "active", None, RUNNING, "host1")
    assert_invariants(cloud)


def test_shelved_servers_are_offloaded_after_shelved_offload_time(cloud: Cloud) -> None:
    """N > 0: the conductor's periodic offloads servers shelved longer than N seconds."""
    shelf = two_hosts_and_a_server(cloud, offload_time=60)
    action(cloud, shelf.server, {"shelve": None})
    cloud.plane.conductor.offload_shelved()  # shelved less than 60 s ago: nothing happens
    cloud.plane.drain()
    assert server(cloud, shelf.server)["status"] == "SHELVED"

    cloud.configure(shelved_offload_time=1)
    time.sleep(1.2)
    cloud.plane.conductor.offload_shelved()
    cloud.plane.drain()
    assert server(cloud, shelf.server)["status"] == "SHELVED_OFFLOADED"
    assert held(cloud, shelf.server) == {}
    assert event_names(cloud, shelf.server, "shelveOffload") == [
        ("compute_shelve_offload_instance", "Success")]
    assert_invariants(cloud)


def test_unshelve_of_a_shelved_server_powers_it_on_in_place(cloud: Cloud) -> None:
    shelf = two_hosts_and_a_server(cloud, offload_time=-1)
    action(cloud, shelf.server, {"shelve": None})

    action(cloud, shelf.server, {"unshelve": None})
    assert sts(server(cloud, shelf.server)) == ("ACTIVE", "active", None, RUNNING, "host1")
    assert held(cloud, shelf.server) == {shelf.nodes["host1"]: SMALL}
    assert guest_power(cloud, "host1", shelf.server) == RUNNING
    assert images_named(cloud, "vm-shelved") == []
    assert_invariants(cloud)


def test_unshelve_of_an_offloaded_server_claims_a_host_from_scratch(cloud: Cloud) -> None:
    """host1 disabled meanwhile: the scheduler places the server on host2."""
    shelf = two_hosts_and_a_server(cloud)
    action(cloud, shelf.server, {"shelve": None})
    set_service(cloud, "host1", "disabled")

    action(cloud, shelf.server, {"unshelve": None})
    view = server(cloud, shelf.server)
    assert sts(view) == ("ACTIVE", "active", None, RUNNING, "host2")
    assert view["OS-EXT-SRV-ATTR:hypervisor_hostname"] == "host2"
    assert held(cloud, shelf.server) == {shelf.nodes["host2"]: SMALL}
    assert usages(cloud, shelf.nodes["host1"]) == EMPTY
    assert guest_power(cloud, "host2", shelf.server) == RUNNING
    assert images_named(cloud, "vm-shelved") == []
    assert event_names(cloud, shelf.server, "unshelve") == [
        ("schedule_instances", "Success"), ("compute_unshelve_instance", "Success")]
    assert_invariants(cloud)

    # And again: the second shelve makes a fresh snapshot, the unshelve removes it.
    set_service(cloud, "host1", "enabled")
    action(cloud, shelf.server, {"shelve": None})
    assert (held(cloud, shelf.server), len(images_named(cloud, "vm-shelved"))) == ({}, 1)
    action(cloud, shelf.server, {"unshelve": None})
    assert server(cloud, shelf.server)["status"] == "ACTIVE"
    assert images_named(cloud, "vm-shelved") == []
    assert_invariants(cloud)


def test_unshelve_after_a_resize_claims_the_new_flavor(cloud: Cloud) -> None:
    """Resized (and confirmed) before it was shelved: the offloaded server's new claim is
    for the flavor it has now, not the one it was booted with (the request spec's)."""
    shelf = two_hosts_and_a_server(cloud)
    bigger = flavor(cloud, "bigger", 2, 1024, 10)
    action(cloud, shelf.server, {"resize": {"flavorRef": bigger}})
    action(cloud, shelf.server, {"confirmResize": None}, status=204)
    assert server(cloud, shelf.server)["flavor"]["original_name"] == "bigger"
    action(cloud, shelf.server, {"shelve": None})

    action(cloud, shelf.server, {"unshelve": None})
    view = server(cloud, shelf.server)
    assert view["status"] == "ACTIVE"
    node = shelf.nodes[view["OS-EXT-SRV-ATTR:host"]]
    assert held(cloud, shelf.server) == {node: flavor_amounts(2, 1024, 10)}
    assert_invariants(cloud)


def test_unshelve_with_no_valid_host_stays_offloaded_holding_nothing(cloud: Cloud) -> None:
    shelf = two_hosts_and_a_server(cloud)
    action(cloud, shelf.server, {"shelve": None})
    set_service(cloud, "host1", "disabled")
    set_service(cloud, "host2", "disabled")

    action(cloud, shelf.server, {"unshelve": None})
    assert sts(server(cloud, shelf.server)) == (
        "SHELVED_OFFLOADED", "shelved_offloaded", None, SHUTDOWN, None)
    assert held(cloud, shelf.server) == {}
    assert len(images_named(cloud, "vm-shelved")) == 1  # kept: unshelve may be retried
    assert event_names(cloud, shelf.server, "unshelve")[0][1] == "Error"
    assert_invariants(cloud)

    set_service(cloud, "host2", "enabled")
    action(cloud, shelf.server, {"unshelve": None})
    assert sts(server(cloud, shelf.server))[0::4] == ("ACTIVE", "host2")
    assert held(cloud, shelf.server) == {shelf.nodes["host2"]: SMALL}
    assert_invariants(cloud)


def test_unshelve_into_an_availability_zone_at_2_77(cloud: Cloud) -> None:
    """host1 in az1, host2 in az2: the zone steers the unshelve and is kept in the spec."""
    shelf = two_hosts_and_a_server(cloud, zones=("az1", "az2"))
    action(cloud, shelf.server, {"shelve": None})

    action(cloud, shelf.server, {"unshelve": {"availability_zone": "az2"}})
    view = server(cloud, shelf.server)
    assert (view["status"], view["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", "host2")
    assert view["OS-EXT-AZ:availability_zone"] == "az2"
    assert held(cloud, shelf.server) == {shelf.nodes["host2"]: SMALL}
    assert_invariants(cloud)

    # The zone stays the server's: a later offloaded unshelve stays in az2.
    action(cloud, shelf.server, {"shelve": None})
    assert server(cloud, shelf.server)["OS-EXT-AZ:availability_zone"] == "az2"
    action(cloud, shelf.server, {"unshelve": None})
    assert server(cloud, shelf.server)["OS-EXT-SRV-ATTR:host"] == "host2"
    assert_invariants(cloud)


def test_unshelve_zone_and_host_refusals(cloud: Cloud) -> None:
    shelf = two_hosts_and_a_server(cloud, offload_time=-1)
    action(cloud, shelf.server, {"shelve": None})
    old = cloud.client("admin", version="2.76")
    at_2_77 = cloud.client("admin", version="2.77")

    resp = post_action(at_2_77, shelf.server, {"unshelve": {"availability_zone": "nova"}})
    assert resp.status_code == 409
    assert resp.json()["conflictingRequest"]["message"] == (
        f'Specifying an availability zone or a host when unshelving server "{shelf.server}" '
        'with status "shelved" is not supported. The server status must be SHELVED_OFFLOADED.')
    for body in ({"unshelve": {}}, {"unshelve": {"availability_zone": "nova", "x": 1}},
                 {"unshelve": {"host": "host2"}}):  # host only from 2.91
        assert post_action(at_2_77, shelf.server, body).status_code == 400, body
    action(cloud, shelf.server, {"shelveOffload": None})
    resp = post_action(at_2_77, shelf.server, {"unshelve": {"availability_zone": "nowhere"}})
    assert resp.status_code == 400
    assert resp.json()["badRequest"]["message"] == (
        "The requested availability zone is not available")
    assert server(cloud, shelf.server)["status"] == "SHELVED_OFFLOADED"

    # Before 2.77 the body is not looked at (as Nova): a zone is ignored.
    assert post_action(old, shelf.server, {"unshelve": {"availability_zone": "x"}}
                       ).status_code == 202
    cloud.plane.drain()
    assert server(cloud, shelf.server)["status"] == "ACTIVE"
    assert_invariants(cloud)
    for client in (old, at_2_77):
        client.close()


def test_other_actions_are_refused_in_shelved_states(cloud: Cloud) -> None:
    shelf = two_hosts_and_a_server(cloud, offload_time=-1)
    uuid = shelf.server
    resp = post_action(cloud.compute, uuid, {"shelveOffload": None})
    assert resp.status_code == 409
    assert resp.json()["conflictingRequest"]["message"] == (
        f"Cannot 'shelveOffload' instance {uuid} while it is in vm_state active")
    resp = post_action(cloud.compute, uuid, {"unshelve": None})
    assert resp.json()["conflictingRequest"]["message"] == (
        f"Cannot 'unshelve' instance {uuid} while it is in vm_state active")

    action(cloud, uuid, {"shelve": None})
    for state in ("shelved", "shelved_offloaded"):
        for name, body in (("resize", {"resize": {"flavorRef": shelf.flavor}}),
                           ("migrate", {"migrate": None}), ("stop", {"os-stop": None}),
                           ("start", {"os-start": None}), ("shelve", {"shelve": None})):
            resp = post_action(cloud.compute, uuid, body)
            assert resp.status_code == 409, (state, name, resp.text)
            assert resp.json()["conflictingRequest"]["message"] == (
                f"Cannot '{name}' instance {uuid} while it is in vm_state {state}")
        if state == "shelved":
            action(cloud, uuid, {"shelveOffload": None})
    assert held(cloud, uuid) == {}
    assert_invariants(cloud)


def test_policy_members_shelve_and_unshelve_admins_offload(cloud: Cloud) -> None:
    cloud.configure(shelved_offload_time=-1)
    nodes = {"host1": cloud.add_host("host1", vcpus=16, memory_mb=8192, disk_gb=100)}
    flavor_id = flavor(cloud, "small", 1, 512, 5)
    image_id = image(cloud, visibility="public")
    member = cloud.client("demo:p1", roles=MEMBER)
    reader = cloud.client("demo:p1", roles=("reader",))
    server_id = boot(cloud, "vm", flavor_id, image_id, client=member)

    assert post_action(reader, server_id, {"shelve": None}).status_code == 403
    action(cloud, server_id, {"shelve": None}, client=member)
    [snapshot] = images_named(cloud, "vm-shelved")
    assert (snapshot["owner"], snapshot["visibility"]) == ("p1", "private")
    resp = post_action(member, server_id, {"shelveOffload": None})
    assert resp.status_code == 403
    assert held(cloud, server_id) == {nodes["host1"]: SMALL}
    action(cloud, server_id, {"unshelve": None}, client=member)
    assert server(cloud, server_id)["status"] == "ACTIVE"
    # Another project's server does not exist for a member.
    other = cloud.client("demo:p2", roles=MEMBER)
    assert post_action(other, server_id, {"shelve": None}).status_code == 404
    for client in (member, reader, other):
        client.close()
    assert_invariants(cloud)


def test_delete_of_shelved_and_offloaded_servers(cloud: Cloud) -> None:
    """Nothing stays: no guest, no allocation, no snapshot image."""
    shelf = two_hosts_and_a_server(cloud, offload_time=-1)
    second = boot(cloud, "vm2", shelf.flavor, shelf.image)
    action(cloud, shelf.server, {"shelve": None})
    action(cloud, second, {"shelve": None})
    action(cloud, second, {"shelveOffload": None})
    assert len(images_named(cloud, "vm-shelved")) == 1
    assert len(images_named(cloud, "vm2-shelved")) == 1

    for server_id in (shelf.server, second):
        assert cloud.compute.delete(f"/servers/{server_id}").status_code == 204
    cloud.plane.drain()
    for server_id in (shelf.server, second):
        assert cloud.compute.get(f"/servers/{server_id}").status_code == 404
        assert held(cloud, server_id) == {}
        assert all(guest_power(cloud, h, server_id) == 0 for h in ("host1", "host2"))
    assert images_named(cloud, "vm-shelved") == images_named(cloud, "vm2-shelved") == []
    assert usages(cloud, shelf.nodes["host1"]) == usages(cloud, shelf.nodes["host2"]) == EMPTY
    assert_invariants(cloud)


def test_server_list_shows_the_shelved_states(cloud: Cloud) -> None:
    shelf = two_hosts_and_a_server(cloud)
    action(cloud, shelf.server, {"shelve": None})
    listed = cloud.compute.get("/servers/detail").json()["servers"]
    assert [(s["status"], s["OS-EXT-STS:vm_state"]) for s in listed] == [
        ("SHELVED_OFFLOADED", "shelved_offloaded")]
    by_status = cloud.compute.get("/servers", params={"status": "SHELVED_OFFLOADED"}).json()
    assert [s["id"] for s in by_status["servers"]] == [shelf.server]


def test_resource_tracker_and_heal_leave_offloaded_servers_alone(cloud: Cloud) -> None:
    """An offloaded server has no host: no agent heals it, and heal-allocations skips it."""
    shelf = two_hosts_and_a_server(cloud)
    action(cloud, shelf.server, {"shelve": None})
    for host in ("host1", "host2"):
        cloud.plane.agent(host).update_available_resource()
    client = PlacementClient.over_http(f"{cloud.live.url}/placement")
    try:
        report = heal.heal_allocations(cloud.live.db, client, heal.HealOptions())
    finally:
        client.close()
    assert shelf.server not in [uuid for uuid, _, _ in report.outcomes]
    assert held(cloud, shelf.server) == {}
    assert_invariants(cloud)


def test_a_volume_backed_server_is_offloaded_at_once_with_no_snapshot(cloud: Cloud) -> None:
    """Its root disk is a volume: nothing to snapshot, and Nova offloads it whatever
    shelved_offload_time says; unshelve boots it from the volume again."""
    shelf = two_hosts_and_a_server(cloud, offload_time=-1)
    bdm = [{"uuid": "5d4bd7ec-3f5b-4c1e-9d0a-1b2c3d4e5f60", "source_type": "volume",
            "destination_type": "volume", "boot_index": 0}]
    server_id = boot(cloud, "vol", shelf.flavor, "", block_device_mapping_v2=bdm)
    root_less = {"VCPU": 1, "MEMORY_MB": 512}
    assert held(cloud, server_id) == {shelf.nodes["host2"]: root_less}

    action(cloud, server_id, {"shelve": None})
    assert sts(server(cloud, server_id))[:3] == ("SHELVED_OFFLOADED", "shelved_offloaded", None)
    assert held(cloud, server_id) == {}
    assert images_named(cloud, "vol-shelved") == []
    action(cloud, server_id, {"unshelve": None})
    assert server(cloud, server_id)["status"] == "ACTIVE"
    assert list(held(cloud, server_id).values()) == [root_less]
    assert_invariants(cloud)


def test_unshelve_honours_the_server_group(cloud: Cloud) -> None:
    """Anti-affinity: with its peer on host2, the offloaded member can only go to host1."""
    shelf = two_hosts_and_a_server(cloud)
    resp = cloud.compute.post("/os-server-groups", json={"server_group": {
        "name": "apart", "policy": "anti-affinity"}})
    assert resp.status_code == 200, resp.text
    group = resp.json()["server_group"]["id"]
    first = boot(cloud, "a", shelf.flavor, shelf.image, hints={"group": group})
    second = boot(cloud, "b", shelf.flavor, shelf.image, hints={"group": group})
    hosts = {server(cloud, s)["OS-EXT-SRV-ATTR:host"]: s for s in (first, second)}
    assert sorted(hosts) == ["host1", "host2"]
    moving = hosts["host1"]
    action(cloud, moving, {"shelve": None})
    set_service(cloud, "host1", "disabled")

    action(cloud, moving, {"unshelve": None})  # host2 has its peer: no valid host
    assert server(cloud, moving)["status"] == "SHELVED_OFFLOADED"
    assert held(cloud, moving) == {}
    set_service(cloud, "host1", "enabled")
    action(cloud, moving, {"unshelve": None})
    assert server(cloud, moving)["OS-EXT-SRV-ATTR:host"] == "host1"
    assert held(cloud, moving) == {shelf.nodes["host1"]: SMALL}
    assert_invariants(cloud)
