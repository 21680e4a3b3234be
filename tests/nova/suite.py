"""One run of Nova's functional tests against live stowage Placement servers.

    pytest ── suite.run_suite ──▶ .venv-nova/bin/python inside.py  (× processes)
                                       │  Nova's tests, Placement fixture re-pointed
                                       ▼
                                 stowage serve --services placement  (one each)

Each test process gets a Placement server and database of its own, because
the fixture empties its server whenever a test sets it up. Tests are dealt
to the processes class by class, so a class's tests stay in one process.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from tests.conformance.databases import create_database
from tests.conformance.server import ServerProcess, free_port
from tests.conformance.targets import ServerOptions, launch_for
from tests.nova import selection
from tests.nova.environment import ensure_environment
from tests.nova.results import read_outcome
from tests.outcomes import Outcome

__all__ = ["KNOWN_FAILURES", "SUMMARY_PROPERTY", "RunOptions", "run_suite"]

INSIDE = Path(__file__).with_name("inside.py")
KNOWN_FAILURES = Path(__file__).with_name("known_failures.txt")
SUMMARY_PROPERTY = "nova_summary"  # user_properties key of the P/T line

# What Nova's tox "functional" environment sets for a run.
NOVA_TEST_ENV = {
    "OS_STDOUT_CAPTURE": "1", "OS_STDERR_CAPTURE": "1", "OS_TEST_TIMEOUT": "160",
    "NOVA_RAISE_ON_GREENLET_LEAK": "True", "OS_NOVA_DISABLE_EVENTLET_PATCHING": "False",
    "PYTHONDONTWRITEBYTECODE": "1", "LC_ALL": "C.UTF-8",
}
# Nova's Placement fixture turns upstream's new policy defaults off; so does ours.
PLACEMENT_OPTIONS = ServerOptions(enforce_new_defaults=False)


@dataclass(frozen=True)
class RunOptions:
    names: tuple[str, ...] = selection.DEFAULT
    regex: str = ""
    processes: int = 1
    database: str = "sqlite"
    timeout: float = 0.0  # seconds; 0: ten per test per process, plus ten minutes

    @classmethod
    def from_environ(cls) -> RunOptions:
        """STOWAGE_NOVA_FULL=1, _REGEX, _PROCESSES and _TIMEOUT shape a run."""
        env = os.environ
        full = env.get("STOWAGE_NOVA_FULL", "") not in ("", "0")
        return cls(names=selection.FULL if full else selection.DEFAULT,
                   regex=env.get("STOWAGE_NOVA_REGEX", ""),
                   processes=int(env.get("STOWAGE_NOVA_PROCESSES", "1")),
                   timeout=float(env.get("STOWAGE_NOVA_TIMEOUT", "0")))

    @property
    def full(self) -> bool:
        return self.names == selection.FULL

    def on(self, database: str) -> RunOptions:
        """The same run on another database: its slice, or everything when full."""
        if database == "sqlite":
            return replace(self, database=database)
        names = self.names if self.full else selection.BACKEND_SLICE
        return replace(self, names=names, database=database)


def _test_ids(python: Path, names: tuple[str, ...], regex: str, workdir: Path) -> list[str]:
    """Expand unittest names to test ids inside the side venv; keep those matching."""
    listing, ids = workdir / "names.txt", workdir / "ids.txt"
    listing.write_text("\n".join(names) + "\n")
    subprocess.run([str(python), str(INSIDE), "--tests", str(listing), "--list", str(ids)],
                   env={**os.environ, **NOVA_TEST_ENV}, check=True, capture_output=True,
                   timeout=300)
    found = [line for line in ids.read_text().splitlines() if line]
    pattern = re.compile(regex) if regex else None
    return [t for t in found if pattern is None or pattern.search(t)]


def deal(ids: list[str], processes: int) -> list[list[str]]:
    """Whole classes to the least loaded process, biggest classes first."""
    classes: dict[str, list[str]] = {}
    for test_id in ids:
        classes.setdefault(test_id.rsplit(".", 1)[0], []).append(test_id)
    shares: list[list[str]] = [[] for _ in range(max(1, processes))]
    for tests in sorted(classes.values(), key=len, reverse=True):
        min(shares, key=len).extend(tests)
    return [share for share in shares if share]


@contextmanager
def _placement(workdir: Path, database: str) -> Iterator[str]:
    """A stowage Placement on its own fresh database; yields its URL."""
    workdir.mkdir(parents=True, exist_ok=True)
    fresh = create_database(database, workdir)
    try:
        port = free_port()
        launch = launch_for("stowage", port, fresh.url, PLACEMENT_OPTIONS, workdir)
        server = ServerProcess(launch, port, workdir / "stowage.log")
        server.start()
        try:
            yield server.base_url
        finally:
            server.stop()
    finally:
        fresh.drop()


def _start(python: Path, share: list[str], url: str, workdir: Path) -> subprocess.Popen[bytes]:
    tests, results = workdir / "tests.txt", workdir / "results.jsonl"
    tests.write_text("\n".join(share) + "\n")
    with open(workdir / "nova.log", "wb") as log:
        return subprocess.Popen(
            [str(python), str(INSIDE), "--tests", str(tests), "--placement", url,
             "--results", str(results)],
            env={**os.environ, **NOVA_TEST_ENV}, stdout=log, stderr=subprocess.STDOUT,
            cwd=workdir, start_new_session=True)


def _done(parts: list[Path]) -> tuple[int, int]:
    """(tests finished, of which failed) so far, from the results files."""
    done = failed = 0
    for part in parts:
        results = part / "results.jsonl"
        for line in results.read_text().splitlines() if results.exists() else []:
            done += 1
            failed += '"status": "fail"' in line
    return done, failed


def _wait(procs: list[subprocess.Popen[bytes]], parts: list[Path], total: int,
          timeout: float, progress: bool) -> None:
    """Wait for every process; kill what outlives `timeout`; say how far it got."""
    deadline = time.monotonic() + timeout
    while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
        time.sleep(1.0 if not progress else 10.0)
        if progress:
            done, failed = _done(parts)
            print(f"nova: {done}/{total} tests finished, {failed} failed", flush=True)
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def run_suite(workdir: Path, options: RunOptions, progress: bool = False) -> Outcome:
    python = ensure_environment()
    ids = _test_ids(python, options.names, options.regex, workdir)
    shares = deal(ids, options.processes)
    parts = [workdir / f"part{n}" for n in range(1, len(shares) + 1)]
    with ExitStack() as stack:
        procs = []
        for share, part in zip(shares, parts, strict=True):
            url = stack.enter_context(_placement(part, options.database))
            procs.append(_start(python, share, url, part))
        timeout = options.timeout or 600.0 + 10.0 * len(ids) / max(1, len(shares))
        _wait(procs, parts, len(ids), timeout, progress)
    return read_outcome(ids, parts)
