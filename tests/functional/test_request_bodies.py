"""Request bodies: read only after the token is accepted, and never past the limits.

A live stowage (every service mounted) with small limits, so that over- and
just-under-limit bodies stay small::

    placement, network, image (JSON)   2,000 bytes   [api.max_request_body_sizes]
    compute (and identity)             3,000 bytes   [api] max_request_body_size
    image upload data                  5,000 bytes   [api] image_size_cap
    a whole body                       2 seconds     [api] body_timeout

An anonymous client announcing 200 MB gets its 401 after a few bytes, and the
connection is closed: a server that read the body first would never answer
before the socket's own timeout. Over-limit bodies are 413 in the error
format each upstream answers them in, and change nothing. With the built-in
identity service the token is looked up before the body is read as well.
"""

from __future__ import annotations

import dataclasses
import http.client
import json
import socket
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest

from stowage import config
from tests.conftest import BACKENDS
from tests.functional.conftest import LiveServer, api_client, serving
from tests.functional.identity import identity_settings, login, password_body, token_client
from tests.functional.networking import neutron_error
from tests.functional.test_bad_input import image_error, placement_error

LIMIT = 2000
COMPUTE_LIMIT = 3000
UPLOAD_CAP = 5000
ANNOUNCED = 200_000_000
# A safety net only: every answer below comes without waiting for it.
SOCKET_TIMEOUT = 20.0

SETTINGS = config.ApiSettings(
    max_request_body_size=COMPUTE_LIMIT, image_size_cap=UPLOAD_CAP, body_timeout=2,
    max_request_body_sizes={"placement": LIMIT, "network": LIMIT, "image": LIMIT})


@pytest.fixture(scope="module", params=BACKENDS)
def live(request: pytest.FixtureRequest) -> Iterator[LiveServer]:
    with serving(request.param, api=SETTINGS) as server:
        yield server


@pytest.fixture
def placement(live: LiveServer) -> Iterator[httpx.Client]:
    with api_client(f"{live.url}/placement",
                    headers={"openstack-api-version": "placement latest"}) as client:
        for rp in client.get("/resource_providers").json()["resource_providers"]:
            client.delete(f"/resource_providers/{rp['uuid']}")
        yield client


def exchange(url: str, head: str, body: bytes = b"") -> tuple[http.client.HTTPResponse, bytes]:
    """Send a request head and the start of a body on a raw socket; the answer and its
    body."""
    where = urlsplit(url)
    sock = socket.create_connection((where.hostname, where.port), timeout=SOCKET_TIMEOUT)
    sock.sendall(head.replace("\n", "\r\n").encode() + b"\r\n" + body)
    resp = http.client.HTTPResponse(sock)
    resp.begin()
    content = resp.read()
    sock.close()
    return resp, content


def post_head(path: str, length: int, token: str | None = None) -> str:
    auth = f"X-Auth-Token: {token}\n" if token else ""
    return (f"POST {path} HTTP/1.1\nHost: stowage\nContent-Type: application/json\n"
            f"Accept: application/json\n{auth}Content-Length: {length}\n")


def padded(data: object, size: int) -> bytes:
    """`data` as JSON, padded with trailing whitespace to exactly `size` bytes."""
    raw = json.dumps(data).encode()
    assert len(raw) <= size
    return raw + b" " * (size - len(raw))


@pytest.mark.parametrize("path", ["/placement/resource_providers", "/compute/v2.1/flavors",
                                  "/network/v2.0/networks", "/image/v2/images"])
def test_an_anonymous_body_is_not_read(live: LiveServer, path: str) -> None:
    resp, _ = exchange(live.url, post_head(path, ANNOUNCED), b'{"name": ')
    assert resp.status == 401
    assert resp.getheader("connection") == "close"


def test_an_announced_body_over_the_limit_is_413_unread(live: LiveServer,
                                                        placement: httpx.Client) -> None:
    head = post_head("/placement/resource_providers", ANNOUNCED, "admin")
    resp, _ = exchange(live.url, head, b'{"name": ')
    assert resp.status == 413
    assert resp.getheader("connection") == "close"
    assert placement.get("/resource_providers").json()["resource_providers"] == []


def test_placement_body_over_the_limit_is_413(placement: httpx.Client) -> None:
    resp = placement.post("/resource_providers", content=padded({"name": "cn1"}, LIMIT + 1),
                          headers={"content-type": "application/json"})
    assert f"larger than {LIMIT} bytes" in placement_error(resp, 413)
    assert resp.headers["x-openstack-request-id"].startswith("req-")
    assert placement.get("/resource_providers").json()["resource_providers"] == []


def test_placement_body_of_exactly_the_limit_is_taken(placement: httpx.Client) -> None:
    resp = placement.post("/resource_providers", content=padded({"name": "cn1"}, LIMIT),
                          headers={"content-type": "application/json"})
    assert resp.status_code == 200, resp.text
    names = [p["name"] for p in placement.get("/resource_providers").json()[
        "resource_providers"]]
    assert names == ["cn1"]


def test_a_chunked_body_is_counted_as_it_comes(placement: httpx.Client) -> None:
    def chunks(size: int) -> Iterator[bytes]:
        body = padded({"name": "cn1"}, size)
        yield from (body[i:i + 500] for i in range(0, len(body), 500))

    resp = placement.post("/resource_providers", content=chunks(LIMIT + 1),
                          headers={"content-type": "application/json"})
    placement_error(resp, 413)
    assert placement.get("/resource_providers").json()["resource_providers"] == []
    resp = placement.post("/resource_providers", content=chunks(LIMIT),
                          headers={"content-type": "application/json"})
    assert resp.status_code == 200, resp.text


