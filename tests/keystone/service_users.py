"""Helpers of the service-user tests: register stowage in Keystone, serve with a token log.

`register` runs `stowage manage keystone register` as an operator would and
returns its stdout (the settings tables); `start_logged` is
`tests.functional.conftest.start_server` with every request's path and
`X-Auth-Token` kept, so that a test can ask Keystone whose tokens a service
was sent.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stowage import cli, config
from stowage.compute import cells
from stowage.db import Database, schema
from tests.dbs import throwaway_database
from tests.functional.conftest import LiveServer, free_port, run_uvicorn
from tests.keystone.fixture import Keystone

__all__ = ["PASSWORD", "TokenLog", "register", "start_logged"]

PASSWORD = "service-users-pw"


def register(keystone: Keystone, public_url: str, services: str,
             *extra: str) -> tuple[int, str, str]:
    """`stowage manage keystone register ...`: exit status, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli.main(["manage", "keystone", "register", "--auth-url", keystone.auth_url,
                           "--admin-password", keystone.admin_password,
                           "--region", keystone.region, "--public-url", public_url,
                           "--services", services, "--service-password", PASSWORD, *extra])
    return status, out.getvalue(), err.getvalue()


@dataclass
class TokenLog:
    """An ASGI wrapper keeping (path, token) of each HTTP request."""

    app: Any
    seen: list[tuple[str, str]] = field(default_factory=list)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            token = dict(scope["headers"]).get(b"x-auth-token")
            if token:
                self.seen.append((scope["path"], token.decode()))
        await self.app(scope, receive, send)

    def tokens(self, path_part: str) -> set[str]:
        return {token for path, token in self.seen if path_part in path}


def start_logged(settings: config.Settings, port: int) -> tuple[LiveServer, TokenLog]:
    """Every service of `settings` mounted under its prefix, on `port`, with a TokenLog."""
    db = Database(settings.database)
    schema.upgrade(db)
    found = cells.bootstrap_with(db, settings.compute) \
        if "compute" in settings.services else None
    app = cli.build_asgi(settings, db, at_root=False, cells=found)
    log = TokenLog(app)
    server, thread = run_uvicorn(log, port)
    return LiveServer(f"http://127.0.0.1:{port}", db, server, thread, cli.plane_of(app),
                      found), log



@contextlib.contextmanager
def registered_placement(keystone: Keystone, workdir: Path, authtoken: str = ""
                         ) -> Iterator[tuple[LiveServer, TokenLog]]:
    """A Placement registered in Keystone's catalog and served with the settings
    `manage keystone register` printed (plus `authtoken` lines for
    `[keystone_authtoken]`), on a throw-away SQLite database."""
    keystone.ensure_running()
    port = free_port()
    status, tables, err = register(keystone, f"http://127.0.0.1:{port}", "placement")
    assert status == 0, err
    if authtoken:
        tables = tables.replace("[keystone_authtoken]", f"[keystone_authtoken]\n{authtoken}")
    path = workdir / "stowage.toml"
    with throwaway_database("sqlite") as url:
        path.write_text(f'database = "{url}"\nservices = ["placement"]\n{tables}\n')
        live, log = start_logged(config.load(str(path)), port)
        try:
            yield live, log
        finally:
            live.close()
