"""Settings for every stowage service, layered defaults < TOML file < env vars < flags.

The package never reads the environment or a global config object on its own:
`load()` builds one immutable `Settings` value and callers pass it down.
"""

from __future__ import annotations

import dataclasses
import json
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from stowage.service_users import ServiceUser, split

__all__ = ["AUTH_STRATEGIES", "ApiSettings", "ComputeSettings", "CorsSettings",
           "DEFAULT_BODY_SIZES", "OSLO_MAX_REQUEST_BODY_SIZE", "IdentityAssignment",
           "IdentityProject", "IdentitySettings", "IdentityUser", "ImageSettings",
           "KeystoneAuthtokenSettings",
           "MetricsSettings",
           "NetworkSettings", "PlacementSettings", "PolicySettings", "QuotaSettings", "Settings",
           "TRANSPORT_SCHEMES", "load"]

DEFAULT_DATABASE = "sqlite:///stowage.db"
ENV_PREFIX = "STOWAGE_"


# The values `[api] auth_strategy` may take. "builtin-identity" serves a
# Keystone v3 subset at /identity and checks its tokens everywhere; "keystone"
# (upstream's default) validates tokens against an outside Keystone, as
# keystonemiddleware's auth_token does, with the `[keystone_authtoken]` table.
AUTH_STRATEGIES = ("noauth2", "builtin-identity", "keystone")


# oslo.middleware's `max_request_body_size` default, which Nova and Keystone
# run (their `sizelimit` filter): 112 KiB holds Nova's largest body, a server
# create with 65,535 bytes of user_data and its personality files.
OSLO_MAX_REQUEST_BODY_SIZE = 114_688
MIB = 1 << 20
# Services whose upstream sets no body limit at all get more room by default
# (docs/security.md): Placement's bulk `POST /allocations`, reshaper and
# `PUT .../traits` carry whole trees; Neutron and Glance take bulk JSON too.
DEFAULT_BODY_SIZES = {"placement": 16 * MIB, "network": MIB, "image": MIB}
BODY_SIZE_SERVICES = ("placement", "compute", "image", "network", "identity")
# Glance's `image_size_cap` default (1 TiB): the most `PUT /v2/images/{id}/file`
# may send; the data is counted as it arrives, never held.
GLANCE_IMAGE_SIZE_CAP = 1 << 40


def _positive(name: str, value: object, kind: type | tuple[type, ...] = (int, float)) -> None:
    """Refuse anything but a positive number of `kind` (a TOML string or bool included)."""
    if isinstance(value, bool) or not isinstance(value, kind) or not value > 0:  # type: ignore[operator]
        raise ValueError(f"[api] {name} must be a positive number, not {value!r}")


@dataclass(frozen=True)
class ApiSettings:
    # "noauth2" is upstream's test convention: the token names the caller;
    # "builtin-identity" asks for a password and issues real tokens.
    auth_strategy: str = "noauth2"
    # Seconds an idle keep-alive connection stays open. Pooled clients
    # (requests/urllib3 under keystoneauth, as Nova's report client uses) keep
    # idle connections with no timeout of their own and reuse them; a server
    # that drops them sooner races their next request (RemoteDisconnected).
    # 75 s is nginx's default, longer than a typical periodic task's interval.
    keepalive_timeout: float = 75.0
    # Bytes a request body may hold (413 beyond), for every service not named
    # in `max_request_body_sizes`; read only after the token is accepted.
    max_request_body_size: int = OSLO_MAX_REQUEST_BODY_SIZE
    # Per-service overrides, e.g. `[api.max_request_body_sizes] placement = 33554432`;
    # merged over DEFAULT_BODY_SIZES.
    max_request_body_sizes: Mapping[str, int] = field(default_factory=dict)
    # Bytes an image upload (`PUT /v2/images/{id}/file`) may send: Glance's
    # image_size_cap (1 TiB); counted as the data arrives, never held.
    image_size_cap: int = GLANCE_IMAGE_SIZE_CAP
    # Seconds a client may take to send a request's headers (from the
    # connection's start, or the next request's first byte): 408 and close
    # beyond. uvicorn has no such limit of its own (slow-loris).
    header_timeout: float = 30.0
    # Seconds a client may take to send a whole request body (408 and close
    # beyond); for an image upload, the longest pause between two chunks.
    body_timeout: float = 60.0
    # Connections (and running requests) one worker process serves at once;
    # beyond, requests are answered 503 at once instead of queueing.
    max_connections: int = 1000
    # Bytes of request line plus headers (h11's incomplete-event limit): 400 beyond.
    max_header_size: int = 65_536
    # With auth_strategy noauth2 (no passwords), the dashboard at `/` answers only
    # clients on this machine (loopback); true opens it to every address.
    dashboard_beyond_loopback: bool = False

    def __post_init__(self) -> None:
        if self.auth_strategy not in AUTH_STRATEGIES:
            raise ValueError(
                f"[api] auth_strategy = {self.auth_strategy!r} is not supported; "
                f"supported: {', '.join(repr(s) for s in AUTH_STRATEGIES)}")
        timeout = self.keepalive_timeout
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise ValueError("[api] keepalive_timeout must be a positive number of seconds, "
                             f"not {self.keepalive_timeout!r}")
        for name in ("header_timeout", "body_timeout"):
            _positive(name, getattr(self, name))
        for name in ("max_request_body_size", "image_size_cap", "max_connections",
                     "max_header_size"):
            _positive(name, getattr(self, name), int)
        sizes = self.max_request_body_sizes
        if not isinstance(sizes, Mapping) or set(sizes) - set(BODY_SIZE_SERVICES):
            raise ValueError("[api.max_request_body_sizes] takes "
                             f"{', '.join(BODY_SIZE_SERVICES)}, not {sizes!r}")
        for service, size in sizes.items():
            _positive(f"max_request_body_sizes.{service}", size, int)
        if not isinstance(self.dashboard_beyond_loopback, bool):
            raise ValueError("[api] dashboard_beyond_loopback must be true or false, "
                             f"not {self.dashboard_beyond_loopback!r}")

    def body_limit(self, service: str) -> int:
        """The most bytes a request body to `service` may hold."""
        if service in self.max_request_body_sizes:
            return self.max_request_body_sizes[service]
        return DEFAULT_BODY_SIZES.get(service, self.max_request_body_size)


