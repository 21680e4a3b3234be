"""`stowage serve --workers N` (the shared socket, the worker app factory, when compute
allows several workers) and the control plane's worker commands."""

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
        "bind": "127.0.0.1:0", "services": ["placement"], "at_root": True,
        "transport_url": ""}))
    assert callable(cli.asgi_from_env())


def test_workers_flag_defaults_to_one() -> None:
    args = cli._parser().parse_args(["serve"])
    assert args.workers == 1


def _refusal(argv: list[str]) -> str:
    with pytest.raises(SystemExit) as info:
        cli.main(argv)
    return str(info.value)


def test_workers_with_compute_in_process_are_refused_with_what_to_do(tmp_path: Path) -> None:
    message = _refusal(["serve", "--workers", "2", "--database", f"sqlite:///{tmp_path}/a.db"])
    assert "needs a broker" in message and "stowage conductor" in message


def test_workers_with_compute_and_simulated_hosts_are_refused_even_with_a_broker(
        tmp_path: Path) -> None:
    message = _refusal(["serve", "--workers", "2", "--sim-hosts", "2",
                        "--transport-url", "rabbit://guest:guest@127.0.0.1:5672/",
                        "--database", f"sqlite:///{tmp_path}/a.db"])
    assert "stowage agent" in message


@pytest.mark.parametrize("command", ["conductor", "scheduler", "agent"])
def test_worker_commands_need_a_broker(tmp_path: Path, command: str) -> None:
    message = _refusal([command, "--database", f"sqlite:///{tmp_path}/a.db"])
    assert "transport_url" in message


def test_agent_takes_hosts_by_name_and_the_flags_serve_takes() -> None:
    args = cli._parser().parse_args(["agent", "--host", "h1", "--host", "h2", "--database",
                                     "sqlite://", "--transport-url", "rabbit://h/", "--config",
                                     "x.toml"])
    assert (args.hosts, args.database, args.transport_url, args.sub_config) == (
        ["h1", "h2"], "sqlite://", "rabbit://h/", "x.toml")
