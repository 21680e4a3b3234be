"""The server process under test: start, wait until it answers, stop.

The server runs in its own process group so that stopping it also stops
anything it forked (gunicorn workers). On Linux it also gets SIGTERM when the
process that started it dies (PR_SET_PDEATHSIG), so an interrupted or
timed-out run does not leave servers behind. Its output goes to ``server.log`` in
the file's work directory; the tail of that log is put into the error when
the server does not come up, because that is where the reason is.
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import httpx

from .targets import Launch

__all__ = ["ServerProcess", "ServerStartError", "free_port"]

STARTUP_TIMEOUT = 90.0
STOP_TIMEOUT = 10.0


class ServerStartError(RuntimeError):
    """The server exited or never answered ``GET /``."""


def _die_with_parent() -> None:
    """Runs in the child before exec: SIGTERM me when my parent dies."""
    pr_set_pdeathsig = 1
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
    except OSError:
        return
    libc.prctl(pr_set_pdeathsig, signal.SIGTERM)


def free_port() -> int:
    """A loopback port that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ServerProcess:
    """One server; ``start()`` returns once ``GET /`` answers."""

    def __init__(self, launch: Launch, port: int, log_path: Path) -> None:
        self.launch = launch
        self.base_url = f"http://127.0.0.1:{port}"
        self.log_path = log_path
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with open(self.log_path, "ab") as log:
            self._proc = subprocess.Popen(
                self.launch.argv, env=self.launch.env, cwd=self.launch.cwd,
                stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                start_new_session=True, preexec_fn=_die_with_parent,
            )
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + STARTUP_TIMEOUT
        assert self._proc is not None
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise ServerStartError(
                    f"server exited with {self._proc.returncode}:\n"
                    + self.log_tail())
            try:
                httpx.get(self.base_url + "/", timeout=2.0)
                return
            except httpx.TransportError:
                time.sleep(0.1)
        raise ServerStartError(
            f"server did not answer GET / in {STARTUP_TIMEOUT}s:\n"
            + self.log_tail())

    def stop(self) -> None:
        """SIGTERM the process group, SIGKILL it if it lingers."""
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        for sig, wait in ((signal.SIGTERM, STOP_TIMEOUT),
                          (signal.SIGKILL, STOP_TIMEOUT)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                proc.wait(timeout=wait)
                return
            except subprocess.TimeoutExpired:
                continue

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no server log)"
        return "\n".join(text.splitlines()[-lines:])
