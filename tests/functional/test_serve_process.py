"""`stowage serve` as an operator runs it: a process on a port, with a settings file.

Keep-alive: pooled clients (Nova's report client, through keystoneauth and
requests) keep an idle connection and send their next request on it. A server
that closes idle connections sooner than that makes the client's request fail
with `RemoteDisconnected`; `[api] keepalive_timeout` (75 s by default) says how
long the server keeps them.

Authentication: a settings file that asks for a strategy stowage does not
have must stop the service from starting, not leave noauth2 in force.
"""

from __future__ import annotations

import http.client
import select
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.functional.conftest import free_port

START_TIMEOUT = 60.0


def _serve_argv(tmp_path: Path, port: int, config: str | None, *extra: str) -> list[str]:
    argv = [sys.executable, "-m", "stowage"]
    if config is not None:
        path = tmp_path / "stowage.toml"
        path.write_text(config)
        argv += ["--config", str(path)]
    return argv + ["serve", "--services", "placement", "--bind", f"127.0.0.1:{port}",
                   "--database", f"sqlite:///{tmp_path / 'stowage.db'}", *extra]


def _wait_until_answering(proc: subprocess.Popen[bytes], port: int, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text()
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"stowage serve did not listen in {START_TIMEOUT} s:\n"
                         + log.read_text())


@contextmanager
def serving(tmp_path: Path, config: str | None = None, *extra: str) -> Iterator[int]:
    """`stowage serve --services placement` in a subprocess; yields its port."""
    port = free_port()
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(_serve_argv(tmp_path, port, config, *extra),
                                stdin=subprocess.DEVNULL, stdout=out, stderr=out)
    try:
        _wait_until_answering(proc, port, log)
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=20)


def get_root(conn: http.client.HTTPConnection) -> None:
    conn.request("GET", "/", headers={"accept": "application/json"})
    resp = conn.getresponse()
    resp.read()
    assert resp.status == 200
    assert resp.getheader("connection", "").lower() != "close"


def closed_by_server(sock: socket.socket) -> bool:
    """True when the server has closed its end: the socket reads as end-of-file."""
    readable, _, _ = select.select([sock], [], [], 0)
    return bool(readable) and sock.recv(1, socket.MSG_PEEK) == b""


def test_an_idle_connection_outlives_uvicorns_default_five_seconds(tmp_path: Path) -> None:
    with serving(tmp_path) as port:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            get_root(conn)
            sock = conn.sock
            assert sock is not None
            time.sleep(6.5)  # idle, as a pooled client between two periodic tasks
            assert not closed_by_server(sock)
            get_root(conn)
            assert conn.sock is sock  # the same connection answered
        finally:
            conn.close()


def test_keepalive_timeout_is_a_setting_in_every_worker(tmp_path: Path) -> None:
    # --workers 2: the setting must reach uvicorn's worker processes too.
    with serving(tmp_path, "[api]\nkeepalive_timeout = 1\n", "--workers", "2") as port:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            get_root(conn)
            sock = conn.sock
            assert sock is not None
            time.sleep(2.5)
            assert closed_by_server(sock)
            # What a pooled client then sees: the request it sends is lost.
            with pytest.raises(ConnectionError):
                get_root(conn)
        finally:
            conn.close()


@pytest.mark.parametrize(("strategy", "said"), [
    ("bogus", "auth_strategy = 'bogus' is not supported; supported: 'noauth2'"),
    # keystone without the service's credentials would let nobody in, or everybody.
    ("keystone", "auth_strategy = 'keystone' needs [keystone_authtoken] auth_url, "
                 "username, password, project_name"),
])
def test_serve_refuses_an_unsupported_auth_strategy(tmp_path: Path, strategy: str,
                                                    said: str) -> None:
    port = free_port()
    argv = _serve_argv(tmp_path, port, f'[api]\nauth_strategy = "{strategy}"\n')
    result = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode != 0
    assert said in result.stderr
    assert not (tmp_path / "stowage.db").exists()  # refused before touching anything
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
        pass
