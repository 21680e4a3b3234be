"""The `[network]` settings section: defaults, a TOML file, and refused values."""

from __future__ import annotations

from pathlib import Path

import pytest

from stowage import config


def test_defaults() -> None:
    settings = config.load()
    assert settings.network == config.NetworkSettings()
    assert settings.network.resource_request_format == "groups"
    assert "network" in settings.services


def test_read_from_the_settings_file(tmp_path: Path) -> None:
    path = tmp_path / "stowage.toml"
    path.write_text('[network]\nresource_request_format = "legacy"\n'
                    'tenant_network_type = "geneve"\nglobal_physnet_mtu = 9000\n')
    network = config.load(str(path)).network
    assert (network.resource_request_format, network.tenant_network_type,
            network.global_physnet_mtu) == ("legacy", "geneve", 9000)


@pytest.mark.parametrize(("values", "reason"), [
    ({"resource_request_format": "v3"}, "resource_request_format"),
    ({"tenant_network_type": "vlan"}, "tenant_network_type"),
    ({"global_physnet_mtu": 10}, "global_physnet_mtu"),
    ({"global_physnet_mtu": True}, "global_physnet_mtu"),
    ({"base_mac": "fa:16:3e"}, "base_mac"),
    ({"base_mac": "fa:16:3e:00:00:zz"}, "base_mac"),
])
def test_refused_values(values: dict[str, object], reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        config.NetworkSettings(**values)  # type: ignore[arg-type]


def test_unknown_keys_are_loud(tmp_path: Path) -> None:
    path = tmp_path / "stowage.toml"
    path.write_text("[network]\nresource_request_formats = 'groups'\n")
    with pytest.raises(ValueError, match="unknown setting"):
        config.load(str(path))
