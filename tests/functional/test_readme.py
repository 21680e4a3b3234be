"""Every ```sh block of README.md runs as written, in order, on a fresh stowage.

The walkthrough must not drift from what stowage does. The first block is
the set-up command: its `python3 -m pip install -e . &&` part is left out
(stowage is installed already) and its `stowage serve ...` runs in a
temporary directory, on a free port instead of 8780 (`--bind`). Every other
block runs with `bash -e -o pipefail` in that directory, with `127.0.0.1:8780`
replaced by the served address, and must exit 0. A block marked

    <!-- readme-test: skip (why) -->

on the line before it is left out (the test command itself, and commands
for another deployment); there are few of them, and the test says so. The
environment starts without any OS_* variable or STOWAGE_DATABASE /
STOWAGE_TRANSPORT_URL; what a block exports carries to the next ones, as in
one shell.
"""

from __future__ import annotations

import os
import re
import shlex
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.functional.osc import needs_osc

README = Path(__file__).resolve().parents[2] / "README.md"
SKIP = re.compile(r"<!-- readme-test: skip \((.+)\) -->\s*$")
SERVE = re.compile(r"^python3 -m pip install -e \. && (python3 -m stowage serve .*)$")
MAX_SKIPPED = 3
# What a fresh start on SQLite must not inherit from the shell that runs pytest.
_NOT_INHERITED = ("STOWAGE_DATABASE", "STOWAGE_TRANSPORT_URL")
BLOCK_TIMEOUT = 300


@dataclass(frozen=True)
class Block:
    line: int  # where its fence opens in README.md
    text: str
    skipped: str | None  # the reason, when marked


def sh_blocks(markdown: str) -> list[Block]:
    """The ```sh blocks, in order, each with the skip reason of the line before it."""
    blocks: list[Block] = []
    lines = markdown.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```sh":
            end = lines.index("```", i + 1)
            marker = SKIP.search(lines[i - 1]) if i else None
            blocks.append(Block(i + 1, "\n".join(lines[i + 1:end]) + "\n",
                                marker.group(1) if marker else None))
            i = end
        i += 1
    return blocks


def _environment() -> dict[str, str]:
    """The caller's environment without OS_* (the README sets those) and stowage settings."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith("OS_") and k not in _NOT_INHERITED}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, str, subprocess.Popen[bytes]]]:
    """The README's serve command in `tmp_path`, on a free port; ended by its pid."""
    first = sh_blocks(README.read_text(encoding="utf-8"))[0]
    found = SERVE.match(first.text.strip())
    assert found, f"README.md:{first.line}: the first block is not the set-up command"
    address = f"127.0.0.1:{_free_port()}"
    argv = [*shlex.split(found.group(1)), "--bind", address]
    argv[0] = sys.executable
    log = (tmp_path / "serve.log").open("wb")
    proc = subprocess.Popen(argv, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT,
                            env=_environment())
    try:
        _wait_until_up(f"http://{address}", proc, tmp_path / "serve.log")
        yield tmp_path, address, proc
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def _wait_until_up(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    for _ in range(600):
        assert proc.poll() is None, f"stowage serve exited:\n{log.read_text()}"
        try:
            if httpx.get(f"{url}/placement/", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"stowage serve did not answer in 60 s:\n{log.read_text()}")


def test_the_readme_marks_few_blocks_skipped() -> None:
    blocks = sh_blocks(README.read_text(encoding="utf-8"))
    skipped = [b for b in blocks if b.skipped]
    assert blocks[0].skipped is None and len(blocks) > 5
    assert len(skipped) <= MAX_SKIPPED, [(b.line, b.skipped) for b in skipped]


@needs_osc
def test_every_readme_command_block_runs_in_order(
        served: tuple[Path, str, subprocess.Popen[bytes]]) -> None:
    workdir, address, proc = served
    blocks = sh_blocks(README.read_text(encoding="utf-8"))[1:]
    exported = workdir / "exported.sh"
    exported.write_text("")
    env = _environment()
    for block in blocks:
        if block.skipped:
            continue
        script = (f"source {shlex.quote(str(exported))}\nset -e -o pipefail\n"
                  f"{block.text.replace('127.0.0.1:8780', address)}"
                  f"export -p > {shlex.quote(str(exported))}\n")
        done = subprocess.run(["bash", "-c", script], cwd=workdir, env=env,
                              capture_output=True, text=True, timeout=BLOCK_TIMEOUT,
                              check=False, stdin=subprocess.DEVNULL)
        assert done.returncode == 0, (
            f"README.md:{block.line}: the block exited {done.returncode}\n{block.text}\n"
            f"--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}")
        assert proc.poll() is None, f"stowage serve died after README.md:{block.line}"
