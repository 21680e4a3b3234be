"""The service-user tables of the settings file: keystoneauth options as Nova and Neutron read.

A stowage service that calls another one served by a different process
authenticates as Nova does, as a *service user* through Keystone, when the
caller's table names an `auth_type`:

    table         read by                   calls                       upstream's table
    [placement]   Compute (API, workers)    Placement                   nova.conf [placement]
    [network]     Compute (API, workers)    the Network service         nova.conf [neutron]
    [nova]        the Network service       Compute's external events   neutron.conf [nova]

The option names are keystoneauth's, as `keystoneauth1.loading` registers
them for those upstream tables, so an operator copies the lines over:

- the auth plugin's own options (`auth_url`, `username`, `password`,
  `project_name`, `user_domain_name`, ...) -- read from the plugin loader
  of `auth_type`, so every keystoneauth plugin works with its own names;
- the Session's (`cafile`, `certfile`, `keyfile`, `insecure`, `timeout`, ...);
- for [placement] and [network], the Adapter's (`service_type`,
  `valid_interfaces`, `region_name`, `endpoint_override`, retries), less
  `version`/`min_version`/`max_version`, which Nova removes too (the code
  knows the versions it speaks); `valid_interfaces` defaults to Nova's
  `["internal", "public"]`;
- for [nova], Neutron's two (`region_name`, and `endpoint_type`, default
  "public"), not the Adapter's: Neutron registers no others there.

The Session and Adapter names are written out below (keystoneauth lists
them only through oslo.config, which stowage does not need); a unit test
compares them with keystoneauth's lists so that they cannot drift. A table
without `auth_type` holds no service user: the caller then reaches an
explicit URL (`[compute] placement_url`, ...) as before.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ADAPTER_OPTIONS", "SECTIONS", "SESSION_OPTIONS", "ServiceUser", "split"]

# keystoneauth1.loading.get_session_conf_options(), by name.
SESSION_OPTIONS = ("cafile", "certfile", "keyfile", "insecure", "timeout", "collect_timing",
                   "split_loggers", "tls_ciphers", "tls_min_version")
# keystoneauth1.loading.get_adapter_conf_options(), less the three version options.
ADAPTER_OPTIONS = ("service_type", "service_name", "valid_interfaces", "region_name",
                   "endpoint_override", "connect_retries", "connect_retry_delay",
                   "status_code_retries", "status_code_retry_delay", "retriable_status_codes")
# Neutron's own options of its [nova] table (neutron/conf/common.py).
NEUTRON_NOVA_OPTIONS = ("region_name", "endpoint_type")
INTERFACES = ("public", "internal", "admin")

# table -> (service type called, the table's own options beside the Session's and the plugin's)
SECTIONS: Mapping[str, tuple[str, tuple[str, ...]]] = {
    "placement": ("placement", ADAPTER_OPTIONS),
    "network": ("network", ADAPTER_OPTIONS),
    "nova": ("compute", NEUTRON_NOVA_OPTIONS),
}
_SECRET = ("password", "secret", "passcode", "token")


@dataclass(frozen=True)
class ServiceUser:
    """One table's keystoneauth options, as the file gave them (validated, not yet built).

    `configured` is false for a table without `auth_type`: no service user.
    The repr hides secrets (passwords end up in tracebacks and logs otherwise).
    """

    section: str
    options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def configured(self) -> bool:
        return bool(self.options.get("auth_type"))

    @property
    def service_type(self) -> str:
        return str(self.options.get("service_type") or SECTIONS[self.section][0])

    def interfaces(self) -> list[str]:
        """The catalog interfaces tried in order: Nova's default internal then public, or
        Neutron's `endpoint_type` (public by default) for [nova]."""
        if self.section == "nova":
            return [str(self.options.get("endpoint_type") or "public")]
        given = self.options.get("valid_interfaces")
        if not given:
            return ["internal", "public"]
        return [given] if isinstance(given, str) else [str(i) for i in given]

    def __repr__(self) -> str:
        shown = {k: ("***" if any(s in k for s in _SECRET) else v)
                 for k, v in self.options.items()}
        return f"ServiceUser(section={self.section!r}, options={shown!r})"


def _plugin_options(section: str, auth_type: Any) -> tuple[str, ...]:
    """The option names of keystoneauth's plugin `auth_type` (its loader lists them)."""
    from keystoneauth1 import exceptions, loading

    if not isinstance(auth_type, str) or not auth_type:
        raise ValueError(f"[{section}] auth_type must be a keystoneauth plugin name such as "
                         f"'password', not {auth_type!r}")
    try:
        loader: Any = loading.get_plugin_loader(auth_type)
    except exceptions.NoMatchingPlugin:
        known = ", ".join(sorted(loading.get_available_plugin_names()))
        raise ValueError(f"[{section}] auth_type {auth_type!r} is not a keystoneauth plugin; "
                         f"known: {known}") from None
    return tuple(o.dest for o in loader.get_options())


def _check(section: str, options: Mapping[str, Any]) -> None:
    """Refuse what keystoneauth would refuse later, with the table's name in the message."""
    from keystoneauth1 import loading

    loader: Any = loading.get_plugin_loader(str(options["auth_type"]))
    missing = [o.dest for o in loader.get_options()
               if o.required and options.get(o.dest) in (None, "")]
    if missing:
        raise ValueError(f"[{section}] auth_type {options['auth_type']!r} needs "
                         f"{', '.join(missing)}")
    chosen = options.get("valid_interfaces") or []
    chosen = [chosen] if isinstance(chosen, str) else list(chosen)
    if section == "nova" and options.get("endpoint_type") is not None:
        chosen = [options["endpoint_type"]]
    bad = [i for i in chosen if i not in INTERFACES]
    if bad:
        name = "endpoint_type" if section == "nova" else "valid_interfaces"
        raise ValueError(f"[{section}] {name} takes {', '.join(INTERFACES)}, not {bad}")
    timeout = options.get("timeout")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(
            timeout, (int, float)) or timeout <= 0):
        raise ValueError(f"[{section}] timeout must be a positive number of seconds, "
                         f"not {timeout!r}")


def split(section: str, raw: Mapping[str, Any]) -> tuple[dict[str, Any], ServiceUser]:
    """A table -> (stowage's own settings of it, its service user).

    A key is keystoneauth's when the table's service-user names hold it;
    everything else is left for the table's own dataclass, which refuses
    what it does not know, so a misspelt option is still an error.
    """
    rest = dict(raw)
    if section not in SECTIONS or "auth_type" not in rest:
        stray = sorted(set(rest) & (set(SESSION_OPTIONS) | set(SECTIONS.get(
            section, ("", ()))[1]) | {"auth_url", "username", "password"}))
        if stray and section in SECTIONS:
            raise ValueError(f"[{section}] sets {', '.join(stray)} without auth_type: set "
                             "auth_type = \"password\" (keystoneauth's plugin) to call the "
                             "service as a service user")
        return rest, ServiceUser(section)
    plugin = _plugin_options(section, rest["auth_type"])
    names = {"auth_type", *plugin, *SESSION_OPTIONS, *SECTIONS[section][1]}
    options = {k: rest.pop(k) for k in list(rest) if k in names}
    _check(section, options)
    return rest, ServiceUser(section, options)
