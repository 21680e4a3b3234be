"""Upstream Placement 16.0.0 for the adoption tests: its side venv, a server on a
database, `placement-manage db sync`, and a reader of every answer.

The venv is bench/upstream_venv.py's `.venv-upstream` (created on first use,
under a file lock); the server is bench/servers.py's gunicorn launch.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from bench import servers, upstream_venv

from tests.functional.adopt_world import normalised

__all__ = ["venv", "upstream_server", "db_sync", "answers", "HEADERS"]

HEADERS = {"x-auth-token": "admin", "accept": "application/json"}


def venv() -> Path:
    return upstream_venv.ensure()


@contextmanager
def upstream_server(db_url: str) -> Iterator[httpx.Client]:
    """Stock Placement 16.0.0 (gunicorn, one worker, noauth2) on `db_url`."""
    with tempfile.TemporaryDirectory() as tmp, \
            servers.serve("upstream", db_url, 1, Path(tmp), venv()) as server, \
            httpx.Client(base_url=server.url, headers=HEADERS, timeout=60) as client:
        yield client


def db_sync(db_url: str) -> None:
    """`placement-manage db sync` on `db_url`, as an operator runs it."""
    url = db_url.replace("postgresql+psycopg://", "postgresql+psycopg2://", 1)
    with tempfile.TemporaryDirectory() as tmp:
        conf = Path(tmp) / "placement.conf"
        conf.write_text(f"[placement_database]\nconnection = {url}\n")
        env = dict(os.environ)
        env.pop("PYTHONPATH", None)
        subprocess.run([str(venv() / "bin" / "placement-manage"), "--config-file", str(conf),
                        "db", "sync"], check=True, env=env, capture_output=True)


def answers(client: httpx.Client, reads: list[tuple[str, str]]) -> dict[str, Any]:
    """Status and normalised body of each read, keyed `version path`."""
    found = {}
    for version, path in reads:
        resp = client.get(path, headers={"openstack-api-version": f"placement {version}"})
        body = resp.json() if resp.content else None
        if resp.status_code >= 400 and isinstance(body, dict):
            body = {"errors": [e.get("code") for e in body.get("errors", [])]}
        found[f"{version} {path}"] = (resp.status_code, normalised(path, body))
    return found
