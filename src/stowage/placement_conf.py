"""Upstream Placement's `placement.conf`, mapped onto stowage's settings.

An operator who swaps upstream Placement for stowage keeps the file
(`stowage serve --services placement --placement-config FILE`). `read()`
turns it into:

- `settings`: a mapping shaped like stowage's own TOML settings file
  (`database`, `[api]`, `[placement]`, `[policy]`, `[cors]`), which
  `config.load` layers *under* that file (docs/placement-conf.md says why);
- `keystone_authtoken`: the `[keystone_authtoken]` section as
  keystonemiddleware names its options, typed as its options are; those
  stowage's Keystone strategy implements also go into `settings`, the others
  are warned about and dropped (a file deployment tools write must start);
- `log`: what oslo.log's `[DEFAULT]` options ask of the log;
- `notes`: what stowage ignores, each option once: WARNING for an option or
  section Placement does not know (a typo, or a leftover), or one whose value
  asks for something stowage does not do; INFO for options Placement has
  that make no difference here (pool sizes, log formats, `[profiler]`).

A value Placement would refuse (`debug = maybe`) is an `IniError` naming the
file, line, section and option, and stops the start.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stowage import oslo_ini
from stowage.config import KeystoneAuthtokenSettings
from stowage.keystone_authtoken_opts import RENAMED, SECTION, authtoken_options
from stowage.oslo_ini import IniError, IniFile, boolean, choice, integer, strings

__all__ = ["LogOptions", "PlacementConf", "read"]

_STR: Callable[[str], Any] = str

# Options read, per section: option -> (type, where in stowage's settings). The
# target is a (section, key) of the TOML settings, or ("", key) at its top.
_MAPPED: dict[str, dict[str, tuple[Callable[[str], Any], tuple[str, str]]]] = {
    "api": {"auth_strategy": (choice("keystone", "noauth2"), ("api", "auth_strategy"))},
    "placement": {
        "randomize_allocation_candidates": (boolean, ("placement",
                                                      "randomize_allocation_candidates")),
        "max_allocation_candidates": (integer, ("placement", "max_allocation_candidates")),
        "incomplete_consumer_project_id": (_STR, ("placement",
                                                  "incomplete_consumer_project_id")),
        "incomplete_consumer_user_id": (_STR, ("placement", "incomplete_consumer_user_id")),
    },
    "oslo_policy": {"enforce_new_defaults": (boolean, ("policy", "enforce_new_defaults"))},
    "cors": {
        "allowed_origin": (strings, ("cors", "allowed_origin")),
        "allow_credentials": (boolean, ("cors", "allow_credentials")),
        "expose_headers": (strings, ("cors", "expose_headers")),
        "max_age": (integer, ("cors", "max_age")),
        "allow_methods": (strings, ("cors", "allow_methods")),
        "allow_headers": (strings, ("cors", "allow_headers")),
    },
}

# Options read by code below rather than through _MAPPED.
_SPECIAL = {
    "DEFAULT": {"debug", "log_file", "logfile", "log_dir", "logdir", "log_config_append",
                "log_config", "log_date_format", "use_stderr", "auth_strategy"},
    "placement_database": {"connection", "connection_parameters"},
    "placement": {"allocation_candidates_generation_strategy", "policy_file"},
    "oslo_policy": {"policy_file", "enforce_scope"},
}

# Options Placement (with oslo.log, oslo.db's copy, oslo.policy) has, which make no
# difference to stowage: mentioned once at INFO.
_IGNORED = {
    "DEFAULT": {
        "tempdir", "pybasedir", "state_path", "log_options", "watch_log_file", "use_syslog",
        "use_journal", "syslog_log_facility", "use_json", "use_eventlog", "log_color",
        "log_rotate_interval", "log_rotate_interval_type", "max_logfile_count",
        "max_logfile_size_mb", "log_rotation_type", "logging_context_format_string",
        "logging_default_format_string", "logging_debug_format_suffix",
        "logging_exception_prefix", "logging_user_identity_format", "default_log_levels",
        "publish_errors", "instance_format", "instance_uuid_format", "rate_limit_interval",
        "rate_limit_burst", "rate_limit_except_level", "fatal_deprecations"},
    "placement_database": {
        "sqlite_synchronous", "slave_connection", "mysql_sql_mode", "connection_recycle_time",
        "max_pool_size", "max_retries", "retry_interval", "max_overflow", "connection_debug",
        "connection_trace", "pool_timeout", "sync_on_startup"},
    "placement": {"allocation_conflict_retry_count"},
    "oslo_policy": {
        "policy_default_rule", "policy_dirs", "remote_content_type",
        "remote_ssl_verify_server_crt", "remote_ssl_ca_crt_file",
        "remote_ssl_client_crt_file", "remote_ssl_client_key_file", "remote_timeout"},
}

# Sections deployment tools write that Placement does not read, or whose options
# change nothing here: mentioned once at INFO, whatever they hold.
_IGNORED_SECTIONS = ("profiler", "oslo_concurrency", "oslo_messaging_notifications",
                     "oslo_middleware", "workarounds", "audit", "keystone", "cache")

# oslo.policy's default policy_file: a missing file of this name is no error.
DEFAULT_POLICY_FILE = "policy.yaml"


@dataclass(frozen=True)
class LogOptions:
    """oslo.log's options of `[DEFAULT]` that stowage honours (see cli._log_setup)."""

    debug: bool | None = None
    log_file: str | None = None
    log_config_append: str | None = None
    log_date_format: str | None = None
    use_stderr: bool = False


