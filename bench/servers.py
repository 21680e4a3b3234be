"""Throw-away databases and the two target servers, started as real processes.

Why real processes on loopback: the comparison must include everything a
client pays for (HTTP parsing, the WSGI/ASGI stack, worker processes), and
each target must start on a fresh, empty database of the chosen backend so
neither benefits from state the other left behind.

Everything here is a context manager: servers are killed (their whole process
group) and databases dropped on exit, also on errors and Ctrl-C.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

__all__ = ["Server", "database", "serve", "serve_all"]

REPO_ROOT = Path(__file__).resolve().parents[1]
PG_ADMIN_DSN = "host=127.0.0.1 port=5432 user=postgres dbname=postgres"
PG_URL = "postgresql+{driver}://postgres@127.0.0.1:5432/{name}"


@dataclass(frozen=True)
class Server:
    """A running target: where to reach it and where its output goes."""

    target: str
    url: str
    log: Path
    process: subprocess.Popen[bytes]


def _pg_admin(sql: str) -> None:
    import psycopg

    with psycopg.connect(PG_ADMIN_DSN, autocommit=True) as conn:
        conn.execute(sql)


@contextlib.contextmanager
def database(backend: str, workdir: Path, target: str) -> Iterator[str]:
    """Yield a SQLAlchemy URL (stowage's driver) of an empty database; drop it after."""
    if backend == "sqlite":
        yield f"sqlite:///{workdir / f'{target}.db'}"
        return
    if backend != "postgresql":
        raise SystemExit(f"bench: unknown backend {backend!r}")
    name = f"stowage_bench_{uuid.uuid4().hex[:12]}"
    _pg_admin(f'CREATE DATABASE "{name}"')
    try:
        yield PG_URL.format(driver="psycopg", name=name)
    finally:
        _pg_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _stowage_argv(port: int, db_url: str, workers: int,
                  workdir: Path) -> tuple[list[str], dict[str, str]]:
    config = workdir / "stowage.toml"
    config.write_text('[api]\nauth_strategy = "noauth2"\n\n'
                      "[placement]\nrandomize_allocation_candidates = false\n")
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT / "src"))
    argv = [sys.executable, "-m", "stowage", "serve", "--services", "placement",
            "--bind", f"127.0.0.1:{port}", "--database", db_url,
            "--config", str(config), "--log-level", "warning"]
    if workers > 1:
        argv += ["--workers", str(workers)]
    return argv, env


def _upstream_argv(port: int, db_url: str, workers: int, workdir: Path,
                   venv: Path) -> tuple[list[str], dict[str, str]]:
    url = db_url.replace("postgresql+psycopg://", "postgresql+psycopg2://", 1)
    # Request logging at INFO would cost upstream a log line per request that
    # stowage (uvicorn without access log) does not pay.
    (workdir / "placement.conf").write_text(
        "[DEFAULT]\ndebug = False\n"
        "default_log_levels = placement.requestlog=WARN,sqlalchemy=WARN\n\n"
        "[api]\nauth_strategy = noauth2\n\n"
        f"[placement_database]\nconnection = {url}\nsync_on_startup = True\n\n"
        "[placement]\nrandomize_allocation_candidates = False\n")
    env = dict(os.environ, OS_PLACEMENT_CONFIG_DIR=str(workdir))
    env.pop("PYTHONPATH", None)
    # Initialise once up front (schema, then the trait and resource-class
    # sync that every worker also runs at boot): with several workers they
    # would otherwise all insert the ~400 standard traits at the same time,
    # which SQLite answers with "database is locked" and gunicorn gives up.
    init = subprocess.run([str(venv / "bin" / "python"), "-c", "import placement.wsgi.api"],
                          env=env, cwd=workdir, capture_output=True, text=True)
    if init.returncode:
        raise RuntimeError(f"upstream placement failed to initialise:\n{init.stderr[-3000:]}")
    argv = [str(venv / "bin" / "gunicorn"), "-w", str(workers), "-b",
            f"127.0.0.1:{port}", "--timeout", "600", "placement.wsgi.api:application"]
    return argv, env


def _wait_ready(server: Server, timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            break
        try:
            if httpx.get(server.url + "/", timeout=2.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    tail = server.log.read_text(errors="replace")[-3000:]
    raise RuntimeError(f"{server.target} did not come up at {server.url}; log tail:\n{tail}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop the process group we started (the server and its workers)."""
    if proc.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, 15.0), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


@contextlib.contextmanager
def serve(target: str, db_url: str, workers: int, workdir: Path,
          upstream_venv: Path | None = None) -> Iterator[Server]:
    """Start `target` on a free loopback port against `db_url`; stop it on exit."""
    port = _free_port()
    tdir = workdir / target
    tdir.mkdir(parents=True, exist_ok=True)
    if target == "stowage":
        argv, env = _stowage_argv(port, db_url, workers, tdir)
    elif target == "upstream" and upstream_venv is not None:
        argv, env = _upstream_argv(port, db_url, workers, tdir, upstream_venv)
    else:
        raise SystemExit(f"bench: unknown target {target!r}")
    log = tdir / "server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, env=env, cwd=tdir, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    server = Server(target, f"http://127.0.0.1:{port}", log, proc)
    try:
        _wait_ready(server)
        yield server
    finally:
        _stop(proc)


UNLIMITED_QUOTA = "[quota]\ninstances = -1\ncores = -1\nram = -1\n"


@contextlib.contextmanager
def serve_all(db_url: str, workdir: Path, sim_hosts: int, settings: str = ""
              ) -> Iterator[Server]:
    """Plain `stowage serve --sim-hosts N`: every service mounted, one process
    (`settings`: more text for its settings file). Quotas are unlimited: the
    benches boot more servers than a project's default 10."""
    port = _free_port()
    tdir = workdir / "stowage-all"
    tdir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT / "src"))
    argv = [sys.executable, "-m", "stowage", "serve", "--bind", f"127.0.0.1:{port}",
            "--database", db_url, "--sim-hosts", str(sim_hosts), "--log-level", "warning"]
    (tdir / "stowage.toml").write_text(settings + UNLIMITED_QUOTA)
    argv += ["--config", str(tdir / "stowage.toml")]
    log = tdir / "server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, env=env, cwd=tdir, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    server = Server("stowage", f"http://127.0.0.1:{port}", log, proc)
    try:
        _wait_ready(Server("stowage", server.url + "/placement", log, proc))
        yield server
    finally:
        _stop(proc)
