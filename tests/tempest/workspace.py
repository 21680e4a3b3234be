"""The Tempest workspace: `tempest init`, then our tempest.conf and accounts.yaml.

Feature flags say what stowage serves; a feature it does not serve is off
here (so Tempest skips its tests with the reason "feature disabled"), never
excused in the known-failures list.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from stowage.config import ComputeSettings
from tests.tempest.cloud import (
    IDENTITY_ADMIN,
    NETWORK,
    PASSWORD,
    PUBLIC_NETWORK,
    Account,
    Cloud,
)

__all__ = ["prepare"]

# [compute-feature-enabled]: what the simulated hypervisor and the API serve.
COMPUTE_FEATURES: dict[str, object] = {
    "disk_config": True, "change_password": False, "console_output": True,
    "resize": True, "pause": True, "shelve": True, "shelve_migrate": True, "suspend": True,
    "cold_migration": True, "live_migration": True, "live_migrate_back_and_forth": True,
    "metadata_service": False, "block_migration_for_live_migration": True,
    "can_migrate_between_any_hosts": True, "vnc_console": False, "spice_console": False,
    "serial_console": False, "rescue": True, "stable_rescue": False,
    "enable_instance_password": True, "interface_attach": True, "snapshot": True,
    "personality": False, "attach_encrypted_volume": False, "config_drive": False,
    "swap_volume": False, "volume_backed_live_migration": False,
    "volume_multiattach": False, "ide_bus": False, "unified_limits": False,
    "vtpm_live_migration": False, "hostname_fqdn_sanitization": True,
}
SERVICES: dict[str, object] = {"nova": True, "glance": True, "neutron": True, "cinder": False,
            "swift": False, "horizon": False, "placement": True, "keystone": True}


def _ini(sections: dict[str, dict[str, object]]) -> str:
    out = []
    for name, values in sections.items():
        out.append(f"[{name}]")
        for key, value in values.items():
            text = str(value).lower() if isinstance(value, bool) else str(value)
            out.append(f"{key} = {text}")
        out.append("")
    return "\n".join(out)


def _alt_last(account: Account) -> bool:
    """Whether Tempest must not hand `account` out as an untyped credential."""
    return account.roles == ("reader",)


def _accounts_yaml(cloud: Cloud) -> str:
    """Tempest's accounts file. Its `alt` credential asks for no role, and Tempest
    then hands out the first free non-admin account in file order (preprov_creds.py),
    so reader-only accounts go last: `alt` is always a member or manager (it shares
    images and makes ports), while the reader personas still find their reader in
    the primary's project."""
    entries = []
    for account in sorted(cloud.accounts, key=_alt_last):
        entry: dict[str, object] = {
            "username": account.username, "project_name": account.project,
            "password": PASSWORD, "user_domain_name": "Default",
            "project_domain_name": "Default"}
        if account.roles == ("admin",):
            entry["types"] = ["admin"]
        else:
            entry["roles"] = list(account.roles)
        entries.append(entry)
    return yaml.safe_dump(entries, sort_keys=False)


def tempest_conf(cloud: Cloud, workdir: Path) -> str:
    images, flavors = cloud.images, cloud.flavors
    return _ini({
        "DEFAULT": {"log_dir": workdir / "logs", "log_file": "tempest.log"},
        # Pre-provisioned accounts, except for classes that force tenant isolation:
        # those get dynamic credentials made by the admin named here.
        "auth": {"use_dynamic_credentials": False, "create_isolated_networks": False,
                 "test_accounts_file": workdir / "etc" / "accounts.yaml",
                 "default_credentials_domain_name": "Default",
                 "admin_username": IDENTITY_ADMIN.username, "admin_password": PASSWORD,
                 "admin_project_name": IDENTITY_ADMIN.project,
                 "admin_domain_name": "Default"},
        "identity": {"uri_v3": f"{cloud.url}/identity/v3", "auth_version": "v3",
                     "region": "RegionOne", "v3_endpoint_type": "public"},
        "identity-feature-enabled": {"api_v2": False, "api_v3": True},
        "compute": {"image_ref": images[0], "image_ref_alt": images[1],
                    "flavor_ref": flavors[0], "flavor_ref_alt": flavors[1],
                    "build_interval": 1, "build_timeout": 60, "ready_wait": 0,
                    "min_compute_nodes": 2, "min_microversion": "2.1",
                    "max_microversion": cloud.max_microversion, "region": "RegionOne",
                    "shelved_offload_time": 0, "fixed_network_name": NETWORK},
        "network": {"public_network_id": cloud.public_network_id,
                    "floating_network_name": PUBLIC_NETWORK},
        "network-feature-enabled": {"api_extensions": ",".join(cloud.network_extensions),
                                    "floating_ips": True, "port_security": False,
                                    "ipv6": False},
        "compute-feature-enabled": {
            **COMPUTE_FEATURES,
            # Tempest runs a scheduler filter's tests only when the filter is on.
            "scheduler_enabled_filters": ",".join(ComputeSettings().enabled_filters)},
        "image": {"build_interval": 1, "build_timeout": 60},
        # The Image service does not inspect uploaded data (docs/image.md), so Tempest
        # may upload bytes that are not really of the image's disk_format.
        "image-feature-enabled": {"image_format_enforcement": False},
        "validation": {"run_validation": False},
        "service_available": SERVICES,
        "oslo_concurrency": {"lock_path": workdir / "locks"},
    })


def prepare(cloud: Cloud, workdir: Path, venv: Path) -> Path:
    """A ready workspace directory under `workdir`; `tempest run` runs in it."""
    space = workdir / "tempest"
    if not (space / ".stestr.conf").exists():
        # Its own workspace registry, so no run touches ~/.tempest or another's name.
        subprocess.run([str(venv / "bin" / "tempest"), "init", "--name", "stowage",
                        "--workspace-path", str(workdir / "workspaces.yaml"), str(space)],
                       check=True, capture_output=True)
    (space / "etc" / "accounts.yaml").write_text(_accounts_yaml(cloud))
    (space / "etc" / "tempest.conf").write_text(tempest_conf(cloud, space))
    (space / "logs").mkdir(exist_ok=True)
    (space / "locks").mkdir(exist_ok=True)
    return space