@dataclass
class PlacementConf:
    """One placement.conf as stowage uses it: what to layer under the settings file,
    what the Keystone strategy needs, how to log, and what to tell the operator."""

    path: str
    settings: dict[str, Any] = field(default_factory=dict)
    keystone_authtoken: dict[str, Any] = field(default_factory=dict)
    log: LogOptions = LogOptions()
    notes: list[tuple[int, str]] = field(default_factory=list)

    def log_notes(self, logger: logging.Logger) -> None:
        """Each ignored option once, at the level `read` chose for it."""
        for level, text in self.notes:
            logger.log(level, "%s", text)


def _typed(ini: IniFile, section: str, key: str, kind: Callable[[str], Any]) -> Any:
    """The option's value converted as oslo.config would; IniError naming it if refused."""
    raw = ini.get(section, key)
    if raw is None:
        return None
    try:
        return kind(raw)
    except ValueError as exc:
        raise IniError(f"{ini.where(section, key)}: invalid value: {exc}") from None


def _put(conf: PlacementConf, target: tuple[str, str], value: Any) -> None:
    section, key = target
    if section:
        conf.settings.setdefault(section, {})[key] = value
    else:
        conf.settings[key] = value


def _database(ini: IniFile, conf: PlacementConf) -> None:
    """`[placement_database] connection`, with oslo.db's `connection_parameters` appended
    to its query string. Placement has no `[database]` fallback: that group is unknown."""
    url = ini.get("placement_database", "connection")
    if url is None:
        return
    params = ini.get("placement_database", "connection_parameters")
    if params:
        url += ("&" if "?" in url else "?") + params
    _put(conf, ("", "database"), url)


def _auth_strategy(ini: IniFile, conf: PlacementConf) -> None:
    """`[api] auth_strategy`, or its deprecated `[DEFAULT]` spelling; upstream's default
    is keystone, so a file that names none asks for Keystone."""
    kind = choice("keystone", "noauth2")
    value = _typed(ini, "api", "auth_strategy", kind)
    if value is None:
        value = _typed(ini, "DEFAULT", "auth_strategy", kind)
        if value is not None:
            conf.notes.append((logging.WARNING, f"{ini.where('DEFAULT', 'auth_strategy')}: "
                               "deprecated, read as [api] auth_strategy"))
    _put(conf, ("api", "auth_strategy"), value or "keystone")


def _strategy(ini: IniFile, conf: PlacementConf) -> None:
    """Candidates are generated root by root (depth-first); breadth-first is not done."""
    key = "allocation_candidates_generation_strategy"
    value = _typed(ini, "placement", key, choice("depth-first", "breadth-first"))
    if value == "breadth-first":
        conf.notes.append((logging.WARNING, f"{ini.where('placement', key)} = breadth-first "
                           "is not supported: candidates are generated depth-first"))


def _policy(ini: IniFile, conf: PlacementConf) -> None:
    """`[oslo_policy] policy_file` (else the legacy `[placement] policy_file`), found as
    oslo.config finds it: a relative name beside the configuration file."""
    where = ("oslo_policy", "policy_file")
    name = ini.get(*where)
    if name is None and ini.get("placement", "policy_file") is not None:
        where = ("placement", "policy_file")
        name = ini.get(*where)
    path = Path(name or DEFAULT_POLICY_FILE)
    if not path.is_absolute():
        path = Path(ini.path).resolve().parent / path
    if path.is_file():
        _put(conf, ("policy", "file"), str(path))
    elif name is not None:
        raise IniError(f"{ini.where(*where)}: policy file {str(path)!r} not found")
    if _typed(ini, "oslo_policy", "enforce_scope", boolean) is False:
        conf.notes.append((logging.WARNING, f"{ini.where('oslo_policy', 'enforce_scope')} = "
                           "false is not supported: scope is always enforced"))


