"""Integers of more than 4,300 digits are a 400 in each service's format, never a 500.

Python 3.11 refuses `int()` of a decimal string longer than 4,300 digits
(ValueError, CVE-2020-10735); a query value, an `If-Match: revision_number=`
header or a body string holding one must be refused like any other bad
number, and change nothing.
"""

from __future__ import annotations

import httpx
import pytest

from tests.functional.networking import neutron_error
from tests.functional.test_bad_input import compute_error, image_error, placement_error

BIG = "9" * 5000


@pytest.mark.parametrize("path", [
    "/resource_providers", "/allocation_candidates?resources=VCPU:1&limit=",
    "/resource_providers?resources=VCPU:", "/usages?project_id=p&consumer_type=all&x=",
])
def test_placement_big_numbers_in_queries_are_400(placement: httpx.Client, path: str) -> None:
    query = path if "=" in path else path + "?limit="
    placement_error(placement.get(query + BIG), 400)


@pytest.mark.parametrize("path", [
    "/servers", "/servers/detail", "/flavors", "/flavors/detail", "/os-migrations",
    "/os-hypervisors/detail", "/os-keypairs", "/os-server-groups",
    "/os-simple-tenant-usage",
])
def test_compute_limit_of_5000_digits_is_400(compute: httpx.Client, path: str) -> None:
    compute_error(compute.get(f"{path}?limit={BIG}"), 400, "badRequest")


def test_compute_other_big_numbers_are_400(compute: httpx.Client) -> None:
    for query in (f"/flavors?minRam={BIG}", f"/flavors?minDisk={BIG}",
                  f"/servers?changes-since=2020-01-01&limit={BIG}", f"/os-keypairs?limit={BIG}",
                  f"/os-hypervisors?limit={BIG}", f"/os-migrations?limit={BIG}&marker=x"):
        compute_error(compute.get(query), 400, "badRequest")
    resp = compute.post("/flavors", json={"flavor": {"name": "f", "ram": BIG, "vcpus": 1,
                                                     "disk": 1}})
    compute_error(resp, 400, "badRequest")
    assert compute.get("/flavors").json()["flavors"] == []


def test_image_limit_of_5000_digits_is_400(image: httpx.Client) -> None:
    image_error(image.get(f"/v2/images?limit={BIG}"), 400)


@pytest.mark.parametrize("collection", [
    "networks", "subnets", "ports", "security-groups", "security-group-rules",
    "qos/policies",
])
def test_network_limit_of_5000_digits_is_400(network: httpx.Client, collection: str) -> None:
    neutron_error(network.get(f"/v2.0/{collection}?limit={BIG}"), 400, "HTTPBadRequest")


def test_network_if_match_of_5000_digits_is_400(network: httpx.Client) -> None:
    made = network.post("/v2.0/networks", json={"network": {"name": "n1"}})
    assert made.status_code == 201, made.text
    net = made.json()["network"]
    resp = network.put(f"/v2.0/networks/{net['id']}", json={"network": {"name": "n2"}},
                       headers={"if-match": f"revision_number={BIG}"})
    neutron_error(resp, 400, "HTTPBadRequest")
    resp = network.delete(f"/v2.0/networks/{net['id']}",
                          headers={"if-match": f"revision_number={BIG}"})
    neutron_error(resp, 400, "HTTPBadRequest")
    shown = network.get(f"/v2.0/networks/{net['id']}").json()["network"]
    assert shown["name"] == "n1"
    assert shown["revision_number"] == net["revision_number"]
