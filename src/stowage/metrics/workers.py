"""Metrics across processes: the directory `serve --workers N` shares, and the listener of
`stowage conductor|scheduler|agent`.

`serve --workers N`: each worker counts in its own process, and a scrape
reaches one of them. prometheus-client's multiprocess mode makes every
worker write its counters to files of one directory, which the answering
worker sums (`endpoint.exposition`). The directory is made per run, before
the workers start (the mode is chosen when a worker first imports the
client), and removed when the server stops, so that a restart never adds
the previous run's counts to the new one.

The control plane's own processes serve no HTTP API; with `[metrics]
worker_bind` each serves its counters (operations, claims, RPC calls) on a
small listener of its own, to the networks of `allow_unauthenticated_from`
only: these processes validate no tokens.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import generate_latest
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4

from stowage.config import MetricsSettings
from stowage.metrics import process

__all__ = ["MULTIPROC_ENV", "shared_directory", "serve_worker_metrics"]

LOG = logging.getLogger(__name__)
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"


@contextmanager
def shared_directory() -> Iterator[str]:
    """A fresh directory named in the environment the workers inherit, removed after."""
    path = tempfile.mkdtemp(prefix="stowage-metrics-")
    previous = os.environ.get(MULTIPROC_ENV)
    os.environ[MULTIPROC_ENV] = path
    try:
        yield path
    finally:
        if previous is None:
            os.environ.pop(MULTIPROC_ENV, None)
        else:
            os.environ[MULTIPROC_ENV] = previous
        shutil.rmtree(path, ignore_errors=True)


def serve_worker_metrics(settings: MetricsSettings) -> ThreadingHTTPServer | None:
    """Serve this process's counters at `worker_bind` (in a daemon thread), or nothing."""
    if not settings.worker_bind:
        return None
    host, _, port = settings.worker_bind.rpartition(":")
    nets = [ipaddress.ip_network(n, strict=False) for n in settings.allow_unauthenticated_from]

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            allowed = any(ipaddress.ip_address(self.client_address[0]) in net for net in nets)
            if self.path.split("?")[0] not in ("/metrics", "/metrics/"):
                self._answer(404, b"not found\n", "text/plain")
            elif not allowed:
                self._answer(403, b"not in [metrics] allow_unauthenticated_from\n",
                             "text/plain")
            else:
                self._answer(200, generate_latest(process.REGISTRY), CONTENT_TYPE_PLAIN_0_0_4)

        def _answer(self, status: int, body: bytes, ctype: str) -> None:
            self.send_response(status)
            self.send_header("content-type", ctype)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            LOG.debug("metrics listener: " + format, *args)

    server = ThreadingHTTPServer((host or "127.0.0.1", int(port)), Handler)
    threading.Thread(target=server.serve_forever, name="metrics-listener", daemon=True).start()
    LOG.info("metrics: serving /metrics on %s", settings.worker_bind)
    return server
