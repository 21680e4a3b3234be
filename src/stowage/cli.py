"""The `stowage` command: serve the services, manage the database."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from typing import Any

from stowage import config
from stowage.db import Database, schema

__all__ = ["main", "build_asgi"]

ALL_SERVICES = ("placement",)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="stowage", description=__doc__)
    p.add_argument("--config", help="TOML settings file")
    sub = p.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the services in one process")
    serve.add_argument("--services", help="comma-separated services; one service is "
                       f"served at the root path. Known: {', '.join(ALL_SERVICES)}")
    serve.add_argument("--bind", help="HOST:PORT to listen on (default 127.0.0.1:8780)")
    serve.add_argument("--database", help="SQLAlchemy URL (default sqlite:///stowage.db)")
    serve.add_argument("--config", dest="sub_config", help=argparse.SUPPRESS)
    serve.add_argument("--log-level", default="info")
    manage = sub.add_parser("manage", help="operator tasks")
    manage_sub = manage.add_subparsers(dest="area", required=True)
    db = manage_sub.add_parser("db", help="database schema")
    db.add_argument("action", choices=["upgrade"])
    db.add_argument("--database", help="SQLAlchemy URL")
    return p


def build_asgi(settings: config.Settings, db: Database, at_root: bool) -> Any:
    """One ASGI app: a single service at `/` when `at_root`, else each under `/<name>`."""
    from stowage.placement.app import build_app as placement_app
    from stowage.web.app import PrefixDispatcher
    from stowage.web.identity import IdentityStub

    builders = {"placement": placement_app}
    unknown = set(settings.services) - set(builders)
    if unknown:
        raise SystemExit(f"stowage: unknown service(s) {sorted(unknown)}; "
                         f"choose from {', '.join(ALL_SERVICES)}")
    apps = {name: builders[name](settings, db) for name in settings.services}
    if at_root and len(apps) == 1:
        return next(iter(apps.values()))
    mounts: dict[str, Any] = {f"/{name}": app for name, app in apps.items()}
    mounts["/identity"] = IdentityStub()
    return PrefixDispatcher(mounts)


def _settings(args: argparse.Namespace, **flags: Any) -> config.Settings:
    path = getattr(args, "sub_config", None) or args.config
    try:
        return config.load(path, os.environ, **flags)
    except (OSError, ValueError) as exc:
        raise SystemExit(f"stowage: cannot read settings: {exc}") from exc


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    services = args.services.split(",") if args.services else list(ALL_SERVICES)
    settings = _settings(args, database=args.database, bind=args.bind, services=services)
    db = Database(settings.database)
    print(f"stowage: upgrading schema on {db.backend} ...", file=sys.stderr, flush=True)
    schema.upgrade(db)
    # An explicit single service is a drop-in for the upstream one, at `/`.
    app = build_asgi(settings, db, at_root=bool(args.services))
    host, _, port = settings.bind.rpartition(":")
    print(f"stowage: serving {', '.join(settings.services)} on http://{settings.bind}",
          file=sys.stderr, flush=True)
    uvicorn.run(app, host=host or "127.0.0.1", port=int(port), log_level=args.log_level,
                access_log=args.log_level == "debug")
    return 0


def _manage(args: argparse.Namespace) -> int:
    settings = _settings(args, database=args.database)
    db = Database(settings.database)
    print(f"stowage: upgrading schema of {db.backend} database ...", file=sys.stderr)
    schema.upgrade(db)
    print("stowage: schema is at head", file=sys.stderr)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: "
                        "%(message)s")
    args = _parser().parse_args(argv)
    if args.command == "serve":
        return _serve(args)
    return _manage(args)
