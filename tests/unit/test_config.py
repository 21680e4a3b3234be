"""Settings layering: defaults < TOML file < environment < flags."""

from __future__ import annotations

from pathlib import Path

import pytest

from stowage import cli, config


def test_defaults() -> None:
    settings = config.load()
    assert settings.database == config.DEFAULT_DATABASE
    # Upstream's secure-RBAC defaults, and a keep-alive longer than client pools idle.
    assert settings.policy.enforce_new_defaults is True
    assert settings.api.auth_strategy == "noauth2"
    assert settings.api.keepalive_timeout == 75


def test_legacy_policy_and_keepalive_are_settings(tmp_path: Path) -> None:
    toml = tmp_path / "stowage.toml"
    toml.write_text("[api]\nkeepalive_timeout = 1.5\n[policy]\nenforce_new_defaults = false\n")
    settings = config.load(str(toml))
    assert settings.policy.enforce_new_defaults is False
    assert settings.api.keepalive_timeout == 1.5


@pytest.mark.parametrize("strategy", ["bogus", ""])
def test_unsupported_auth_strategy_is_refused(tmp_path: Path, strategy: str) -> None:
    # Starting with noauth2 in force when the operator asked for another strategy
    # would let anyone who reaches the port act as admin.
    toml = tmp_path / "stowage.toml"
    toml.write_text(f'[api]\nauth_strategy = "{strategy}"\n')
    with pytest.raises(ValueError, match="auth_strategy = '.*' is not supported; "
                                         "supported: 'noauth2', 'builtin-identity', "
                                         "'keystone'"):
        config.load(str(toml))


@pytest.mark.parametrize("timeout", [0, -5, "75", True])
def test_keepalive_timeout_must_be_positive_seconds(timeout: object) -> None:
    with pytest.raises(ValueError, match="keepalive_timeout"):
        config.ApiSettings(keepalive_timeout=timeout)  # type: ignore[arg-type]


def test_body_limits_per_service(tmp_path: Path) -> None:
    api = config.load().api
    # Nova's and Keystone's sizelimit default; more where upstream has no limit.
    assert [api.body_limit(s) for s in ("compute", "identity", "placement", "network",
                                        "image")] == [114_688, 114_688, 16 << 20, 1 << 20,
                                                      1 << 20]
    toml = tmp_path / "stowage.toml"
    toml.write_text("[api]\nmax_request_body_size = 200000\n"
                    "[api.max_request_body_sizes]\nplacement = 1000\n")
    api = config.load(str(toml)).api
    assert [api.body_limit(s) for s in ("compute", "placement", "network")] == [
        200_000, 1000, 1 << 20]


@pytest.mark.parametrize("values", [
    {"max_request_body_sizes": {"nova": 10}}, {"max_request_body_sizes": {"placement": 0}},
    {"max_request_body_size": "1MB"}, {"body_timeout": 0}, {"header_timeout": -1},
    {"max_connections": 0}, {"max_header_size": 1.5}, {"image_size_cap": True},
], ids=str)
def test_request_limits_must_be_positive(values: dict[str, object]) -> None:
    with pytest.raises(ValueError, match=r"\[api"):
        config.ApiSettings(**values)  # type: ignore[arg-type]


def test_serve_refuses_keystone_without_its_credentials(tmp_path: Path) -> None:
    toml = tmp_path / "stowage.toml"
    toml.write_text('[api]\nauth_strategy = "keystone"\n'
                    '[keystone_authtoken]\nauth_url = "http://keystone:5000/v3"\n')
    with pytest.raises(SystemExit) as exited:
        cli.main(["--config", str(toml), "serve", "--database",
                  f"sqlite:///{tmp_path / 'never.db'}"])
    assert ("auth_strategy = 'keystone' needs [keystone_authtoken] username, password, "
            "project_name") in str(exited.value.code)
    assert not (tmp_path / "never.db").exists()


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


def test_transport_url_from_file_then_environment(tmp_path: Path) -> None:
    assert config.load().transport_url == ""
    toml = tmp_path / "stowage.toml"
    toml.write_text('transport_url = "local://"\n')
    assert config.load(str(toml)).transport_url == "local://"
    url = "rabbit://stowage:secret@127.0.0.1:5672/stowage"
    assert config.load(str(toml), {"STOWAGE_TRANSPORT_URL": url}).transport_url == url


@pytest.mark.parametrize("url", ["amqp://u:secret@h:5672/", "u:secret@h:5672", "rabbit:/x"])
def test_unknown_transport_url_is_refused_without_its_password(url: str) -> None:
    with pytest.raises(ValueError, match="transport_url must be") as info:
        config.Settings(transport_url=url)
    assert "secret" not in str(info.value)
