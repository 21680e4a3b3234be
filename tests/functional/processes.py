"""stowage commands as OS processes for the scale-out tests: start, wait until ready, kill.

Each process runs in its own process group (so `serve --workers N` takes its
workers along when stopped) and gets SIGTERM when the test process dies
(PR_SET_PDEATHSIG, as tests/conformance/server.py does), so an interrupted
run leaves nothing behind. Output goes to `<name>.log`; its tail goes into
the error when a process does not come up, because that is where the reason
is. A worker (`stowage conductor|scheduler|agent`) is ready when it logs
that it started; `stowage serve` when it answers HTTP.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import httpx

import stowage
from tests.conformance.server import _die_with_parent

__all__ = ["StowageProcess", "STARTED", "answers_http", "logged"]

# What compute/worker.py logs once the role is serving.
STARTED = ": started (roles"
STOP_TIMEOUT = 15.0
SRC = str(Path(stowage.__file__).resolve().parent.parent)


def answers_http(url: str) -> Callable[[StowageProcess], bool]:
    def ready(_process: StowageProcess) -> bool:
        try:
            httpx.get(url, timeout=2.0)
        except httpx.TransportError:
            return False
        return True
    return ready


def logged(text: str) -> Callable[[StowageProcess], bool]:
    def ready(process: StowageProcess) -> bool:
        return text in process.log()
    return ready


class StowageProcess:
    """`python -m stowage <args>`; `start()` returns at once, `wait_ready()` once it serves."""

    def __init__(self, name: str, args: Sequence[str], log_dir: Path,
                 ready: Callable[[StowageProcess], bool]) -> None:
        self.name = name
        self.argv = [sys.executable, "-m", "stowage", *args]
        self.log_path = log_dir / f"{name}.log"
        self._ready = ready
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_offset = 0

    def start(self) -> None:
        env = {**os.environ, "PYTHONPATH": SRC}
        env.pop("STOWAGE_DATABASE", None)
        env.pop("STOWAGE_TRANSPORT_URL", None)
        # A restart's readiness is judged on what it logs from now on.
        self._log_offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        with open(self.log_path, "ab") as log:
            self._proc = subprocess.Popen(self.argv, env=env, stdin=subprocess.DEVNULL,
                                          stdout=log, stderr=log, start_new_session=True,
                                          preexec_fn=_die_with_parent)

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc is None or self._proc.poll() is not None:
                code = None if self._proc is None else self._proc.returncode
                raise RuntimeError(f"{self.name} exited with {code}:\n{self.log_tail()}")
            if self._ready(self):
                return
            time.sleep(0.1)
        raise RuntimeError(f"{self.name} not ready in {timeout:g} s:\n{self.log_tail()}")

    @property
    def pid(self) -> int | None:
        """The running process's pid (None before start or after it exited)."""
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def kill(self) -> None:
        """SIGKILL the process group, as a crash would: nothing is cleaned up."""
        self._signal(signal.SIGKILL, STOP_TIMEOUT)

    def terminate(self) -> None:
        """SIGTERM without waiting (`stop()` waits): to stop several at once."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)

    def stop(self) -> int | None:
        """SIGTERM (a clean stop), SIGKILL if it lingers; the exit status, None if killed."""
        proc = self._proc
        if proc is None:
            return None
        if self._signal(signal.SIGTERM, STOP_TIMEOUT):
            return proc.returncode
        self._signal(signal.SIGKILL, STOP_TIMEOUT)
        return None

    def _signal(self, sig: signal.Signals, wait: float) -> bool:
        """Send `sig` to the group; True when the process exited within `wait` s."""
        proc = self._proc
        if proc is None:
            return True
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            return False
        return True

    def log(self) -> str:
        try:
            with open(self.log_path, "rb") as log:
                log.seek(self._log_offset)
                return log.read().decode(errors="replace")
        except OSError:
            return ""

    def log_tail(self, lines: int = 30) -> str:
        return "\n".join(self.log().splitlines()[-lines:])
