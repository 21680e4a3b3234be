"""The `stowage` command: serve the services, run the control plane's workers, manage.

`stowage serve` runs the HTTP services (and, by default, the whole control
plane in the same process); `stowage conductor`, `stowage scheduler` and
`stowage agent` each run one role of the control plane on its own, talking
to the others over RabbitMQ (`transport_url`), as Nova's services do.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import socket
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from stowage import config
from stowage.db import Database, schema

if TYPE_CHECKING:
    from stowage.compute.cells import Cells
    from stowage.placement_conf import PlacementConf

__all__ = ["main", "asgi_from_env", "build_asgi", "plane_of"]

ALL_SERVICES = ("placement", "compute", "image", "network")
# The control plane's worker commands and the role each runs (compute/runtime.py).
WORKERS = {"conductor": "conductor", "scheduler": "scheduler", "agent": "compute"}
# How `stowage serve --workers N` hands its resolved arguments to worker
# processes: uvicorn starts each worker by importing `asgi_from_env`.
WORKER_ARGS_ENV = "STOWAGE_SERVE_WORKER_ARGS"


def _parser() -> argparse.ArgumentParser:
    from stowage import __version__

    p = argparse.ArgumentParser(prog="stowage", description=__doc__)
    p.add_argument("--version", action="version", version=f"stowage {__version__}")
    p.add_argument("--config", help="TOML settings file")
    p.add_argument("--placement-config", dest="placement_config",
                   help="upstream Placement's placement.conf (oslo.config INI), read under "
                        "--config's settings (docs/placement-conf.md)")
    sub = p.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the services in one process")
    serve.add_argument("--services", help="comma-separated services; one service is "
                       f"served at the root path. Known: {', '.join(ALL_SERVICES)}")
    serve.add_argument("--bind", help="HOST:PORT to listen on (default 127.0.0.1:8780)")
    serve.add_argument("--placement-config", dest="sub_placement_config",
                       help="upstream Placement's placement.conf (oslo.config INI); "
                            "--config's settings win over it (docs/placement-conf.md)")
    _common_flags(serve)
    serve.add_argument("--workers", type=int, default=1,
                       help="worker processes sharing the port (default 1)")
    serve.add_argument("--sim-hosts", type=int, dest="sim_hosts",
                       help="start N simulated compute hosts (host1..hostN)")
    serve.add_argument("--hosts-file", dest="hosts_file",
                       help="TOML or YAML file describing simulated hosts one by one")
    serve.add_argument("--demo", action="store_true",
                       help="first create DevStack's defaults, whichever is missing: flavors "
                            "m1.tiny..m1.xlarge, a cirros image, `private` and `public` networks "
                            "and router1 (`stowage manage bootstrap`)")
    _worker_parsers(sub)
    manage = sub.add_parser("manage", help="operator tasks")
    manage_sub = manage.add_subparsers(dest="area", required=True)
    from stowage.manage_bootstrap import add_parser as add_bootstrap
    from stowage.manage_db import add_parser as add_db

    add_db(manage_sub)
    add_bootstrap(manage_sub)
    identity = manage_sub.add_parser("identity", help="built-in identity service")
    identity.add_argument("action", choices=["hash-password"],
                          help="print the password_hash of a password read from stdin")
    from stowage.manage_capacity import add_parser as add_capacity
    from stowage.manage_cells import add_parser as add_cells
    from stowage.manage_hosts import add_parser as add_hosts
    from stowage.manage_keystone import add_parser as add_keystone
    from stowage.manage_placement import add_parser

    add_parser(manage_sub)
    add_cells(manage_sub)
    add_hosts(manage_sub)
    add_capacity(manage_sub)
    add_keystone(manage_sub)
    return p


def _common_flags(p: argparse.ArgumentParser) -> None:
    """The flags every serving command takes; each overrides its setting."""
    p.add_argument("--database", help="SQLAlchemy URL (default sqlite:///stowage.db)")
    p.add_argument("--transport-url", dest="transport_url",
                   help="rabbit://user:pass@host:5672/vhost (default: in-process)")
    p.add_argument("--config", dest="sub_config", help=argparse.SUPPRESS)
    p.add_argument("--log-level", dest="log_level",
                   help="debug, info (the default), warning, error")


def _worker_parsers(sub: Any) -> None:
    helps = {"conductor": "run a conductor (move operations, their periodic jobs)",
             "scheduler": "run a scheduler (host selection)",
             "agent": "run the compute agents of one or more (simulated) hosts"}
    for name, text in helps.items():
        worker = sub.add_parser(name, help=text + " over the transport_url's broker")
        _common_flags(worker)
        if name != "agent":
            continue
        worker.add_argument("--host", action="append", dest="hosts", default=[],
                            help="a simulated host of this name, with default resources "
                                 "(repeatable)")
        worker.add_argument("--sim-hosts", type=int, dest="sim_hosts",
                            help="N simulated hosts host1..hostN")
        worker.add_argument("--hosts-file", dest="hosts_file",
                            help="TOML or YAML file describing simulated hosts one by one")


def build_asgi(settings: config.Settings, db: Database, at_root: bool,
               cells: Cells | None = None) -> Any:
    """One ASGI app: a single service at `/` when `at_root`, else each under `/<name>`.
    `cells` (the deployment's, `cells.bootstrap`) is read from `db` when not given."""
    from stowage.compute.api.app import build_app as compute_app
    from stowage.image.app import build_app as image_app
    from stowage.network.app import build_app as network_app
    from stowage.placement.app import build_app as placement_app

    builders = {"placement": placement_app, "compute": compute_app, "image": image_app,
                "network": network_app}
    unknown = set(settings.services) - set(builders)
    if unknown:
        raise SystemExit(f"stowage: unknown service(s) {sorted(unknown)}; "
                         f"choose from {', '.join(ALL_SERVICES)}")
    apps = {name: builders[name](settings, db) for name in settings.services}
    if "compute" in apps:
        from stowage.compute.cells import Cells, bootstrap_with

        if cells is None:
            # An embedder (a benchmark, a test) that upgraded the schema only: its
            # database gets its cell1 here, as `serve` would have made it.
            cells = Cells(db)
            if not cells.all():
                cells = bootstrap_with(db, settings.compute)
        apps["compute"].state.cells = cells
        apps["compute"].state.plane = _control_plane(settings, db, apps.get("placement"),
                                                     apps.get("network"), cells)
    if "network" in apps:
        apps["network"].state.notify = _compute_notifier(settings, db, apps.get("compute"))
    from stowage.metrics.endpoint import with_metrics

    if at_root and len(apps) == 1:
        return with_metrics(settings, apps)
    mounts: dict[str, Any] = {f"/{name}": app for name, app in apps.items()}
    if settings.api.auth_strategy != "keystone":
        # With Keystone, clients find every endpoint in Keystone's catalog: a stand-in
        # identity service here would only contradict it.
        mounts["/identity"] = _identity(settings, db)
    return with_metrics(settings, apps, mounts, fallback=_root(list(mounts), _dashboard(
        settings, db, apps, mounts.get("/identity"))))


def _dashboard(settings: config.Settings, db: Database, apps: dict[str, Any],
               identity_app: Any) -> Any:
    """The operators' dashboard over the services built here (docs/dashboard.md)."""
    from stowage.web.dashboard import DashboardApp
    from stowage.web.dashboard.world import world_of

    return DashboardApp(world_of(settings, db, apps, identity_app))


def _root(prefixes: list[str], dashboard: Any = None) -> Any:
    """What answers `/` and unknown paths: the mounted services, as the catalog names them
    (JSON), and the dashboard for browsers."""
    from stowage.identity.catalog import name_and_path
    from stowage.web.root import MountedService, RootApp

    services = []
    for prefix in prefixes:
        kind = prefix.strip("/")
        name, endpoint = name_and_path(kind)
        services.append(MountedService(kind, name, prefix, endpoint))
    return RootApp(services, dashboard)


def _compute_notifier(settings: config.Settings, db: Database, compute_app: Any) -> Any:
    """How the Network service reports a deleted bound port: to this process's Compute,
    else as `[nova]`'s service user or at `[network] compute_url`, else to nobody."""
    from stowage.identity.service_auth import service_clients
    from stowage.network import compute_events
    from stowage.web.service_clients import COMPUTE

    clients = service_clients(settings, db)
    try:
        notify = compute_events.connect(clients, compute_app)
    except ValueError as exc:
        raise SystemExit(f"stowage: {exc}") from exc
    if compute_app is None and notify is not None:
        print(f"stowage: the Network service reports to compute at "
              f"{clients.way(COMPUTE, served_here=False)}", file=sys.stderr, flush=True)
    return notify


def _identity(settings: config.Settings, db: Database) -> Any:
    """The built-in identity service, or (noauth2) the discovery stand-in."""
    if settings.api.auth_strategy != "builtin-identity":
        from stowage.web.identity import IdentityStub

        return IdentityStub()
    from stowage.identity.app import build_app

    try:
        return build_app(settings, db)
    except ValueError as exc:
        raise SystemExit(f"stowage: cannot build the identity service: {exc}") from exc


def _control_plane(settings: config.Settings, db: Database, placement_app: Any,
                   network_app: Any, cells: Cells) -> Any:
    """What the Compute API needs to hand work on, started.

    In-process (no `transport_url`), or with simulated hosts in this process,
    the whole control plane runs here: conductor, scheduler and agents. With
    a broker and no hosts here, only the API's side: a transport to cast and
    call on, Placement and Network; `stowage conductor|scheduler|agent` run
    the rest.
    """
    from stowage.compute.runtime import ALL_ROLES, ControlPlane
    from stowage.messaging import get_transport
    from stowage.messaging.local import LocalTransport

    placement, network = _clients(settings, db, placement_app, network_app)
    transport = get_transport(settings.transport_url, namespace=settings.control_exchange)
    has_hosts = bool(settings.compute.sim_hosts or settings.compute.hosts_file)
    everything = isinstance(transport, LocalTransport) or has_hosts
    plane = ControlPlane(settings.compute, db, placement, network, transport=transport,
                         roles=ALL_ROLES if everything else (),
                         cell_db=cells.database(cells.default()), cells=cells,
                         image_settings=settings)
    try:
        plane.start()
    except ValueError as exc:  # a host the deployment cannot run (e.g. an unknown cell)
        plane.stop()
        raise SystemExit(f"stowage: {exc}") from exc
    return plane


def _clients(settings: config.Settings, db: Database, placement_app: Any,
             network_app: Any) -> tuple[Any, Any]:
    """Placement (required) and Network (optional) clients: in-process when this process
    serves them, else as the `[placement]` / `[network]` service user (Keystone's
    catalog) or at `[compute] placement_url` / `network_url` (web/service_clients.py).

    Without Network, servers can only be booted with `networks: none` (or
    without networks before 2.37).
    """
    from stowage.identity.service_auth import service_clients
    from stowage.network.client import NetworkClient
    from stowage.placement.client import PlacementClient
    from stowage.web.service_clients import NETWORK, PLACEMENT

    clients = service_clients(settings, db)
    try:
        placement = PlacementClient.connect(clients, placement_app)
        network = NetworkClient.connect(clients, network_app)
    except ValueError as exc:
        raise SystemExit(f"stowage: {exc}") from exc
    for peer, app, client in ((PLACEMENT, placement_app, placement),
                              (NETWORK, network_app, network)):
        if app is None and client is not None:
            print(f"stowage: compute reaches {peer.service_type} at "
                  f"{clients.way(peer, served_here=False)}", file=sys.stderr, flush=True)
    if placement is None:
        raise SystemExit("stowage: compute needs Placement: serve both, set [placement] "
                         "auth_type and its service user (Keystone's catalog), or set "
                         "[compute] placement_url in the settings file")
    return placement, network


def plane_of(app: Any) -> Any:
    """The ControlPlane inside an app built by `build_asgi` (tests and benchmarks)."""
    candidates = [app] + [mounted for _, mounted in getattr(app, "mounts", [])]
    for candidate in candidates:
        plane = getattr(getattr(candidate, "state", None), "plane", None)
        if plane is not None:
            return plane
    return None


def asgi_from_env() -> Any:
    """App factory for uvicorn's worker processes (`--workers N` with N > 1).

    uvicorn can only start several workers from an import string, so the parent
    passes its parsed flags in one environment variable; each worker rebuilds
    the same settings and opens its own database engine.
    """
    raw = json.loads(os.environ[WORKER_ARGS_ENV])
    _log_format()
    upstream = _placement_conf(raw.get("placement_config"))
    # The parent has reported what the file ignores; workers only log where it says.
    _log_setup(raw.get("log_level", "info"), upstream, report=False)
    settings = config.load(raw["config"], os.environ,
                           placement=upstream.settings if upstream else None,
                           database=raw["database"], bind=raw["bind"],
                           services=raw["services"], transport_url=raw["transport_url"])
    return build_asgi(settings, Database(settings.database), at_root=raw["at_root"])


def _settings(args: argparse.Namespace, upstream: PlacementConf | None = None,
              **flags: Any) -> config.Settings:
    """Settings from the files, the environment and `flags`; a mistake in any of them
    ends the command with status 2, as a bad command line does. Without `upstream`
    (`serve` reads it first, for its log), placement.conf is read here and what it
    ignores reported at once."""
    path = getattr(args, "sub_config", None) or args.config
    if upstream is None:
        upstream = _placement_conf(_placement_path(args))
        if upstream is not None:
            upstream.log_notes(logging.getLogger("stowage.placement_conf"))
    try:
        return config.load(path, os.environ,
                           placement=upstream.settings if upstream else None, **flags)
    except (OSError, ValueError) as exc:
        _refuse(f"cannot read settings: {exc}")


def _refuse(message: str) -> NoReturn:
    print(f"stowage: {message}", file=sys.stderr, flush=True)
    raise SystemExit(2)


def _placement_path(args: argparse.Namespace) -> str | None:
    """`--placement-config`, given after the command (serve) or before it (any)."""
    path: str | None = getattr(args, "sub_placement_config", None) or args.placement_config
    return path


def _placement_conf(path: str | None) -> PlacementConf | None:
    """Upstream's placement.conf, read and mapped (`--placement-config`)."""
    if not path:
        return None
    from stowage.placement_conf import read

    try:
        return read(path)
    except (OSError, ValueError) as exc:
        _refuse(f"cannot read {path}: {exc}")


def _listen(host: str, port: int) -> socket.socket:
    """The shared listening socket for `--workers N`, bound here, not by uvicorn.

    uvicorn's own (`Config.bind_socket`) leaves `proto` at 0; accepted sockets
    inherit it and asyncio then never sets TCP_NODELAY, so every keep-alive
    response waits ~40 ms for the client's delayed ACK (uvicorn issue #3149).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.set_inheritable(True)
    return sock


def _banner(settings: config.Settings, at_root: bool, workers: int) -> str:
    """What `serve` says it serves: every service with its endpoint, identity included
    whenever it is mounted (a single service at `/` mounts nothing else, and Keystone's
    strategy no stand-in: the Keystone that validates tokens is named instead)."""
    from stowage.identity.catalog import name_and_path

    base = f"http://{settings.bind}"
    lines = [f"stowage: serving on {base} with {workers} worker(s):"]
    keystone = settings.api.auth_strategy == "keystone"
    if at_root and len(settings.services) == 1:
        lines.append(f"  {settings.services[0]:<10} {base}/")
    else:
        for kind in (*settings.services, *(() if keystone else ("identity",))):
            note = ""
            if kind == "identity" and settings.api.auth_strategy != "builtin-identity":
                note = "  (version discovery only: [api] auth_strategy is noauth2)"
            lines.append(f"  {kind:<10} {base}{name_and_path(kind)[1]}{note}")
    if keystone:
        lines.append(f"  tokens validated by Keystone at {settings.keystone_authtoken.auth_url}")
    return "\n".join(lines)


def _log_level(level: str) -> None:
    """The root logger at `--log-level` (the request log is INFO). httpx only at WARNING,
    or every request to Placement would be written twice; Alembic too, or a new
    database's start would list every migration of every cell."""
    logging.getLogger().setLevel(level.upper())
    for chatty in ("httpx", "alembic"):
        logging.getLogger(chatty).setLevel(max(logging.WARNING, logging.getLogger().level))


def _log_setup(flag: str | None, upstream: PlacementConf | None, report: bool = True) -> str:
    """The log as `--log-level` and placement.conf's oslo.log options ask; returns the
    level. The flag wins over `[DEFAULT] debug`; `log_config_append` (a logging
    configuration file) replaces the rest, as in oslo.log."""
    import logging.config

    options = upstream.log if upstream else None
    level = flag or ("debug" if options and options.debug else "info")
    _log_level(level)
    if options and options.log_config_append:
        try:
            logging.config.fileConfig(options.log_config_append,
                                      disable_existing_loggers=False)
        except (OSError, ValueError, KeyError, RuntimeError) as exc:
            _refuse(f"cannot read [DEFAULT] log_config_append "
                    f"{options.log_config_append}: {exc!r}")
    elif options and (options.log_file or options.log_date_format):
        _log_to(options.log_file, options.log_date_format, options.use_stderr)
    if upstream and report:
        upstream.log_notes(logging.getLogger("stowage.placement_conf"))
    return level


def _log_to(path: str | None, date_format: str | None, also_stderr: bool) -> None:
    """oslo.log's log_file (and log_date_format): records go to the file, and to
    stderr as well only with use_stderr."""
    root = logging.getLogger()
    formatter = logging.Formatter(_LOG_FORMAT, date_format)
    for handler in root.handlers:
        handler.setFormatter(formatter)
    if not path:
        return
    try:
        to_file = logging.FileHandler(path)
    except OSError as exc:
        _refuse(f"cannot open [DEFAULT] log_file {path}: {exc}")
    to_file.setFormatter(formatter)
    if not also_stderr:
        for handler in list(root.handlers):
            root.removeHandler(handler)
    root.addHandler(to_file)


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from stowage.web.server import raise_open_files_limit, uvicorn_options

    services = args.services.split(",") if args.services else list(ALL_SERVICES)
    upstream = _placement_conf(_placement_path(args))
    settings = _settings(args, upstream, database=args.database, bind=args.bind,
                         services=services, sim_hosts=args.sim_hosts,
                         hosts_file=args.hosts_file, transport_url=args.transport_url)
    args.log_level = _log_setup(args.log_level, upstream)
    if args.workers > 1 and "compute" in settings.services:
        _check_workers(settings)
    db = Database(settings.database)
    print(f"stowage: upgrading schema on {db.backend} ...", file=sys.stderr, flush=True)
    schema.upgrade(db)
    cells = _cells(settings, db) if "compute" in settings.services else None
    if args.demo:
        from stowage.manage_bootstrap import bootstrap

        exist = "the demo flavors, image, networks and router exist"
        for line in bootstrap(settings, db) or [exist]:
            print(f"stowage: {line}", file=sys.stderr, flush=True)
    host, _, port = settings.bind.rpartition(":")
    # Every worker gets the same connection limits and timeouts (web/server.py).
    run: dict[str, Any] = {"host": host or "127.0.0.1", "port": int(port),
                           "log_level": args.log_level,
                           "access_log": args.log_level == "debug",
                           **uvicorn_options(settings.api)}
    short = raise_open_files_limit(settings.api)
    if short:
        print(f"stowage: {short}", file=sys.stderr, flush=True)
    print(_banner(settings, bool(args.services), max(args.workers, 1)), file=sys.stderr,
          flush=True)
    if args.workers > 1:
        db.dispose()
        os.environ[WORKER_ARGS_ENV] = json.dumps({
            "config": getattr(args, "sub_config", None) or args.config,
            "database": settings.database, "bind": settings.bind,
            "transport_url": settings.transport_url,
            "services": list(settings.services), "at_root": bool(args.services),
            "log_level": args.log_level, "placement_config": _placement_path(args)})
        from uvicorn.supervisors import Multiprocess

        from stowage.metrics.workers import shared_directory

        workers = uvicorn.Config("stowage.cli:asgi_from_env", factory=True,
                                 workers=args.workers, **run)
        with shared_directory():  # every worker's counters, summed by /metrics
            Multiprocess(workers, sockets=[_listen(run["host"], run["port"])]).run()
        return 0
    # An explicit single service is a drop-in for the upstream one, at `/`.
    app = build_asgi(settings, db, at_root=bool(args.services), cells=cells)
    uvicorn.run(app, **run)
    return 0


def _cells(settings: config.Settings, db: Database) -> Cells:
    """The deployment's cells: cell1 made on a fresh database, each cell's schema at head."""
    from stowage.compute.cells import bootstrap_with

    try:
        cells = bootstrap_with(db, settings.compute)
    except ValueError as exc:  # a cell database the settings or the files refuse
        raise SystemExit(f"stowage: {exc}") from exc
    for cell in cells.all():
        where = cells.location(cell) or "the API database"
        print(f"stowage: {cell.name} keeps its records in {where}", file=sys.stderr, flush=True)
    if any(cell.database_connection.startswith("sqlite") for cell in cells.all()):
        # Deleting the API file alone would leave the cells' records behind.
        print("stowage: to start over, `stowage manage db reset --yes` removes the API "
              "database and these cell files", file=sys.stderr, flush=True)
    return cells


def _check_workers(settings: config.Settings) -> None:
    """`serve --workers N` with compute: each worker is an API process; the control
    plane must then run elsewhere, reached over a broker."""
    if settings.compute.sim_hosts or settings.compute.hosts_file:
        raise SystemExit("stowage: simulated hosts live in one process; use --workers 1 with "
                         "--sim-hosts/--hosts-file, or run them in `stowage agent`")
    if not settings.transport_url.startswith("rabbit://"):
        raise SystemExit("stowage: --workers N with compute needs a broker: the in-process "
                         "transport cannot span worker processes. Use --workers 1, or set "
                         "transport_url (--transport-url rabbit://...) and run `stowage "
                         "conductor`, `stowage scheduler` and `stowage agent` beside it")


def _worker(args: argparse.Namespace) -> int:
    """`stowage conductor|scheduler|agent`: one role of the control plane, until signalled."""
    from stowage.compute.runtime import ControlPlane
    from stowage.compute.worker import run_until_signalled
    from stowage.messaging import get_transport

    _log_level(args.log_level or "info")
    hosts = {"sim_hosts": args.sim_hosts, "hosts_file": args.hosts_file} \
        if args.command == "agent" else {}
    settings = _settings(args, database=args.database, transport_url=args.transport_url,
                         **hosts)
    if not settings.transport_url.startswith("rabbit://"):
        raise SystemExit(f"stowage {args.command}: set transport_url (--transport-url "
                         "rabbit://...): on the in-process transport nobody would reach it")
    db = Database(settings.database)
    if not schema.is_current(db):
        raise SystemExit(f"stowage {args.command}: the database schema is not at head; run "
                         "`stowage manage db upgrade` (or start `stowage serve`) first")
    from stowage.compute.cells import Cells

    cells = Cells(db)
    if not cells.all():
        raise SystemExit(f"stowage {args.command}: the deployment has no cell yet; run "
                         "`stowage manage db upgrade` (or start `stowage serve`) first")
    placement, network = _clients(settings, db, None, None)
    plane = ControlPlane(settings.compute, db, placement, network,
                         cell_db=cells.database(cells.default()), cells=cells,
                         image_settings=settings,
                         transport=get_transport(settings.transport_url,
                                                 namespace=settings.control_exchange),
                         roles=(WORKERS[args.command],),
                         host_names=getattr(args, "hosts", ()))
    if args.command == "agent" and not plane.configured_hosts():
        raise SystemExit("stowage agent: no hosts; give --host NAME, --sim-hosts N or "
                         "--hosts-file FILE")
    from stowage.metrics.workers import serve_worker_metrics

    serve_worker_metrics(settings.metrics)
    return run_until_signalled(plane, f"stowage {args.command}")


def _hash_password() -> int:
    """`manage identity hash-password`: a hash for `[[identity.users]] password_hash`."""
    import getpass

    from stowage.identity.passwords import hash_password

    password = (getpass.getpass("Password: ") if sys.stdin.isatty()
                else sys.stdin.readline().rstrip("\n"))
    if not password:
        print("stowage: empty password", file=sys.stderr)
        return 1
    print(hash_password(password))
    return 0


def _manage(args: argparse.Namespace) -> int:
    if args.area == "identity":
        return _hash_password()
    if args.area == "keystone":  # Keystone's API only: no settings, no database
        from stowage.manage_keystone import run as run_keystone

        return run_keystone(args)
    if args.area == "db" and args.action == "reset":
        from stowage.manage_db import reset

        return reset(_settings(args, database=args.database).database, args.yes)
    settings = _settings(args, database=args.database)
    db = Database(settings.database)
    if args.area == "placement":
        from stowage.manage_placement import run

        return run(args, settings, db)
    if args.area == "cell":
        from stowage.manage_cells import run as run_cells

        return run_cells(args, settings, db)
    if args.area == "host":
        from stowage.manage_hosts import run as run_hosts

        return run_hosts(args, settings, db)
    if args.area == "capacity":
        from stowage.manage_capacity import run as run_capacity

        return run_capacity(args, settings, db)
    if args.area == "bootstrap":
        from stowage.manage_bootstrap import run as run_bootstrap

        return run_bootstrap(settings, db)
    print(f"stowage: upgrading schema of {db.backend} database ...", file=sys.stderr)
    schema.upgrade(db)
    _cells(settings, db)
    print("stowage: schema is at head", file=sys.stderr)
    return 0


_LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def _log_format() -> None:
    logging.basicConfig(level=logging.WARNING, format=_LOG_FORMAT)


def main(argv: Sequence[str] | None = None) -> int:
    _log_format()
    args = _parser().parse_args(argv)
    if args.command == "serve":
        return _serve(args)
    if args.command in WORKERS:
        return _worker(args)
    return _manage(args)
