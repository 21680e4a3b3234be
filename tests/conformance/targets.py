"""How to configure and launch each target server.

Two targets speak the same API and get equivalent configuration:

    stowage    python -m stowage serve ... --config stowage.toml
    upstream   gunicorn placement.wsgi.api:application, configured by a
               placement.conf in $OS_PLACEMENT_CONFIG_DIR

The upstream target runs the real upstream placement so that the bridge's
fixtures can be validated against the implementation the YAML files were
written for. It needs a venv with upstream's full dependencies, at
$CONFORMANCE_UPSTREAM_VENV (default /tmp/pvenv)::

    python3 -m venv /tmp/pvenv
    /tmp/pvenv/bin/pip install openstack-placement==16.0.0 gunicorn \
        pymysql psycopg2-binary

``ServerOptions`` is the only thing a fixture may vary: policy flavour and
CORS, mirroring what upstream's fixtures do to oslo.config.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from .sidevenv import REPO_ROOT

__all__ = ["OPEN_POLICY_RULES", "Launch", "ServerOptions", "launch_for"]

UPSTREAM_VENV = Path(os.environ.get("CONFORMANCE_UPSTREAM_VENV", "/tmp/pvenv"))

# Every policy rule upstream placement 16.0.0 registers, except the base rule
# "admin_api" (enumerated once from placement.policies.list_rules()).
# OpenPolicyFixture sets each of them to "@" (anyone may).
OPEN_POLICY_RULES = (
    "service_api",
    "admin_or_service_api",
    "project_reader_api",
    "admin_or_project_reader_or_service_api",
    "placement:resource_providers:list",
    "placement:resource_providers:create",
    "placement:resource_providers:show",
    "placement:resource_providers:update",
    "placement:resource_providers:delete",
    "placement:resource_classes:list",
    "placement:resource_classes:create",
    "placement:resource_classes:show",
    "placement:resource_classes:update",
    "placement:resource_classes:delete",
    "placement:resource_providers:inventories:list",
    "placement:resource_providers:inventories:create",
    "placement:resource_providers:inventories:show",
    "placement:resource_providers:inventories:update",
    "placement:resource_providers:inventories:delete",
    "placement:resource_providers:aggregates:list",
    "placement:resource_providers:aggregates:update",
    "placement:resource_providers:usages",
    "placement:usages",
    "placement:traits:list",
    "placement:traits:show",
    "placement:traits:update",
    "placement:traits:delete",
    "placement:resource_providers:traits:list",
    "placement:resource_providers:traits:update",
    "placement:resource_providers:traits:delete",
    "placement:allocations:manage",
    "placement:allocations:list",
    "placement:allocations:update",
    "placement:allocations:delete",
    "placement:resource_providers:allocations:list",
    "placement:allocation_candidates:list",
    "placement:reshaper:reshape",
)

CORS_ALLOWED_ORIGIN = "http://valid.example.com"
CORS_ALLOW_HEADERS = ("openstack-api-version",)


@dataclass(frozen=True)
class ServerOptions:
    """What a fixture class asks of its server."""

    enforce_new_defaults: bool = False  # upstream's secure RBAC defaults
    open_policy: bool = False           # every rule but admin_api is "@"
    cors: bool = False                  # CORS middleware on


@dataclass(frozen=True)
class Launch:
    """A command line ready for subprocess.Popen."""

    argv: list[str]
    env: dict[str, str]
    cwd: Path


def _write_policy(workdir: Path) -> Path:
    path = workdir / "policy.yaml"
    path.write_text(yaml.safe_dump({rule: "@" for rule in OPEN_POLICY_RULES}))
    return path


def _toml_list(values: tuple[str, ...]) -> str:
    return "[" + ", ".join(json.dumps(v) for v in values) + "]"


def _stowage(port: int, db_url: str, opts: ServerOptions,
             workdir: Path) -> Launch:
    lines = ["[api]", 'auth_strategy = "noauth2"', "", "[policy]",
             f"enforce_new_defaults = {str(opts.enforce_new_defaults).lower()}"]
    if opts.open_policy:
        lines.append(f"file = {json.dumps(str(_write_policy(workdir)))}")
    if opts.cors:
        lines += ["", "[cors]",
                  f"allowed_origin = {_toml_list((CORS_ALLOWED_ORIGIN,))}",
                  f"allow_headers = {_toml_list(CORS_ALLOW_HEADERS)}"]
    lines += ["", "[placement]", "randomize_allocation_candidates = false"]
    config = workdir / "stowage.toml"
    config.write_text("\n".join(lines) + "\n")
    env = dict(os.environ)
    src = str(REPO_ROOT / "src")
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (src, env.get("PYTHONPATH", "")) if p)
    argv = [sys.executable, "-m", "stowage", "serve",
            "--services", "placement", "--bind", f"127.0.0.1:{port}",
            "--database", db_url, "--config", str(config)]
    return Launch(argv, env, REPO_ROOT)


def _upstream_url(db_url: str) -> str:
    """Upstream placement's SQL inserts read ``cursor.lastrowid``, which the
    psycopg (3) driver lacks; upstream is only supported on psycopg2."""
    return db_url.replace("postgresql+psycopg://", "postgresql+psycopg2://", 1)


def _upstream(port: int, db_url: str, opts: ServerOptions,
              workdir: Path) -> Launch:
    lines = ["[api]", "auth_strategy = noauth2", "",
             "[placement_database]", f"connection = {_upstream_url(db_url)}",
             "sync_on_startup = True", "",
             "[oslo_policy]",
             f"enforce_new_defaults = {opts.enforce_new_defaults}"]
    if opts.open_policy:
        lines.append(f"policy_file = {_write_policy(workdir)}")
    if opts.cors:
        lines += ["", "[cors]", f"allowed_origin = {CORS_ALLOWED_ORIGIN}",
                  f"allow_headers = {','.join(CORS_ALLOW_HEADERS)}"]
    lines += ["", "[placement]", "randomize_allocation_candidates = False"]
    (workdir / "placement.conf").write_text("\n".join(lines) + "\n")
    env = dict(os.environ, OS_PLACEMENT_CONFIG_DIR=str(workdir))
    env.pop("PYTHONPATH", None)
    argv = [str(UPSTREAM_VENV / "bin" / "gunicorn"),
            "-b", f"127.0.0.1:{port}", "-w", "1",
            "placement.wsgi.api:application"]
    return Launch(argv, env, workdir)


def launch_for(target: str, port: int, db_url: str, opts: ServerOptions,
               workdir: Path) -> Launch:
    """Write the target's config into ``workdir`` and return its command."""
    if target == "stowage":
        return _stowage(port, db_url, opts, workdir)
    if target == "upstream":
        return _upstream(port, db_url, opts, workdir)
    raise ValueError(f"unknown target {target!r}")
