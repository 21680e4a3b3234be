"""The root of a `stowage serve` that mounts every service: what is served, and where.

    GET http://HOST/          -> the mounted services, each with its endpoint,
                                 its version discovery document and its API reference
    GET http://HOST/nothing   -> 404 naming what is mounted
    stowage --version         -> the package version
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import httpx
import pytest

import stowage
from tests.functional.conftest import LiveServer


@pytest.fixture
def http(live_stowage: LiveServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=live_stowage.url, timeout=30) as client:
        yield client


def test_root_lists_every_service_with_its_links(live_stowage: LiveServer,
                                                 http: httpx.Client) -> None:
    resp = http.get("/", headers={"accept": "application/json"})
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"] == "application/json"
    body = resp.json()
    base = live_stowage.url
    services = {s["type"]: s for s in body["services"]}
    assert set(services) == {"placement", "compute", "image", "network", "identity"}
    compute = services["compute"]
    assert compute["name"] == "nova"
    assert compute["endpoint"] == f"{base}/compute/v2.1"
    links = {link["rel"]: link["href"] for link in compute["links"]}
    assert links == {"self": f"{base}/compute/",
                     "describedby": "https://docs.openstack.org/api-ref/compute/"}
    assert services["placement"]["endpoint"] == f"{base}/placement"
    assert services["identity"]["name"] == "keystone"
    assert body["links"] == [{"rel": "self", "href": f"{base}/"}]
    # Every `self` link is the service's own version discovery document.
    for service in body["services"]:
        self_href = next(x["href"] for x in service["links"] if x["rel"] == "self")
        found = http.get(self_href.removeprefix(base), headers={"accept": "application/json"})
        assert found.status_code in (200, 300), (self_href, found.text)
        assert "version" in found.text


def test_root_links_follow_the_host_the_client_used(http: httpx.Client) -> None:
    body = http.get("/", headers={"host": "cloud.example:8780",
                                  "x-forwarded-proto": "https"}).json()
    placement = next(s for s in body["services"] if s["type"] == "placement")
    assert placement["endpoint"] == "https://cloud.example:8780/placement"


def test_a_browser_gets_the_dashboard_api_clients_the_json(http: httpx.Client) -> None:
    browser = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
    page = http.get("/", headers={"accept": browser})
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    for accept in ("application/json", "*/*", "application/*"):
        assert "services" in http.get("/", headers={"accept": accept}).json(), accept
    refused = http.get("/", headers={"accept": "image/png"})
    assert refused.status_code == 406
    assert refused.json()["error"]["message"] == \
        "Only application/json or text/html is provided at /."


def test_unknown_paths_are_a_helpful_404(live_stowage: LiveServer, http: httpx.Client) -> None:
    resp = http.get("/nova/v2.1/servers")
    assert resp.status_code == 404
    error = resp.json()["error"]
    assert (error["code"], error["title"]) == (404, "Not Found")
    assert error["message"].startswith("Nothing is served at /nova/v2.1/servers. This "
                                       "stowage serves ")
    for prefix in ("/placement", "/compute", "/image", "/network", "/identity"):
        assert prefix in error["message"]
    assert f"GET {live_stowage.url}/ lists them" in error["message"]


def test_only_get_and_head_on_the_root(http: httpx.Client) -> None:
    resp = http.post("/", json={})
    assert resp.status_code == 405 and resp.headers["allow"] == "GET, HEAD"
    assert http.head("/").status_code == 200


def test_version_flag_prints_the_package_version() -> None:
    out = subprocess.run([sys.executable, "-m", "stowage", "--version"], check=True,
                         capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == f"stowage {stowage.__version__}"