@dataclass(frozen=True)
class PolicySettings:
    # Upstream's oslo.policy `enforce_new_defaults`, true as Nova and Placement
    # ship today: secure-RBAC defaults, where a token needs the member role to
    # change a project's resources and the reader role to look at them. False
    # (opt-in) restores the deprecated defaults, where any token of the owning
    # project may do both.
    enforce_new_defaults: bool = True
    # Optional YAML/JSON file of rule name -> check string overrides.
    file: str | None = None
    overrides: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class CorsSettings:
    # oslo.middleware's CORS options: the origins allowed to call the APIs from a
    # browser (none: CORS off), the request headers they may send and the response
    # headers they may read beside the simple ones, the methods, whether credentials
    # (cookies, tokens) may go along, and seconds a preflight answer is cached.
    allowed_origin: tuple[str, ...] = ()
    allow_headers: tuple[str, ...] = ()
    expose_headers: tuple[str, ...] = ()
    allow_methods: tuple[str, ...] = ("GET", "PUT", "POST", "DELETE", "PATCH")
    allow_credentials: bool = True
    max_age: int = 3600


@dataclass(frozen=True)
class PlacementSettings:
    # Upstream's option: shuffle the allocation candidates (and sample them when
    # max_allocation_candidates cuts them) instead of answering them in a stable order.
    randomize_allocation_candidates: bool = False
    # Upstream's max_allocation_candidates; -1 means no cap.
    max_allocation_candidates: int = -1
    # Upstream's placeholder project and user of consumers written before 1.8,
    # which named neither.
    incomplete_consumer_project_id: str = "00000000-0000-0000-0000-000000000000"
    incomplete_consumer_user_id: str = "00000000-0000-0000-0000-000000000000"


