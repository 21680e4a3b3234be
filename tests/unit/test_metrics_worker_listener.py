"""`stowage conductor|scheduler|agent` serve their counters at `[metrics] worker_bind`, to the
allowed networks only (these processes validate no tokens)."""

from __future__ import annotations

import socket

import httpx

from stowage.config import MetricsSettings
from stowage.metrics import process
from stowage.metrics.workers import serve_worker_metrics


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_no_bind_no_listener() -> None:
    assert serve_worker_metrics(MetricsSettings()) is None


def test_the_listener_answers_allowed_networks_only() -> None:
    process.claim("conflict")
    port = _port()
    allowed = serve_worker_metrics(MetricsSettings(
        allow_unauthenticated_from=("127.0.0.0/8",), worker_bind=f"127.0.0.1:{port}"))
    assert allowed is not None
    other = _port()
    refused = serve_worker_metrics(MetricsSettings(
        allow_unauthenticated_from=("10.0.0.0/8",), worker_bind=f"127.0.0.1:{other}"))
    assert refused is not None
    try:
        resp = httpx.get(f"http://127.0.0.1:{port}/metrics")
        assert resp.status_code == 200
        assert 'stowage_scheduler_claims_total{result="conflict"}' in resp.text
        assert httpx.get(f"http://127.0.0.1:{port}/other").status_code == 404
        assert httpx.get(f"http://127.0.0.1:{other}/metrics").status_code == 403
    finally:
        for server in (allowed, refused):
            server.shutdown()
            server.server_close()
