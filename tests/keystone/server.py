"""A real Keystone process on loopback: configured, bootstrapped, started, stopped.

    KeystoneServer(workdir).start()
      workdir/keystone.conf      SQLite database, fernet tokens, [token] expiration
      workdir/keystone.db        `keystone-manage db_sync`
      workdir/fernet-keys/       `keystone-manage fernet_setup`
      workdir/credential-keys/   `keystone-manage credential_setup`
      `keystone-manage bootstrap`: user admin / project admin / region RegionOne,
                                   the identity endpoint at `auth_url`
      gunicorn keystone.wsgi.api:application on 127.0.0.1:<port>, until `stop()`

The port is chosen once and kept, so that `restart()` (after `stop()`, for
the tests of an unreachable Keystone) answers at the same `auth_url`;
`restart(expiration=...)` changes the lifetime of the tokens issued from then
on, keeping the database and keys (so earlier tokens stay valid as issued).
Nothing here imports keystone: it runs in its side venv (`venv.py`).
"""

from __future__ import annotations

import grp
import os
import pwd
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.keystone import venv

__all__ = ["ADMIN_PASSWORD", "KeystoneServer", "REGION", "free_port"]

ADMIN_PASSWORD = "keystone-admin-secret"
REGION = "RegionOne"
# Seconds for Keystone to answer /v3 after gunicorn starts (a cold import is ~3 s).
START_TIMEOUT = 60.0

_CONF = """\
[DEFAULT]
debug = false

[database]
connection = sqlite:///{workdir}/keystone.db

[token]
provider = fernet
expiration = {expiration}

[fernet_tokens]
key_repository = {workdir}/fernet-keys

[fernet_receipts]
key_repository = {workdir}/fernet-keys

[credential]
key_repository = {workdir}/credential-keys

[identity]
# bcrypt's cheapest cost: users' passwords are checked on every login of the tests.
password_hash_rounds = 4
"""

# Keystone's WSGI module parses sys.argv with oslo.config, which refuses
# gunicorn's own arguments: the worker forgets them before importing it.
_APP = """\
import sys

sys.argv = sys.argv[:1]
from keystone.wsgi.api import application  # noqa: E402,F401
"""


def free_port() -> int:
    """A TCP port nothing listens on at the moment, on loopback."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class KeystoneServer:
    """One Keystone deployment under `workdir`; `expiration` is [token] expiration (s)."""

    workdir: Path
    expiration: int = 3600
    port: int = 0

    def __post_init__(self) -> None:
        self.workdir = Path(self.workdir)
        self.port = self.port or free_port()
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def auth_url(self) -> str:
        """Keystone's public URL, as `[keystone_authtoken] auth_url` names it."""
        return f"http://127.0.0.1:{self.port}/v3"

    @property
    def conf_path(self) -> Path:
        return self.workdir / "keystone.conf"

    def start(self) -> KeystoneServer:
        """Configure and bootstrap Keystone (once), then serve it; return self."""
        bindir = venv.ensure()
        self.workdir.mkdir(parents=True, exist_ok=True)
        if not (self.workdir / "keystone.db").exists():
            self._write_conf()
            self._bootstrap(bindir)
        self._serve(bindir)
        return self

    def stop(self) -> None:
        """Stop gunicorn (its master and workers); Keystone refuses connections after."""
        process, self._process = self._process, None
        if process is None:
            return
        process.send_signal(signal.SIGINT)  # gunicorn's quick shutdown
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def restart(self, expiration: int | None = None) -> None:
        """Start again at the same URL, with a new [token] expiration if given."""
        self.stop()
        if expiration is not None:
            self.expiration = expiration
        self._write_conf()
        self._serve(venv.ensure())

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def _write_conf(self) -> None:
        self.conf_path.write_text(_CONF.format(workdir=self.workdir,
                                               expiration=self.expiration))

    def _manage(self, bindir: Path, *args: str) -> None:
        subprocess.run([str(bindir / "keystone-manage"), "--config-file",
                        str(self.conf_path), *args], check=True, capture_output=True)

    def _bootstrap(self, bindir: Path) -> None:
        """Keystone's documented install steps, in order."""
        self._manage(bindir, "db_sync")
        owner = ("--keystone-user", pwd.getpwuid(os.getuid()).pw_name,
                 "--keystone-group", grp.getgrgid(os.getgid()).gr_name)
        self._manage(bindir, "fernet_setup", *owner)
        self._manage(bindir, "credential_setup", *owner)
        self._manage(bindir, "bootstrap", "--bootstrap-password", ADMIN_PASSWORD,
                     "--bootstrap-admin-url", self.auth_url,
                     "--bootstrap-internal-url", self.auth_url,
                     "--bootstrap-public-url", self.auth_url,
                     "--bootstrap-region-id", REGION)

    def _serve(self, bindir: Path) -> None:
        (self.workdir / "keystone_app.py").write_text(_APP)
        env = dict(os.environ, OS_KEYSTONE_CONFIG_FILES=str(self.conf_path))
        env.pop("PYTHONPATH", None)  # the project's sources are not Keystone's
        log = open(self.workdir / "gunicorn.log", "ab")  # noqa: SIM115 -- the child keeps it
        with log:
            self._process = subprocess.Popen(
                [str(bindir / "gunicorn"), "--bind", f"127.0.0.1:{self.port}",
                 "--workers", "1", "--threads", "4", "--worker-class", "gthread",
                 "--timeout", "120", "--no-control-socket",
                 "--chdir", str(self.workdir), "keystone_app:application"],
                env=env, stdout=log, stderr=subprocess.STDOUT, cwd=self.workdir)
        self._wait_until_up()

    def _wait_until_up(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if not self.running:
                raise RuntimeError(f"Keystone exited; see {self.workdir / 'gunicorn.log'}")
            try:
                if httpx.get(self.auth_url, timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"Keystone did not answer {self.auth_url} within "
                           f"{START_TIMEOUT:.0f} s; see {self.workdir / 'gunicorn.log'}")


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        server = KeystoneServer(Path(tmp)).start()
        print("Keystone at", server.auth_url, "admin password", ADMIN_PASSWORD)
        try:
            signal.pause()
        finally:
            server.stop()