@dataclass(frozen=True)
class ComputeSettings:
    """Nova's options for what stowage's control plane does (same names where Nova has one)."""

    # Simulated hosts started with the service (`serve --sim-hosts N`), and an
    # optional TOML/YAML file describing hosts one by one.
    sim_hosts: int = 0
    hosts_file: str | None = None
    # Each of the `sim_hosts` gets an OVS bridge br-physnet0 on physnet0 (10 Gbit/s each
    # way, vnic type normal), reported as Neutron's Open vSwitch agent would. Hosts of
    # the hosts file name their own devices (`network_devices`).
    sim_network_devices: bool = False
    # Placement's URL when it is not served by this process.
    placement_url: str | None = None
    # The Network service's URL (without /v2.0) when it is not served by this process;
    # without either, servers can only be booted without networks.
    network_url: str | None = None
    # Nova's [neutron] default_floating_pool: the external network (by name or id) a
    # floating IP comes from when POST /os-floating-ips names no pool.
    default_floating_pool: str = "nova"
    # Nova's option: a resize may pick the server's own host.
    allow_resize_to_same_host: bool = False
    # Nova's `[api] enable_instance_password`: rescue answers the guest's admin password
    # (given, or generated); off, it answers `{}`.
    enable_instance_password: bool = True
    # Where a new deployment's first cell, cell1, keeps its records (docs/cells.md):
    # "beside", in a SQLite file next to a SQLite API database's (stowage.db ->
    # stowage_cell1.db); "@api", in the API database itself; any other value is its
    # database URL. "" (the default) is "beside" for a SQLite API database in a file,
    # else "@api". Read once, when the service first starts on an empty API database.
    cell1_database: str = ""
    # Where cell0 (servers that could not be scheduled) keeps its records, with the
    # same values as cell1_database (default: stowage_cell0.db beside a SQLite file).
    cell0_database: str = ""
    # `[upgrade_levels] compute`: the compute RPC version the conductor may send, "auto"
    # or e.g. "5.1" (see compute/upgrade.py).
    upgrade_levels_compute: str = "auto"
    # Hosts tried per build or move: the selected one plus alternates.
    max_attempts: int = 3
    # Seconds after which a resize in VERIFY_RESIZE is confirmed; 0 = never.
    resize_confirm_window: int = 0
    # Resource tracker period (inventory report + allocation reconcile), seconds.
    update_resources_interval: float = 60.0
    # Nova's sync_power_state_interval: seconds between two runs of each agent's
    # power-state sync (agent/power_sync.py); <= 0: never.
    sync_power_state_interval: float = 600.0
    # Nova's [compute] resource_provider_association_refresh: seconds after which the
    # tracker reports a host's providers in full again though its configuration did not
    # change (it reports at once when it did); 0: only on a change or SIGHUP.
    resource_provider_association_refresh: float = 300.0
    # Seconds between two heartbeats of each service (Nova's report_interval), and
    # after how many without one a service is down (service_down_time).
    report_interval: float = 10.0
    service_down_time: float = 60.0
    # "spread" prefers the emptiest host, "pack" the fullest (Nova's weight multipliers).
    weigher: str = "spread"
    # CrossCellWeigher: how much a move allowed to leave its cell prefers hosts of its
    # own cell (Nova's [filter_scheduler] option); aggregates may set their own.
    cross_cell_move_weight_multiplier: float = 1000000.0
    # Nova's [filter_scheduler] enabled_filters, among the optional filters of
    # compute/scheduler/filters.py (AggregateInstanceExtraSpecsFilter is off by
    # default, as in Nova).
    enabled_filters: tuple[str, ...] = (
        "ComputeFilter", "AvailabilityZoneFilter", "ServerGroupAntiAffinityFilter",
        "ServerGroupAffinityFilter", "PciPassthroughFilter")
    # Nova's [scheduler] query_placement_for_availability_zone: a request for a zone
    # made by host aggregates asks Placement for members of those aggregates only.
    query_placement_for_availability_zone: bool = True
    # Nova's [scheduler] limit_tenants_to_placement_aggregate: a project named by an
    # aggregate's filter_tenant_id* metadata lands only on that aggregate's hosts;
    # placement_aggregate_required_for_tenants: a project no aggregate names lands nowhere.
    limit_tenants_to_placement_aggregate: bool = False
    placement_aggregate_required_for_tenants: bool = False
    # Nova's [scheduler] max_placement_results: the `limit` of the scheduler's
    # GET /allocation_candidates.
    max_placement_results: int = 1000
    # Nova's default_availability_zone: the zone of a host no aggregate puts in one.
    default_availability_zone: str = "nova"
    # TESTING ONLY: "operation:step:state" (e.g. "resize:resize_instance:done"); the
    # process exits at once, as kill -9 would, when the conductor's journal gets
    # there. The crash-recovery tests set it in a TOML file; never set it in production.
    crash_at: str = ""
    # The most servers one POST /servers may ask for (max_count), refused before the
    # instances quota is even counted. Nova has no such option (its quota alone
    # bounds a request); it caps the work a single request can cause.
    max_count_per_request: int = 10
    # Shelve: seconds a shelved server keeps its host before it is offloaded (Nova's
    # default 0: at once, as part of the shelve; -1: never), and how often the
    # conductor looks for servers shelved longer than that (<= 0: never).
    shelved_offload_time: int = 0
    shelved_poll_interval: float = 3600.0
    # Deferred delete (Nova's reclaim_instance_interval): 0 deletes at once; > 0 makes
    # DELETE soft (SOFT_DELETED, restorable) and the conductor reclaims servers soft
    # deleted longer than this many seconds, looking every as many seconds.
    reclaim_instance_interval: int = 0
    # Live migration: retries on other hosts when a destination's pre-checks or claim
    # fail (-1 = as many as the scheduler's alternates, Nova's default; 0 = none).
    migrate_max_retries: int = -1
    # Simulated hosts: seconds a live migration's copy lasts (0 = at once), so that
    # abort and force-complete can be exercised.
    sim_live_migration_seconds: float = 0.0
    # Simulated hosts: seconds a snapshot's disk copy lasts (createImage, createBackup,
    # shelve; 0 = at once), so that what a server refuses while its image is being
    # saved can be exercised, as Tempest's second-snapshot test does.
    sim_snapshot_seconds: float = 0.0
    # Seconds a conductor's lease on an operation it runs lasts (conductor/leases.py):
    # renewed every third of it; when it expires (the conductor died), another
    # conductor takes the operation over and finishes or undoes it. Nova has no such
    # option (its conductor keeps no journal).
    conductor_lease_seconds: float = 30.0

    def __post_init__(self) -> None:
        lease = self.conductor_lease_seconds
        if isinstance(lease, bool) or not isinstance(lease, (int, float)) or lease <= 0:
            raise ValueError(f"[compute] conductor_lease_seconds must be a number > 0, not "
                             f"{lease!r}")


