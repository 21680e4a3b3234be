"""The `[quota]` settings section: Nova's defaults, a TOML file, and refused values."""

from __future__ import annotations

from pathlib import Path

import pytest

from stowage import config
from stowage.compute import quota_limits


def test_defaults_are_novas() -> None:
    quota = config.load().quota
    assert quota_limits.defaults(quota) == {
        "instances": 10, "cores": 20, "ram": 51200, "metadata_items": 128,
        "injected_files": 5, "injected_file_content_bytes": 10240,
        "injected_file_path_bytes": 255, "key_pairs": 100, "server_groups": 10,
        "server_group_members": 10, "fixed_ips": -1, "floating_ips": -1,
        "security_groups": -1, "security_group_rules": -1}
    assert quota.recheck_quota is True


def test_read_from_the_settings_file(tmp_path: Path) -> None:
    path = tmp_path / "stowage.toml"
    path.write_text("[quota]\ninstances = -1\ncores = 64\nrecheck_quota = false\n")
    quota = config.load(str(path)).quota
    assert (quota.instances, quota.cores, quota.recheck_quota) == (-1, 64, False)


@pytest.mark.parametrize("values", [
    {"cores": -2}, {"ram": "lots"}, {"instances": True}, {"recheck_quota": "yes"},
    {"floating_ips": 5},
])
def test_refused_values(values: dict[str, object]) -> None:
    with pytest.raises((ValueError, TypeError)):
        config.QuotaSettings(**values)  # type: ignore[arg-type]