def test_compute_413_is_the_sizelimit_filters_body(live: LiveServer) -> None:
    # Nova's api-paste runs oslo.middleware's sizelimit: webob's body, not a Nova fault.
    with api_client(f"{live.url}/compute/v2.1") as compute:
        flavor = {"flavor": {"name": "f1", "ram": 512, "vcpus": 1, "disk": 1}}
        resp = compute.post("/flavors", content=padded(flavor, COMPUTE_LIMIT + 1),
                            headers={"content-type": "application/json"})
        assert resp.status_code == 413, resp.text
        assert resp.json() == {"code": "413 Request Entity Too Large",
                               "title": "Request Entity Too Large",
                               "message": f"Request is too large: the body is larger than "
                                          f"{COMPUTE_LIMIT} bytes."}
        assert "f1" not in [f["name"] for f in compute.get("/flavors").json()["flavors"]]
        resp = compute.post("/flavors", content=padded(flavor, COMPUTE_LIMIT),
                            headers={"content-type": "application/json"})
        assert resp.status_code == 200, resp.text
        compute.delete(f"/flavors/{resp.json()['flavor']['id']}")


def test_network_413_is_a_neutron_error(live: LiveServer) -> None:
    with api_client(f"{live.url}/network") as network:
        resp = network.post("/v2.0/networks",
                            content=padded({"network": {"name": "big"}}, LIMIT + 1),
                            headers={"content-type": "application/json"})
        neutron_error(resp, 413, "HTTPRequestEntityTooLarge")
        assert network.get("/v2.0/networks?name=big").json()["networks"] == []


def test_image_json_is_bounded_and_upload_data_by_the_size_cap(live: LiveServer) -> None:
    octets = {"content-type": "application/octet-stream"}
    with api_client(f"{live.url}/image") as image:
        resp = image.post("/v2/images", content=padded({"name": "big"}, LIMIT + 1),
                          headers={"content-type": "application/json"})
        assert "larger than 2000 bytes" in image_error(resp, 413)
        made = image.post("/v2/images", json={"name": "disk", "disk_format": "raw",
                                              "container_format": "bare"})
        assert made.status_code == 201, made.text
        path = f"/v2/images/{made.json()['id']}"
        resp = image.put(f"{path}/file", content=b"*" * (UPLOAD_CAP + 1), headers=octets)
        assert f"larger than {UPLOAD_CAP} bytes" in image_error(resp, 413)
        assert image.get(path).json()["size"] is None
        # Larger than a JSON body may be, within the cap: counted, then recorded.
        assert image.put(f"{path}/file", content=b"*" * UPLOAD_CAP,
                         headers=octets).status_code == 204
        assert image.get(path).json()["size"] == UPLOAD_CAP
        image.delete(path)


def test_a_stalled_body_is_408_and_the_connection_closed(live: LiveServer,
                                                         placement: httpx.Client) -> None:
    resp, content = exchange(live.url, post_head("/placement/resource_providers", 100, "admin"),
                    b'{"name": ')
    assert resp.status == 408
    assert resp.getheader("connection") == "close"
    (error,) = json.loads(content)["errors"]
    assert error["status"] == 408 and "within 2 seconds" in error["detail"]
    assert placement.get("/resource_providers").json()["resource_providers"] == []


@pytest.fixture(scope="module", params=BACKENDS)
def identity_live(request: pytest.FixtureRequest) -> Iterator[LiveServer]:
    api = dataclasses.replace(SETTINGS, auth_strategy="builtin-identity")
    with serving(request.param, api=api, identity=identity_settings()) as server:
        yield server


@pytest.mark.parametrize("token", [None, "not-a-token"])
def test_with_tokens_an_unaccepted_body_is_not_read(identity_live: LiveServer,
                                                    token: str | None) -> None:
    resp, _ = exchange(identity_live.url,
                       post_head("/placement/resource_providers", ANNOUNCED, token), b"{")
    assert resp.status == 401
    assert resp.getheader("www-authenticate", "").startswith("Keystone uri=")
    assert resp.getheader("connection") == "close"


def test_identity_bodies_are_bounded_too(identity_live: LiveServer) -> None:
    # Keystone runs oslo.middleware's sizelimit as well: webob's body.
    body = password_body("alice", "alpha")
    resp = httpx.post(f"{identity_live.url}/identity/v3/auth/tokens",
                      content=padded(body, COMPUTE_LIMIT + 1),
                      headers={"content-type": "application/json"}, timeout=30)
    assert resp.status_code == 413, resp.text
    assert resp.json()["code"] == "413 Request Entity Too Large"
    token = login(identity_live, "alice", "alpha")
    with token_client(identity_live, token, "/placement") as placement:
        resp = placement.post("/resource_providers", json={"name": "cn1"})
        assert resp.status_code == 403, resp.text  # read, judged: a member may not


def test_a_body_to_no_service_is_not_read_either(live: LiveServer) -> None:
    resp, _ = exchange(live.url, post_head("/nowhere", ANNOUNCED, "admin"), b"{")
    assert resp.status == 404
    assert resp.getheader("connection") == "close"
