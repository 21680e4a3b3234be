"""unshelve to a named host, and unpinning the zone: Nova's 2.91 body.

    host1 (zone az1)      host2 (zone az2)
      vm, booted into az1, shelved and offloaded

Served through stowage's real version list, whose maximum is 2.92.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from stowage.compute.hosts import HostConfig
from tests.conftest import BACKENDS
from tests.functional.conftest import MEMBER, Cloud, api_client, serving
from tests.functional.servers import action, assert_invariants, boot, flavor, held, image, server
from tests.functional.shelving import SMALL, post_action


@pytest.fixture(params=BACKENDS)
def cloud_2_91(request: pytest.FixtureRequest) -> Iterator[Cloud]:
    with serving(request.param) as live:
        assert live.plane is not None
        for name, zone in (("host1", "az1"), ("host2", "az2")):
            live.plane.add_host(HostConfig(name=name, availability_zone=zone))
        with api_client(f"{live.url}/compute/v2.1",
                        headers={"openstack-api-version": "compute 2.91"}) as compute, \
                api_client(f"{live.url}/placement",
                           headers={"openstack-api-version": "placement latest"}) as placement:
            yield Cloud(compute, placement, live.plane, live)


def _offloaded_in_az1(cloud: Cloud) -> str:
    server_id = boot(cloud, "vm", flavor(cloud, "small", 1, 512, 5),
                     image(cloud, visibility="public"), availability_zone="az1")
    assert server(cloud, server_id)["OS-EXT-SRV-ATTR:host"] == "host1"
    action(cloud, server_id, {"shelve": None})
    assert server(cloud, server_id)["status"] == "SHELVED_OFFLOADED"
    return server_id


def test_unshelve_to_a_host_checks_the_host_and_its_zone(cloud_2_91: Cloud) -> None:
    cloud = cloud_2_91
    server_id = _offloaded_in_az1(cloud)

    resp = post_action(cloud.compute, server_id, {"unshelve": {"host": "nowhere"}})
    assert resp.status_code == 400
    assert resp.json()["badRequest"]["message"] == "Compute host nowhere could not be found."
    resp = post_action(cloud.compute, server_id, {"unshelve": {"host": "host2"}})
    assert resp.status_code == 409
    assert resp.json()["conflictingRequest"]["message"] == (
        'Host "host2" is not in the availability zone "az1".')
    for body in ({"unshelve": {"host": "host2", "other": 1}}, {"unshelve": "host2"},
                 {"unshelve": {"host": None}}):
        assert post_action(cloud.compute, server_id, body).status_code == 400, body
    assert server(cloud, server_id)["status"] == "SHELVED_OFFLOADED"
    assert held(cloud, server_id) == {}

    # Unpin the zone and name the host in one request: host2 it is.
    action(cloud, server_id, {"unshelve": {"availability_zone": None, "host": "host2"}})
    view = server(cloud, server_id)
    assert (view["status"], view["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", "host2")
    assert view["OS-EXT-AZ:availability_zone"] == "az2"
    node = cloud.placement.get("/resource_providers", params={"name": "host2"}).json()
    assert held(cloud, server_id) == {node["resource_providers"][0]["uuid"]: SMALL}
    assert_invariants(cloud)

    # No longer pinned: a later offloaded unshelve may go to any zone; the host is not kept.
    action(cloud, server_id, {"shelve": None})
    action(cloud, server_id, {"unshelve": {"host": "host1"}})
    assert server(cloud, server_id)["OS-EXT-SRV-ATTR:host"] == "host1"
    assert_invariants(cloud)


def test_only_admins_unshelve_to_a_host(cloud_2_91: Cloud) -> None:
    cloud = cloud_2_91
    member = cloud.client("demo:p1", version="2.91", roles=MEMBER)
    server_id = boot(cloud, "vm", flavor(cloud, "small", 1, 512, 5),
                     image(cloud, visibility="public"), client=member)
    action(cloud, server_id, {"shelve": None}, client=member)

    resp = post_action(member, server_id, {"unshelve": {"host": "host2"}})
    assert resp.status_code == 403
    assert "os_compute_api:os-shelve:unshelve_to_host" in resp.json()["forbidden"]["message"]
    action(cloud, server_id, {"unshelve": {"availability_zone": "az2"}}, client=member)
    assert server(cloud, server_id)["OS-EXT-SRV-ATTR:host"] == "host2"
    member.close()
    assert_invariants(cloud)
