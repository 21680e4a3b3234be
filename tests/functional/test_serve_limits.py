"""`stowage serve`'s connections are bounded: what a hostile client can hold, and for how long.

Each test starts `stowage serve --services placement` with short limits in its
settings file and talks to it over raw sockets:

- a client announcing a huge body without a token gets its 401 at once;
- headers that never end (slow-loris), or no bytes at all, get a 408 and a
  closed connection after `[api] header_timeout`, while ordinary requests
  are served meanwhile -- in every worker;
- connections past `[api] max_connections` are answered 503 at once;
- a request head growing past `[api] max_header_size` is a 400.

No test measures time: each waits for what the server does, with a socket
timeout far longer than the limit as a safety net.
"""

from __future__ import annotations

import http.client
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.functional.test_serve_process import serving

SAFETY = 30.0


@contextmanager
def connected(port: int) -> Iterator[socket.socket]:
    sock = socket.create_connection(("127.0.0.1", port), timeout=SAFETY)
    try:
        yield sock
    finally:
        sock.close()


def answer(sock: socket.socket) -> tuple[int, dict[str, str]]:
    resp = http.client.HTTPResponse(sock)
    resp.begin()
    resp.read()
    return resp.status, {k.lower(): v for k, v in resp.getheaders()}


def until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
    return received


def get_root(port: int, **headers: str) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=SAFETY)
    try:
        conn.request("GET", "/", headers={"accept": "application/json", **headers})
        resp = conn.getresponse()
        resp.read()
        return resp.status
    finally:
        conn.close()


def test_an_anonymous_huge_body_is_answered_401_unread(tmp_path: Path) -> None:
    with serving(tmp_path) as port, connected(port) as sock:
        sock.sendall(b"POST /resource_providers HTTP/1.1\r\nHost: stowage\r\n"
                     b"Content-Type: application/json\r\nContent-Length: 200000000\r\n\r\n{")
        status, headers = answer(sock)
        assert status == 401
        assert headers["connection"] == "close"
        assert until_closed(sock) == b""


def test_unfinished_headers_are_cut_off_in_every_worker(tmp_path: Path) -> None:
    config = "[api]\nheader_timeout = 1\n"
    with serving(tmp_path, config, "--workers", "2") as port, \
            connected(port) as loris, connected(port) as silent:
        loris.sendall(b"GET / HTTP/1.1\r\nHost: stowage\r\nX-Trickle: a")
        assert get_root(port) == 200  # served while the other two hang
        for sock in (loris, silent):
            assert until_closed(sock).startswith(b"HTTP/1.1 408 Request Timeout\r\n")


def test_a_kept_alive_connection_gets_a_new_deadline_per_request(tmp_path: Path) -> None:
    with serving(tmp_path, "[api]\nheader_timeout = 1\n") as port, connected(port) as sock:
        for _ in range(2):
            sock.sendall(b"GET / HTTP/1.1\r\nHost: stowage\r\nAccept: application/json\r\n\r\n")
            assert answer(sock)[0] == 200
        sock.sendall(b"GET / HTTP/1.1\r\nHost: stowage\r\n")
        assert until_closed(sock).startswith(b"HTTP/1.1 408 ")


def test_connections_past_the_cap_are_answered_503(tmp_path: Path) -> None:
    config = "[api]\nmax_connections = 4\nheader_timeout = 60\n"
    with serving(tmp_path, config) as port:
        idle = [socket.create_connection(("127.0.0.1", port), timeout=SAFETY)
                for _ in range(4)]
        try:
            assert get_root(port) == 503
        finally:
            for sock in idle:
                sock.close()
        deadline = time.monotonic() + SAFETY
        while get_root(port) != 200:  # once the server has seen the idle ones go
            assert time.monotonic() < deadline
            time.sleep(0.1)


def test_a_request_head_growing_past_the_size_limit_is_400(tmp_path: Path) -> None:
    # h11 bounds what it buffers while a head is incomplete (a head that arrives
    # whole in one read is parsed whatever its size).
    with serving(tmp_path, "[api]\nmax_header_size = 4096\n") as port, \
            connected(port) as sock:
        assert get_root(port, **{"x-padding": "p" * 2000}) == 200
        sock.sendall(b"GET / HTTP/1.1\r\nHost: stowage\r\nX-Padding: " + b"p" * 8000)
        assert until_closed(sock).startswith(b"HTTP/1.1 400 ")
