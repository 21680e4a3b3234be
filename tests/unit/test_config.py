"""Settings layering: defaults < TOML file < environment < flags."""

from __future__ import annotations

from pathlib import Path

import pytest

from stowage import config


def test_defaults() -> None:
    settings = config.load()
    assert settings.database == config.DEFAULT_DATABASE
    assert settings.policy.enforce_new_defaults is False


def test_layers(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text('"placement:traits:list": "@"\n')
    toml = tmp_path / "stowage.toml"
    toml.write_text(f'database = "sqlite:///a.db"\n[policy]\nfile = "{policy}"\n'
                    '[cors]\nallowed_origin = ["http://x"]\n')
    settings = config.load(str(toml), {"STOWAGE_DATABASE": "sqlite:///b.db"}, bind="0:1")
    assert settings.database == "sqlite:///b.db"
    assert settings.bind == "0:1"
    assert settings.cors.allowed_origin == ("http://x",)
    assert settings.policy.overrides == {"placement:traits:list": "@"}
    flagged = config.load(str(toml), {"STOWAGE_DATABASE": "sqlite:///b.db"},
                          database="sqlite:///c.db")
    assert flagged.database == "sqlite:///c.db"


def test_unknown_keys_are_rejected(tmp_path: Path) -> None:
    toml = tmp_path / "bad.toml"
    toml.write_text("[cors]\nalowed_origin = []\n")
    with pytest.raises(ValueError, match="alowed_origin"):
        config.load(str(toml))