@dataclass(frozen=True)
class NetworkSettings:
    """Neutron's options for stowage's Networking API (Neutron's names where it has one)."""

    # How a port's read-only `resource_request` is rendered: "groups" (extension
    # port-resource-request-groups, Neutron since Yoga) or "legacy" (one group
    # without an id, extension port-resource-request only).
    resource_request_format: str = "groups"
    # ML2's global_physnet_mtu; tunnel networks take their overhead off it.
    global_physnet_mtu: int = 1500
    # ML2's first tenant_network_types entry: the segment type of a network
    # created without provider attributes (vxlan, geneve or local).
    tenant_network_type: str = "vxlan"
    # Neutron's base_mac: generated MAC addresses keep its first three octets.
    base_mac: str = "fa:16:3e:00:00:00"
    # Compute's URL (e.g. http://api:8780/compute) when this process serves the
    # Network service without Compute: where the deletion of a port bound to a
    # server is reported (Neutron's `[nova]` section); unset: nobody is told.
    compute_url: str | None = None

    def __post_init__(self) -> None:
        if self.resource_request_format not in ("groups", "legacy"):
            raise ValueError("[network] resource_request_format must be 'groups' or "
                             f"'legacy', not {self.resource_request_format!r}")
        if self.tenant_network_type not in ("vxlan", "geneve", "local"):
            raise ValueError("[network] tenant_network_type must be vxlan, geneve or local, "
                             f"not {self.tenant_network_type!r}")
        mtu = self.global_physnet_mtu
        if isinstance(mtu, bool) or not isinstance(mtu, int) or mtu < 68:
            raise ValueError(f"[network] global_physnet_mtu must be an integer >= 68, not "
                             f"{mtu!r}")
        octets = self.base_mac.split(":")
        if len(octets) != 6 or not all(len(o) == 2 and _is_hex(o) for o in octets):
            raise ValueError(f"[network] base_mac must look like fa:16:3e:00:00:00, not "
                             f"{self.base_mac!r}")


@dataclass(frozen=True)
class QuotaSettings:
    """Nova's `[quota]` options: the default limit of each project (-1 = unlimited).

    A project's own limits (`PUT /os-quota-sets/{project}`) and the `default`
    quota class (`PUT /os-quota-class-sets/default`) override these.
    """

    # Each project's default limit of what the key names (-1: unlimited), Nova's option
    # of the same name: servers, VCPUs, MB of RAM, metadata items, injected files,
    # their bytes and path bytes, key pairs, server groups and members of one group.
    instances: int = 10
    cores: int = 20
    ram: int = 51200
    metadata_items: int = 128
    injected_files: int = 5
    injected_file_content_bytes: int = 10240
    injected_file_path_bytes: int = 255
    key_pairs: int = 100
    server_groups: int = 10
    server_group_members: int = 10
    # Count again after the instance records are written, refusing (and deleting)
    # what a concurrent request pushed over the limit, as Nova's recheck_quota.
    recheck_quota: bool = True

    def __post_init__(self) -> None:
        for item in dataclasses.fields(self):
            value = getattr(self, item.name)
            if item.name == "recheck_quota":
                if not isinstance(value, bool):
                    raise ValueError(f"[quota] recheck_quota must be true or false, not "
                                     f"{value!r}")
            elif isinstance(value, bool) or not isinstance(value, int) or value < -1:
                raise ValueError(f"[quota] {item.name} must be an integer >= -1, not {value!r}")


def _is_hex(text: str) -> bool:
    return all(c in "0123456789abcdefABCDEF" for c in text)


@dataclass(frozen=True)
class IdentityUser:
    """A user of the built-in identity service (domain Default); only its hash is kept."""

    # The user's name (unique in domain Default).
    name: str
    # The hash of `stowage manage identity hash-password`; or give `password` in
    # the file instead: it is hashed when read and never kept.
    password_hash: str
    # The user's id (default: made from the name), e-mail and description; a disabled
    # user cannot log in.
    id: str | None = None
    email: str | None = None
    description: str = ""
    enabled: bool = True
    # The project name `default_project_id` points at, if any.
    default_project: str | None = None


@dataclass(frozen=True)
class IdentityProject:
    # The project's name (unique in domain Default), id (default: made from the name),
    # description, and whether tokens may be scoped to it.
    name: str
    id: str | None = None
    description: str = ""
    enabled: bool = True


@dataclass(frozen=True)
class IdentityAssignment:
    """`user` holds `role` on `project` (a name), or on the Default domain (`domain`)."""

    # A user's name, the role's name (admin, member, reader, or any other), and the
    # project's name that it holds the role on, or `domain = "default"` for the domain.
    user: str
    role: str
    project: str | None = None
    domain: str | None = None


