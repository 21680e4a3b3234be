"""The request log and the startup banner, as an operator reads them.

    [req-...] 127.0.0.1 "GET /placement/resource_providers?name=a" status: 200 len: 26
        microversion: 1.39 time: 0.003121            (Nova's and Placement's shape)

    stowage: serving on http://127.0.0.1:PORT with 1 worker(s):
      placement  http://127.0.0.1:PORT/placement
      ...
      identity   http://127.0.0.1:PORT/identity  (version discovery only: ...)
"""

from __future__ import annotations

import logging
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.functional.conftest import LiveServer, free_port

LOGGER = "stowage.web.requestlog"


def _line(caplog: pytest.LogCaptureFixture, request_id: str) -> str:
    found = [r for r in caplog.records if r.name == LOGGER and request_id in r.getMessage()]
    assert len(found) == 1, [r.getMessage() for r in caplog.records]
    assert found[0].levelno == logging.INFO
    return found[0].getMessage()


def test_each_request_is_logged_with_its_request_id(live_stowage: LiveServer,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    headers = {"x-auth-token": "admin", "accept": "application/json"}
    with caplog.at_level(logging.INFO, logger=LOGGER), httpx.Client(
            base_url=live_stowage.url, headers=headers, timeout=30) as http:
        placement = http.get("/placement/resource_providers?name=a",
                             headers={"openstack-api-version": "placement 1.39"})
        compute = http.get("/compute/v2.1/servers/nothing-here")
        image = http.get("/image/v2/images")
        root = http.get("/")
    rid = placement.headers["x-openstack-request-id"]
    assert re.fullmatch(
        rf'\[{rid}\] 127\.0\.0\.1 "GET /placement/resource_providers\?name=a" status: 200 '
        rf"len: {len(placement.content)} microversion: 1\.39 time: \d+\.\d{{6}}",
        _line(caplog, rid))
    assert compute.status_code == 404
    assert re.search(r'"GET /compute/v2\.1/servers/nothing-here" status: 404 len: \d+ '
                     r"microversion: 2\.1 time:",
                     _line(caplog, compute.headers["x-openstack-request-id"]))
    # An API without microversions says "-", as Placement's log does.
    assert '"GET /image/v2/images" status: 200' in _line(
        caplog, image.headers["x-openstack-request-id"])
    assert "microversion: - time:" in _line(caplog, image.headers["x-openstack-request-id"])
    assert '"GET /" status: 200' in _line(caplog, root.headers["x-openstack-request-id"])


def test_serve_announces_every_service_and_logs_requests_at_the_default_level(
        tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "serve.log"
    argv = [sys.executable, "-m", "stowage", "serve", "--bind", f"127.0.0.1:{port}",
            "--database", f"sqlite:///{tmp_path / 'stowage.db'}"]
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
    try:
        resp = _get_when_up(proc, f"http://127.0.0.1:{port}/placement/", log)
        rid = resp.headers["x-openstack-request-id"]
        text = _wait_for(log, rid)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    base = f"http://127.0.0.1:{port}"
    assert f"stowage: serving on {base} with 1 worker(s):" in text
    for kind, path in (("placement", "/placement"), ("compute", "/compute/v2.1"),
                       ("image", "/image"), ("network", "/network"),
                       ("identity", "/identity")):
        assert re.search(rf"^  {kind} +{re.escape(base + path)}", text, re.MULTILINE), text
    assert f'INFO stowage.web.requestlog: [{rid}] 127.0.0.1 "GET /placement/" status: 200' \
        in text


def _get_when_up(proc: subprocess.Popen[bytes], url: str, log: Path) -> httpx.Response:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text()
        try:
            return httpx.get(url, timeout=5)
        except httpx.TransportError:
            time.sleep(0.2)
    raise AssertionError("stowage serve did not answer:\n" + log.read_text())


def _wait_for(log: Path, needle: str) -> str:
    """The log once it holds `needle` (a line is written after the response is sent)."""
    deadline = time.monotonic() + 30
    while needle not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.1)
    return log.read_text()
