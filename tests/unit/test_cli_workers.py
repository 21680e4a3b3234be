"""`stowage serve --workers N`: the shared socket and the worker app factory."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from stowage import cli


def test_listen_socket_is_tcp_so_accepted_connections_get_nodelay() -> None:
    # proto 0 (uvicorn's own bind) leaves Nagle on: ~40 ms per keep-alive response.
    sock = cli._listen("127.0.0.1", 0)
    try:
        assert sock.proto == socket.IPPROTO_TCP
        assert sock.get_inheritable()
    finally:
        sock.close()


def test_worker_factory_rebuilds_the_parents_settings(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cli.WORKER_ARGS_ENV, json.dumps({
        "config": None, "database": f"sqlite:///{tmp_path / 'w.db'}",
        "bind": "127.0.0.1:0", "services": ["placement"], "at_root": True}))
    assert callable(cli.asgi_from_env())


def test_workers_flag_defaults_to_one() -> None:
    args = cli._parser().parse_args(["serve"])
    assert args.workers == 1
