"""Settings for every stowage service, layered defaults < TOML file < env vars < flags.

The package never reads the environment or a global config object on its own:
`load()` builds one immutable `Settings` value and callers pass it down.
"""

from __future__ import annotations

import dataclasses
import json
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

__all__ = ["AUTH_STRATEGIES", "ApiSettings", "ComputeSettings", "CorsSettings",
           "NetworkSettings", "PlacementSettings", "PolicySettings", "Settings", "load"]

DEFAULT_DATABASE = "sqlite:///stowage.db"
ENV_PREFIX = "STOWAGE_"


# The values `[api] auth_strategy` may take. Upstream's default, "keystone",
# is not among them: a service that named it would otherwise run with no
# authentication at all, so settings naming it are refused.
AUTH_STRATEGIES = ("noauth2",)


@dataclass(frozen=True)
class ApiSettings:
    # "noauth2" is upstream's test convention: the token names the caller.
    auth_strategy: str = "noauth2"
    # Seconds an idle keep-alive connection stays open. Pooled clients
    # (requests/urllib3 under keystoneauth, as Nova's report client uses) keep
    # idle connections with no timeout of their own and reuse them; a server
    # that drops them sooner races their next request (RemoteDisconnected).
    # 75 s is nginx's default, longer than a typical periodic task's interval.
    keepalive_timeout: float = 75.0

    def __post_init__(self) -> None:
        if self.auth_strategy not in AUTH_STRATEGIES:
            raise ValueError(
                f"[api] auth_strategy = {self.auth_strategy!r} is not supported; "
                f"supported: {', '.join(repr(s) for s in AUTH_STRATEGIES)}")
        timeout = self.keepalive_timeout
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise ValueError("[api] keepalive_timeout must be a positive number of seconds, "
                             f"not {self.keepalive_timeout!r}")


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
    allowed_origin: tuple[str, ...] = ()
    allow_headers: tuple[str, ...] = ()
    expose_headers: tuple[str, ...] = ()
    allow_methods: tuple[str, ...] = ("GET", "PUT", "POST", "DELETE", "PATCH")
    allow_credentials: bool = True
    max_age: int = 3600


@dataclass(frozen=True)
class PlacementSettings:
    randomize_allocation_candidates: bool = False
    # Upstream's max_allocation_candidates; -1 means no cap.
    max_allocation_candidates: int = -1
    # Default consumer type for allocations written before 1.38.
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
    allow_resize_to_same_host: bool = False
    # `[upgrade_levels] compute`: the compute RPC version the conductor may send, "auto"
    # or e.g. "5.1" (see compute/upgrade.py).
    upgrade_levels_compute: str = "auto"
    # Hosts tried per build or move: the selected one plus alternates.
    max_attempts: int = 3
    # Seconds after which a resize in VERIFY_RESIZE is confirmed; 0 = never.
    resize_confirm_window: int = 0
    # Resource tracker period (inventory report + allocation reconcile), seconds.
    update_resources_interval: float = 60.0
    report_interval: float = 10.0
    service_down_time: float = 60.0
    # "spread" prefers the emptiest host, "pack" the fullest (Nova's weight multipliers).
    weigher: str = "spread"
    max_placement_results: int = 1000
    default_availability_zone: str = "nova"
    # TESTING ONLY: "operation:step:state" (e.g. "resize:resize_instance:done"); the
    # process exits at once, as kill -9 would, when the conductor's journal gets
    # there. The crash-recovery tests set it in a TOML file; never set it in production.
    crash_at: str = ""
    # The most servers one POST /servers may ask for (max_count). Nova has no
    # such option: its instances quota (10 per project by default) bounds a
    # request. stowage has no quotas yet, so this bounds it instead.
    max_count_per_request: int = 10
    # Nova's [quota] metadata_items: the most metadata items a server may have.
    metadata_items: int = 128
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


def _is_hex(text: str) -> bool:
    return all(c in "0123456789abcdefABCDEF" for c in text)


@dataclass(frozen=True)
class Settings:
    database: str = DEFAULT_DATABASE
    bind: str = "127.0.0.1:8780"
    services: tuple[str, ...] = ("placement", "compute", "image", "network")
    api: ApiSettings = ApiSettings()
    policy: PolicySettings = PolicySettings()
    cors: CorsSettings = CorsSettings()
    placement: PlacementSettings = PlacementSettings()
    compute: ComputeSettings = ComputeSettings()
    network: NetworkSettings = NetworkSettings()


def _section(cls: type[Any], raw: Mapping[str, Any]) -> Any:
    """Build a section dataclass, rejecting unknown keys so typos are loud."""
    known = {f.name: f for f in dataclasses.fields(cls)}
    unknown = set(raw) - set(known)
    if unknown:
        raise ValueError(f"unknown setting(s) in [{cls.__name__}]: {sorted(unknown)}")
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in raw.items()}
    return cls(**values)


def _policy_overrides(path: str | None) -> dict[str, str]:
    if not path:
        return {}
    text = Path(path).read_text(encoding="utf-8")
    data = json.loads(text) if path.endswith(".json") else yaml.safe_load(text)
    return {str(k): str(v) for k, v in (data or {}).items()}


_COMPUTE_FLAGS = ("sim_hosts", "hosts_file")


def _compute(raw: Mapping[str, Any], flags: Mapping[str, Any]) -> ComputeSettings:
    values = dict(raw)
    values.update({k: flags[k] for k in _COMPUTE_FLAGS if flags.get(k) is not None})
    return _section(ComputeSettings, values)  # type: ignore[no-any-return]


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


def load(path: str | None = None, env: Mapping[str, str] | None = None,
         **flags: Any) -> Settings:
    """Build settings from a TOML file, then `STOWAGE_*` env vars, then flags."""
    raw: dict[str, Any] = {}
    if path:
        raw = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    env = env or {}
    top: dict[str, Any] = {k: raw[k] for k in ("database", "bind", "services") if k in raw}
    if env.get(ENV_PREFIX + "DATABASE"):
        top["database"] = env[ENV_PREFIX + "DATABASE"]
    top.update({k: v for k, v in flags.items() if v is not None})
    if "services" in top and isinstance(top["services"], (list, str)):
        svc = top["services"]
        top["services"] = tuple(svc.split(",") if isinstance(svc, str) else svc)
    policy_raw = dict(raw.get("policy", {}))
    policy = _section(PolicySettings, policy_raw)
    policy = dataclasses.replace(policy, overrides=_policy_overrides(policy.file))
    return Settings(
        api=_section(ApiSettings, raw.get("api", {})),
        policy=policy,
        cors=_section(CorsSettings, raw.get("cors", {})),
        placement=_section(PlacementSettings, raw.get("placement", {})),
        compute=_compute({**raw.get("compute", {}), **_upgrade_levels(raw)}, flags),
        network=_section(NetworkSettings, raw.get("network", {})),
        **{k: v for k, v in top.items() if k not in _COMPUTE_FLAGS},
    )
