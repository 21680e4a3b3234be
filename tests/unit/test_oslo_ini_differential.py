"""stowage's reading of a placement.conf against oslo.config's own, on the same files.

oslo.config is in the test environment (python-openstackclient brings it);
the options stowage reads are declared here with the types and choices
Placement, oslo.log, oslo.policy, oslo.middleware's CORS and
keystonemiddleware give them, each file is loaded by oslo.config, and every
value must come out as `placement_conf.read` maps it. The files: the
DevStack- and kolla-shaped examples and one of syntax corner cases.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from stowage.oslo_ini import IniError
from stowage.placement_conf import read

cfg = pytest.importorskip("oslo_config.cfg")

CONFS = Path(__file__).parent / "placement_confs"

# (section, option, oslo.config type, where placement_conf.read puts it)
OPTIONS: list[tuple[str, str, Any, tuple[str, ...]]] = [
    ("placement_database", "connection", "str", ("settings", "database")),
    ("api", "auth_strategy", ("keystone", "noauth2"), ("settings", "api", "auth_strategy")),
    ("placement", "randomize_allocation_candidates", "bool",
     ("settings", "placement", "randomize_allocation_candidates")),
    ("placement", "max_allocation_candidates", "int",
     ("settings", "placement", "max_allocation_candidates")),
    ("oslo_policy", "enforce_new_defaults", "bool",
     ("settings", "policy", "enforce_new_defaults")),
    ("cors", "allowed_origin", "list", ("settings", "cors", "allowed_origin")),
    ("cors", "max_age", "int", ("settings", "cors", "max_age")),
    ("cors", "allow_credentials", "bool", ("settings", "cors", "allow_credentials")),
    ("DEFAULT", "debug", "bool", ("log", "debug")),
    ("keystone_authtoken", "www_authenticate_uri", "str",
     ("keystone_authtoken", "www_authenticate_uri")),
    ("keystone_authtoken", "memcached_servers", "list",
     ("keystone_authtoken", "memcached_servers")),
    ("keystone_authtoken", "token_cache_time", "int",
     ("keystone_authtoken", "token_cache_time")),
    ("keystone_authtoken", "service_token_roles", "list",
     ("keystone_authtoken", "service_token_roles")),
    ("keystone_authtoken", "service_token_roles_required", "bool",
     ("keystone_authtoken", "service_token_roles_required")),
    ("keystone_authtoken", "password", "str", ("keystone_authtoken", "password")),
    ("keystone_authtoken", "auth_url", "str", ("keystone_authtoken", "auth_url")),
]

DEPRECATED = {("keystone_authtoken", "memcached_servers"): "memcache_servers",
              ("keystone_authtoken", "www_authenticate_uri"): "auth_uri"}


def _opt(section: str, name: str, kind: Any) -> Any:
    old = DEPRECATED.get((section, name))
    extra: dict[str, Any] = {"deprecated_name": old} if old else {}
    if section == "api":
        extra["deprecated_group"] = "DEFAULT"
    if isinstance(kind, tuple):
        return cfg.StrOpt(name, choices=kind, **extra)
    return {"str": cfg.StrOpt, "bool": cfg.BoolOpt, "int": cfg.IntOpt,
            "list": cfg.ListOpt}[kind](name, **extra)


def _oslo(path: Path) -> Any:
    conf = cfg.ConfigOpts()
    for section, name, kind, _ in OPTIONS:
        conf.register_opt(_opt(section, name, kind),
                          group=None if section == "DEFAULT" else section)
    conf.register_opt(cfg.StrOpt("state_path"))
    conf.register_opt(cfg.StrOpt("connection_parameters", default=""),
                      group="placement_database")
    conf(args=[], default_config_files=[str(path)], default_config_dirs=[], use_env=False)
    return conf


def _ours(conf: Any, where: tuple[str, ...]) -> Any:
    value: Any = conf
    for step in where:
        value = getattr(value, step) if not isinstance(value, dict) else value.get(step)
        if value is None:
            return None
    return list(value) if isinstance(value, tuple) else value


def _upstream(conf: Any, section: str, name: str) -> Any:
    return conf[name] if section == "DEFAULT" else conf[section][name]


CORNERS = """\
[DEFAULT]
Debug = true
debug = On
state_path = /srv/placement

[API]
auth_strategy: noauth2

[placement_database]
connection = "sqlite:///$state_path/p.db"

[placement]
max_allocation_candidates =   +250
randomize_allocation_candidates = NO
[cors]
allowed_origin = https://a.example,
  https://b.example ,
max_age = 60
allow_credentials = '1'
[keystone_authtoken]
auth_uri = https://old.example/identity
memcache_servers = m1:11211
password = pa$$word with # and ; inside
auth_url = ${state_path}/never-a-url
service_token_roles = service
service_token_roles_required = off
token_cache_time =
"""


@pytest.mark.parametrize("name", ["devstack.conf", "kolla.conf", "corners.conf"])
def test_every_value_reads_as_oslo_config_reads_it(tmp_path: Path, name: str) -> None:
    path = CONFS / name
    if name == "corners.conf":
        path = tmp_path / name
        path.write_text(CORNERS)
    upstream, ours = _oslo(path), read(str(path))
    for section, option, _, where in OPTIONS:
        theirs = _upstream(upstream, section, option)
        if where[0] == "settings" and section == "api":
            theirs = theirs or "keystone"  # upstream's default, made explicit
        params = upstream.placement_database.connection_parameters
        if option == "connection" and params:  # oslo.db appends them to the URL
            theirs += ("&" if "?" in theirs else "?") + params
        assert _ours(ours, where) == theirs, (section, option)


@pytest.mark.parametrize(("section", "text"), [
    ("placement", "[placement]\nrandomize_allocation_candidates = sometimes\n"),
    ("placement", "[placement]\nmax_allocation_candidates = 1.5\n"),
    ("api", "[api]\nauth_strategy = Keystone\n"),
    ("cors", "[cors]\nmax_age = sixty\n"),
    ("keystone_authtoken", "[keystone_authtoken]\ntoken_cache_time = 5m\n"),
])
def test_values_oslo_config_refuses_are_refused(tmp_path: Path, section: str,
                                                text: str) -> None:
    path = tmp_path / "bad.conf"
    path.write_text(textwrap.dedent(text))
    option = text.splitlines()[1].split("=")[0].strip()
    with pytest.raises(cfg.ConfigFileValueError):
        _upstream(_oslo(path), section, option)
    with pytest.raises(IniError, match=rf"\[{section}\] {option}: invalid value"):
        read(str(path))