@dataclass(frozen=True)
class IdentitySettings:
    """`[identity]`: token lifetime, catalog, and the directory (see docs/identity.md).

    Without users, the service starts with a default directory (admin and
    demo); `stowage.identity.directory` builds it and checks references.
    """

    # Seconds a token is valid (Keystone's [token] expiration).
    token_lifetime: int = 3600
    # Base URL the catalog names (e.g. "https://cloud.example"); default: the request's host.
    public_url: str | None = None
    # The region the catalog's endpoints are listed in.
    region: str = "RegionOne"
    # Keystone's [security_compliance] lockout: after this many wrong passwords in a
    # row a user is refused for `lockout_duration` seconds (0, the default: never).
    lockout_failure_attempts: int = 0
    lockout_duration: int = 1800
    users: tuple[IdentityUser, ...] = ()
    projects: tuple[IdentityProject, ...] = ()
    assignments: tuple[IdentityAssignment, ...] = ()

    def __post_init__(self) -> None:
        life = self.token_lifetime
        if isinstance(life, bool) or not isinstance(life, int) or not 60 <= life <= 86400 * 7:
            raise ValueError("[identity] token_lifetime must be an integer number of seconds "
                             f"between 60 and 604800, not {life!r}")
        if self.public_url is not None and not self.public_url.startswith(
                ("http://", "https://")):
            raise ValueError(f"[identity] public_url must be an http(s) URL, not "
                             f"{self.public_url!r}")
        for name, least in (("lockout_failure_attempts", 0), ("lockout_duration", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ValueError(f"[identity] {name} must be an integer >= {least}, not "
                                 f"{value!r}")


# keystonemiddleware's `interface` values: which catalog endpoint validates tokens.
KEYSTONE_INTERFACES = ("public", "internal", "admin")


@dataclass(frozen=True)
class KeystoneAuthtokenSettings:
    """`[keystone_authtoken]`, in keystonemiddleware's own option names (docs/keystone.md).

    Read only with `[api] auth_strategy = "keystone"`: the service logs in with
    its own credentials (a keystoneauth1 password plugin) and validates each
    request's token with `GET /v3/auth/tokens`.
    """

    # The URL a 401's `WWW-Authenticate: Keystone uri="..."` names (clients go
    # there for a token); default: `auth_url`.
    www_authenticate_uri: str | None = None
    # Where the service logs in; the identity endpoint that validates tokens is then
    # found in the catalog (`interface`, `region_name`), as auth_token finds it.
    auth_url: str | None = None
    # keystoneauth's plugin of the service's login; only `password` is supported.
    auth_type: str = "password"
    # The service user's login (required with auth_strategy keystone): its name,
    # password and project, and the domains of user and project by name.
    username: str | None = None
    password: str | None = None
    project_name: str | None = None
    user_domain_name: str = "Default"
    project_domain_name: str = "Default"
    # The domains by id instead (kolla-ansible writes `user_domain_id = default`);
    # when given, an id wins over the name.
    user_domain_id: str | None = None
    project_domain_id: str | None = None
    # Which catalog endpoint of the identity service validates tokens: the region
    # (default: any) and the interface.
    region_name: str | None = None
    interface: str = "internal"
    # Seconds a validated token is believed without asking Keystone again (never
    # past its own expiry); a revoked token keeps working that long. -1: no cache.
    token_cache_time: int = 300
    # An X-Service-Token is a service's when it carries one of these roles; with
    # service_token_roles_required (keystonemiddleware 13's default), a service token
    # without one is refused (401); without it, any valid token is accepted as one.
    service_token_roles: tuple[str, ...] = ("service",)
    service_token_roles_required: bool = True
    # "host:port" of memcached servers shared by the workers; none: in-process cache.
    memcached_servers: tuple[str, ...] = ()
    # Seconds to connect to (and hear from) Keystone, and retries of a failed
    # connection. keystonemiddleware's timeout is unbounded by default; stowage's is
    # not, so that an unreachable Keystone is a 503 within seconds, not a hang.
    http_connect_timeout: float = 5.0
    http_request_max_retries: int = 3
    # TLS towards Keystone, as keystonemiddleware's: a CA bundle to check its
    # certificate against (default: the system's), a client certificate and key,
    # and `insecure` to skip the check (tests and labs only).
    cafile: str | None = None
    certfile: str | None = None
    keyfile: str | None = None
    insecure: bool = False

    def __post_init__(self) -> None:
        for name in ("www_authenticate_uri", "auth_url"):
            url = getattr(self, name)
            if url is not None and not (isinstance(url, str)
                                        and url.startswith(("http://", "https://"))):
                raise ValueError(f"[keystone_authtoken] {name} must be an http(s) URL, "
                                 f"not {url!r}")
        if self.auth_type != "password":
            raise ValueError("[keystone_authtoken] auth_type must be 'password', not "
                             f"{self.auth_type!r}")
        if self.interface not in KEYSTONE_INTERFACES:
            raise ValueError(f"[keystone_authtoken] interface must be one of "
                             f"{', '.join(KEYSTONE_INTERFACES)}, not {self.interface!r}")
        self._check_numbers()
        for name in ("service_token_roles", "memcached_servers"):
            items = getattr(self, name)
            if not isinstance(items, tuple) or not all(isinstance(i, str) and i
                                                       for i in items):
                raise ValueError(f"[keystone_authtoken] {name} must be a list of "
                                 f"strings, not {items!r}")
        for name in ("service_token_roles_required", "insecure"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"[keystone_authtoken] {name} must be true or false, "
                                 f"not {getattr(self, name)!r}")
        if self.keyfile and not self.certfile:
            raise ValueError("[keystone_authtoken] keyfile needs certfile")

    def _check_numbers(self) -> None:
        cache = self.token_cache_time
        if isinstance(cache, bool) or not isinstance(cache, int) or cache < -1:
            raise ValueError("[keystone_authtoken] token_cache_time must be an integer "
                             f">= -1 (seconds; -1: no cache), not {cache!r}")
        timeout = self.http_connect_timeout
        if (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                or not 0 < timeout <= 300):
            raise ValueError("[keystone_authtoken] http_connect_timeout must be a number "
                             f"of seconds in (0, 300], not {timeout!r}")
        retries = self.http_request_max_retries
        if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= 10:
            raise ValueError("[keystone_authtoken] http_request_max_retries must be an "
                             f"integer from 0 to 10, not {retries!r}")

    def check_complete(self) -> None:
        """What `auth_strategy = "keystone"` cannot run without: the service's login."""
        missing = [name for name in ("auth_url", "username", "password", "project_name")
                   if not getattr(self, name)]
        if missing:
            raise ValueError("[api] auth_strategy = 'keystone' needs [keystone_authtoken] "
                             f"{', '.join(missing)}")

    @property
    def verify(self) -> bool | str:
        """requests' `verify`: the CA bundle, False when insecure, else the system's."""
        return False if self.insecure else (self.cafile or True)

    @property
    def cert(self) -> str | tuple[str, str] | None:
        """requests' `cert`: the client certificate (and its key, when apart)."""
        if not self.certfile:
            return None
        return (self.certfile, self.keyfile) if self.keyfile else self.certfile

    @property
    def challenge_uri(self) -> str:
        """The URI of a 401's `WWW-Authenticate: Keystone uri="..."`."""
        return self.www_authenticate_uri or self.auth_url or ""


@dataclass(frozen=True)
class MetricsSettings:
    """`[metrics]`: who may scrape `GET /metrics`, and its scrape-time work (docs/operations.md)."""

    # Networks (CIDR, e.g. "10.0.0.0/24", or single addresses) whose clients may scrape
    # /metrics without a token, as Prometheus scrapes; every other client needs a token
    # with the admin role. Empty (the default): a token always.
    allow_unauthenticated_from: tuple[str, ...] = ()
    # Seconds between two runs of the audit behind `stowage_audit_violations` (it reads
    # every provider and server, so it runs in the background, started by a scrape);
    # 0: no audit gauge.
    audit_interval: float = 300.0
    # HOST:PORT where `stowage conductor`, `scheduler` and `agent` serve their own
    # /metrics (only to `allow_unauthenticated_from`'s networks: these processes have no
    # token validation); empty (the default): they serve none.
    worker_bind: str = ""

    def __post_init__(self) -> None:
        import ipaddress

        for net in self.allow_unauthenticated_from:
            try:
                ipaddress.ip_network(net, strict=False)
            except (TypeError, ValueError):
                raise ValueError("[metrics] allow_unauthenticated_from takes networks like "
                                 f"'10.0.0.0/24', not {net!r}") from None
        interval = self.audit_interval
        if isinstance(interval, bool) or not isinstance(interval, (int, float)) or interval < 0:
            raise ValueError(f"[metrics] audit_interval must be a number >= 0, not {interval!r}")
        if self.worker_bind and not self.worker_bind.rpartition(":")[2].isdigit():
            raise ValueError(f"[metrics] worker_bind must be HOST:PORT, not {self.worker_bind!r}")


@dataclass(frozen=True)
class ImageSettings:
    """`[image]`: where the Image service keeps image data, and how much a project may keep.

    The largest single upload is `[api] image_size_cap` (Glance's image_size_cap),
    which bounds every request body of the Image service (docs/image.md)."""

    # Directory of the filesystem store: one file per image, named by its id, and
    # the uploads in progress as `.part` files. Empty (the default): `images`
    # beside a SQLite API database's file (stowage.db -> stowage_images/), else
    # `stowage_images` in the working directory.
    store_dir: str = ""
    # Glance's user_storage_quota: bytes of image data the images of one project
    # (owner) may hold in all; an upload past it is a 413. 0: unlimited.
    user_storage_quota: int = 0

    def __post_init__(self) -> None:
        quota = self.user_storage_quota
        if isinstance(quota, bool) or not isinstance(quota, int) or quota < 0:
            raise ValueError(f"[image] user_storage_quota must be an integer >= 0, not "
                             f"{quota!r}")
        if not isinstance(self.store_dir, str):
            raise ValueError(f"[image] store_dir must be a path, not {self.store_dir!r}")


# The schemes `transport_url` may name (see stowage.messaging.get_transport).
TRANSPORT_SCHEMES = ("local", "rabbit")


@dataclass(frozen=True)
class Settings:
    # The API database (SQLAlchemy URL): SQLite, PostgreSQL or MySQL (docs/cells.md for
    # the cells' own databases).
    database: str = DEFAULT_DATABASE
    # HOST:PORT `stowage serve` listens on.
    bind: str = "127.0.0.1:8780"
    # Nova's [DEFAULT] transport_url: how the conductor, scheduler and agents talk.
    # Empty (or local://) keeps them in this process; rabbit://user:pass@host:5672/vhost
    # (oslo.messaging's form) puts RabbitMQ between them. STOWAGE_TRANSPORT_URL sets it
    # too, which keeps the password out of the file.
    transport_url: str = ""
    # Nova's [DEFAULT] control_exchange: the prefix of every queue and exchange name on
    # the broker, so that deployments (or test runs) sharing one broker stay apart.
    control_exchange: str = "stowage"
    # The services `stowage serve` runs (one alone is served at `/`).
    services: tuple[str, ...] = ("placement", "compute", "image", "network")
    api: ApiSettings = ApiSettings()
    policy: PolicySettings = PolicySettings()
    cors: CorsSettings = CorsSettings()
    placement: PlacementSettings = PlacementSettings()
    compute: ComputeSettings = ComputeSettings()
    network: NetworkSettings = NetworkSettings()
    image: ImageSettings = ImageSettings()
    identity: IdentitySettings = IdentitySettings()
    quota: QuotaSettings = QuotaSettings()
    keystone_authtoken: KeystoneAuthtokenSettings = KeystoneAuthtokenSettings()
    metrics: MetricsSettings = MetricsSettings()
    # The service users of [placement], [network] and [nova] (stowage/service_users.py),
    # by table; a table absent here has none.
    service_users: Mapping[str, ServiceUser] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.api.auth_strategy == "keystone":
            self.keystone_authtoken.check_complete()
        scheme, sep, _ = self.transport_url.partition("://")
        if self.transport_url and not (sep and scheme in TRANSPORT_SCHEMES):
            # Only the scheme is repeated: the rest of the URL may hold a password.
            raise ValueError(f"transport_url must be empty, local:// or rabbit://..., not "
                             f"{scheme if sep else '(no scheme)'}://...")
        name = self.control_exchange
        if not name or not all(c.isalnum() or c in "-_" for c in name):
            raise ValueError("control_exchange must be letters, digits, '-' or '_', not "
                             f"{name!r}")

    def service_user(self, section: str) -> ServiceUser:
        """The service user of `[section]` (placement, network or nova); maybe unconfigured."""
        return self.service_users.get(section) or ServiceUser(section)


def _section(cls: type[Any], raw: Any, where: str) -> Any:
    """Build a section dataclass, rejecting unknown keys so typos are loud; `where` is
    the section as the settings file spells it (`[api]`, `[[identity.users]]`)."""
    if not isinstance(raw, Mapping):
        raise ValueError(f"{where} must be a table of settings, not {raw!r}")
    known = {f.name: f for f in dataclasses.fields(cls)}
    unknown = set(raw) - set(known)
    if unknown:
        raise ValueError(f"unknown setting(s) in {where}: {sorted(unknown)}")
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in raw.items()}
    return cls(**values)


def _policy_overrides(path: str | None) -> dict[str, str]:
    if not path:
        return {}
    text = Path(path).read_text(encoding="utf-8")
    data = json.loads(text) if path.endswith(".json") else yaml.safe_load(text)
    return {str(k): str(v) for k, v in (data or {}).items()}


def _identity_user(raw: Mapping[str, Any]) -> IdentityUser:
    """One `[[identity.users]]` entry: `password` is hashed here and forgotten."""
    from stowage.identity.passwords import hash_password, is_password_hash

    values = dict(raw)
    password = values.pop("password", None)
    if password is not None and "password_hash" in values:
        raise ValueError("[[identity.users]] takes password or password_hash, not both")
    if password is not None:
        if not isinstance(password, str) or not password:
            raise ValueError("[[identity.users]] password must be a non-empty string")
        values["password_hash"] = hash_password(password)
    elif not is_password_hash(str(values.get("password_hash", ""))):
        raise ValueError(f"[[identity.users]] {values.get('name')!r} needs a password or a "
                         "password_hash made by `stowage manage identity hash-password`")
    return _section(IdentityUser, values, "[[identity.users]]")  # type: ignore[no-any-return]


def _identity(raw: Mapping[str, Any]) -> IdentitySettings:
    values = dict(raw)
    entries: dict[str, Callable[[Mapping[str, Any]], Any]] = {
        "users": _identity_user,
        "projects": lambda e: _section(IdentityProject, e, "[[identity.projects]]"),
        "assignments": lambda e: _section(IdentityAssignment, e, "[[identity.assignments]]")}
    for key, build in entries.items():
        items = values.get(key, [])
        if not isinstance(items, list) or not all(isinstance(e, dict) for e in items):
            raise ValueError(f"[identity] {key} must be a list of tables ([[identity.{key}]])")
        values[key] = tuple(build(e) for e in items)
    return _section(IdentitySettings, values, "[identity]")  # type: ignore[no-any-return]


_COMPUTE_FLAGS = ("sim_hosts", "hosts_file")


def _compute(raw: Mapping[str, Any], flags: Mapping[str, Any]) -> ComputeSettings:
    values = dict(raw)
    values.update({k: flags[k] for k in _COMPUTE_FLAGS if flags.get(k) is not None})
    return _section(ComputeSettings, values, "[compute]")  # type: ignore[no-any-return]


def _upgrade_levels(raw: Mapping[str, Any]) -> dict[str, Any]:
    """Nova's `[upgrade_levels] compute = auto | <version>`, kept in ComputeSettings."""
    levels = dict(raw.get("upgrade_levels", {}))
    unknown = set(levels) - {"compute"}
    if unknown:
        raise ValueError(f"unknown setting(s) in [upgrade_levels]: {sorted(unknown)}")
    if "compute" not in levels:
        return {}
    value = str(levels["compute"])
    if value != "auto":
        major, _, minor = value.partition(".")
        if not major.isdigit() or (minor and not minor.isdigit()):
            raise ValueError(f"[upgrade_levels] compute must be 'auto' or a version like "
                             f"'5.2', not {value!r}")
    return {"upgrade_levels_compute": value}


def _check_top(raw: Mapping[str, Any]) -> None:
    """A misspelt section or top-level key is an error naming it as the file spells it;
    the file's sections are the fields of `Settings` (plus Nova's `[upgrade_levels]` and
    Neutron's `[nova]`; `service_users` is built from tables, not a table)."""
    known = ({f.name for f in dataclasses.fields(Settings)} - {"service_users"}) | {
        "upgrade_levels", "nova"}
    unknown = sorted(set(raw) - known)
    sections = [f"[{k}]" for k in unknown if isinstance(raw[k], dict)]
    if sections:
        raise ValueError(f"unknown section(s) {', '.join(sections)}; known: "
                         f"{', '.join(f'[{k}]' for k in sorted(known) if k not in _TOP_KEYS)}")
    if unknown:
        raise ValueError(f"unknown setting(s) at the top of the file: {unknown}; known: "
                         f"{', '.join(_TOP_KEYS)}")


# The settings of the file's top level (before any [section]).
_TOP_KEYS = ("database", "bind", "services", "transport_url", "control_exchange")


def _layered(under: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """`over`'s settings win, table by table and key by key, over `under`'s."""
    merged = dict(under)
    for key, value in over.items():
        below = merged.get(key)
        if isinstance(below, Mapping) and isinstance(value, Mapping):
            merged[key] = {**below, **value}
        else:
            merged[key] = value
    return merged


def load(path: str | None = None, env: Mapping[str, str] | None = None,
         placement: Mapping[str, Any] | None = None, **flags: Any) -> Settings:
    """Build settings from upstream's placement.conf (`placement`, already mapped by
    `placement_conf.read`), then a TOML file, then `STOWAGE_*` env vars, then flags:
    each layer wins over the ones before it (docs/placement-conf.md)."""
    raw: dict[str, Any] = {}
    if path:
        raw = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    _check_top(raw)
    if placement is not None:
        raw = _layered(placement, raw)
    env = env or {}
    top: dict[str, Any] = {k: raw[k] for k in _TOP_KEYS if k in raw}
    for key in ("database", "transport_url"):
        if env.get(ENV_PREFIX + key.upper()):
            top[key] = env[ENV_PREFIX + key.upper()]
    top.update({k: v for k, v in flags.items() if v is not None})
    if placement is not None and "database" not in top:
        # Upstream refuses to start without it; stowage's sqlite default would
        # silently serve an empty Placement instead of the operator's.
        raise ValueError("value required for option connection in group "
                         "[placement_database] (or give --database)")
    if "services" in top and isinstance(top["services"], (list, str)):
        svc = top["services"]
        top["services"] = tuple(svc.split(",") if isinstance(svc, str) else svc)
    policy_raw = dict(raw.get("policy", {}))
    policy = _section(PolicySettings, policy_raw, "[policy]")
    policy = dataclasses.replace(policy, overrides=_policy_overrides(policy.file))
    users, own = _service_users(raw)
    return Settings(
        api=_section(ApiSettings, raw.get("api", {}), "[api]"),
        policy=policy,
        cors=_section(CorsSettings, raw.get("cors", {}), "[cors]"),
        placement=_section(PlacementSettings, own["placement"], "[placement]"),
        compute=_compute({**raw.get("compute", {}), **_upgrade_levels(raw)}, flags),
        network=_section(NetworkSettings, own["network"], "[network]"),
        image=_section(ImageSettings, raw.get("image", {}), "[image]"),
        identity=_identity(raw.get("identity", {})),
        quota=_section(QuotaSettings, raw.get("quota", {}), "[quota]"),
        keystone_authtoken=_section(KeystoneAuthtokenSettings,
                                    raw.get("keystone_authtoken", {}), "[keystone_authtoken]"),
        service_users=users,
        metrics=_section(MetricsSettings, raw.get("metrics", {}), "[metrics]"),
        **{k: v for k, v in top.items() if k not in _COMPUTE_FLAGS},
    )


def _service_users(raw: Mapping[str, Any]) -> tuple[dict[str, ServiceUser],
                                                    dict[str, dict[str, Any]]]:
    """The service users of [placement], [network] and [nova], and what is left of each
    table for stowage's own settings (Neutron's [nova] has nothing else)."""
    users: dict[str, ServiceUser] = {}
    own: dict[str, dict[str, Any]] = {}
    for section in ("placement", "network", "nova"):
        table = raw.get(section, {})
        if not isinstance(table, Mapping):
            raise ValueError(f"[{section}] must be a table of settings, not {table!r}")
        own[section], user = split(section, table)
        if user.configured:
            users[section] = user
    if own["nova"]:
        raise ValueError(f"unknown setting(s) in [nova]: {sorted(own['nova'])}; it takes "
                         "keystoneauth's options of Neutron's [nova] (auth_type first)")
    return users, own