def _logging(ini: IniFile, conf: PlacementConf) -> None:
    def first(*names: str) -> str | None:
        return next((v for n in names if (v := ini.get("DEFAULT", n)) is not None), None)

    log_file, log_dir = first("log_file", "logfile"), first("log_dir", "logdir")
    if log_file and log_dir and not Path(log_file).is_absolute():
        log_file = str(Path(log_dir) / log_file)
    conf.log = LogOptions(
        debug=_typed(ini, "DEFAULT", "debug", boolean),
        log_file=log_file,
        log_config_append=first("log_config_append", "log_config"),
        log_date_format=ini.get("DEFAULT", "log_date_format"),
        use_stderr=bool(_typed(ini, "DEFAULT", "use_stderr", boolean)))


# Why an option keystonemiddleware has and stowage does not implement makes little
# difference, where a word helps the operator decide.
_AUTHTOKEN_HINTS = {
    "memcache_security_strategy": "tokens cached in memcached are neither signed nor "
                                  "encrypted: keep memcached on a trusted network",
    "memcache_secret_key": "see memcache_security_strategy",
    "delay_auth_decision": "a request without a valid token is always refused (401)",
    "service_type": "access rules of application credentials are not checked",
}


def _authtoken(ini: IniFile, conf: PlacementConf) -> None:
    """`[keystone_authtoken]`'s options stowage implements into the settings; each other
    option with a value, one WARNING, dropped: never fatal, as oslo.config is not."""
    known = {f.name for f in dataclasses.fields(KeystoneAuthtokenSettings)}
    table: dict[str, Any] = {}
    for name, value in conf.keystone_authtoken.items():
        if value in ("", None):
            continue  # `cafile =`: oslo.config's "unset" as deployment tools write it
        if name in known:
            table[name] = value
            continue
        hint = _AUTHTOKEN_HINTS.get(name)
        conf.notes.append((logging.WARNING, f"{_where_renamed(ini, name)} is not "
                           f"implemented by stowage, ignored{f' ({hint})' if hint else ''}"))
    if table:
        conf.settings[SECTION] = table


def _where_renamed(ini: IniFile, name: str) -> str:
    """`file:line: [keystone_authtoken] option`, under the name the file spells it."""
    entries = ini.sections.get(SECTION, {})
    spelt = next((old for old, new in RENAMED.items() if new == name and old in entries
                  and name not in entries), name)
    return ini.where(SECTION, spelt)


def _known_section(section: str) -> bool:
    return (section in _MAPPED or section in _SPECIAL or section in _IGNORED
            or section in _IGNORED_SECTIONS or section == SECTION)


def _notes(ini: IniFile, conf: PlacementConf) -> None:
    """Each option stowage does not read, once: an unknown section in one WARNING
    with its options, an unknown option of a known section in one WARNING of its own,
    and every option Placement has that changes nothing here in one INFO line."""
    ignored: list[str] = []
    for section, entries in ini.sections.items():
        if not _known_section(section):
            hint = (" (Placement reads [placement_database], not [database])"
                    if section == "database" else "")
            conf.notes.append((logging.WARNING, f"{ini.path}: unknown section [{section}] "
                               f"ignored with its options {sorted(entries)}{hint}"))
            continue
        for key, entry in entries.items():
            if section in _IGNORED_SECTIONS or key in _IGNORED.get(section, ()):
                ignored.append(f"[{section}] {key}")
            elif section != SECTION and key not in _MAPPED.get(section, {}) \
                    and key not in _SPECIAL.get(section, ()):
                conf.notes.append((logging.WARNING, f"{ini.path}:{entry.line}: unknown "
                                   f"option [{section}] {key} ignored"))
    if ignored:
        conf.notes.append((logging.INFO, f"{ini.path}: options with no effect in stowage "
                           f"ignored: {', '.join(ignored)}"))


def read(path: str) -> PlacementConf:
    """The file's settings for stowage; IniError for a value Placement would refuse."""
    ini = oslo_ini.read(path)
    conf = PlacementConf(path)
    _database(ini, conf)
    _auth_strategy(ini, conf)
    for section, options in _MAPPED.items():
        for key, (kind, target) in options.items():
            if section == "api":
                continue  # with its deprecated spelling, above
            value = _typed(ini, section, key, kind)
            if value is not None:
                _put(conf, target, value)
    _strategy(ini, conf)
    _policy(ini, conf)
    _logging(ini, conf)
    conf.keystone_authtoken = authtoken_options(ini)
    _authtoken(ini, conf)
    _notes(ini, conf)
    return conf
