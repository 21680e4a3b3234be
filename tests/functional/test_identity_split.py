"""Builtin identity across processes: compute reaches a Placement and a Network service
served elsewhere (`[compute] placement_url` / `network_url`) with its own service token::

    server A  /identity /placement /network /image      server B  compute at /
         ^             ^ service token (shared database) |
         +---------------------------------------------- +

The simulated host's agent reports its inventory to A, and a server booted on
B claims its allocation in A: both only work if A accepts B's service token.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from stowage import config
from stowage.compute.hosts import HostConfig
from tests.conftest import BACKENDS
from tests.dbs import migrated_database
from tests.functional.conftest import LiveServer, start_server
from tests.functional.identity import identity_settings, login, token_client


@pytest.fixture(scope="module", params=BACKENDS)
def split(request: pytest.FixtureRequest) -> Iterator[tuple[LiveServer, LiveServer]]:
    common = {"api": config.ApiSettings(auth_strategy="builtin-identity"),
              "identity": identity_settings()}
    with migrated_database(request.param) as url:
        a = start_server(config.Settings(database=url, services=(
            "placement", "network", "image"), **common))
        b = start_server(config.Settings(database=url, services=("compute",), compute=(
            config.ComputeSettings(placement_url=f"{a.url}/placement",
                                   network_url=f"{a.url}/network")), **common))
        try:
            yield a, b
        finally:
            b.stop()
            a.stop()
            b.db.dispose()
            a.db.dispose()


def test_compute_elsewhere_claims_in_placement_with_a_service_token(
        split: tuple[LiveServer, LiveServer]) -> None:
    a, b = split
    assert b.plane is not None
    admin = login(a, "admin", "admin")
    b.plane.add_host(HostConfig(name="splithost"))
    try:
        with token_client(a, admin, "/placement",
                          {"openstack-api-version": "placement 1.39"}) as placement, \
                token_client(b, admin, "/v2.1",
                             {"openstack-api-version": "compute 2.90"}) as compute, \
                token_client(a, admin, "/image") as image:
            providers = placement.get("/resource_providers").json()["resource_providers"]
            assert [p["name"] for p in providers] == ["splithost"]
            flavor = compute.post("/flavors", json={"flavor": {"name": "split", "vcpus": 1,
                                                               "ram": 64, "disk": 1}})
            assert flavor.status_code == 200, flavor.text
            made = image.post("/v2/images", json={"name": "img", "disk_format": "raw",
                                                  "container_format": "bare"})
            assert image.put(f"/v2/images/{made.json()['id']}/file", content=b"x", headers={
                "content-type": "application/octet-stream"}).status_code in (201, 204)
            booted = compute.post("/servers", json={"server": {
                "name": "s", "flavorRef": flavor.json()["flavor"]["id"],
                "imageRef": made.json()["id"], "networks": "none"}})
            assert booted.status_code == 202, booted.text
            assert b.plane.drain(60)
            server_id = booted.json()["server"]["id"]
            assert compute.get(f"/servers/{server_id}").json()["server"]["status"] == "ACTIVE"
            held = placement.get(f"/allocations/{server_id}").json()["allocations"]
            assert held[providers[0]["uuid"]]["resources"] == {"VCPU": 1, "MEMORY_MB": 64,
                                                               "DISK_GB": 1}
        # Without the service token, A refuses B's old noauth2 habit.
        plain = httpx.get(f"{a.url}/placement/resource_providers", timeout=30,
                          headers={"x-auth-token": "admin"})
        assert plain.status_code == 401
    finally:
        b.plane.stop_host("splithost")
