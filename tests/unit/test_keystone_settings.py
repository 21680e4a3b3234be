"""`[keystone_authtoken]`: keystonemiddleware's option names, each bad value named."""

from __future__ import annotations

from pathlib import Path

import pytest

from stowage import config

COMPLETE = ('[api]\nauth_strategy = "keystone"\n[keystone_authtoken]\n'
            'www_authenticate_uri = "https://keystone.example/v3"\n'
            'auth_url = "http://keystone.internal:5000/v3"\nauth_type = "password"\n'
            'username = "placement"\npassword = "pw"\nproject_name = "service"\n'
            'user_domain_name = "Default"\nproject_domain_name = "Default"\n'
            'region_name = "RegionOne"\ninterface = "public"\ntoken_cache_time = 60\n'
            'service_token_roles = ["service"]\nservice_token_roles_required = true\n'
            'memcached_servers = ["127.0.0.1:11211"]\nhttp_connect_timeout = 2.5\n'
            'http_request_max_retries = 0\n')


def test_every_option_is_read(tmp_path: Path) -> None:
    toml = tmp_path / "stowage.toml"
    toml.write_text(COMPLETE)
    conf = config.load(str(toml)).keystone_authtoken
    assert (conf.username, conf.project_name, conf.region_name, conf.interface) == (
        "placement", "service", "RegionOne", "public")
    assert conf.token_cache_time == 60 and conf.service_token_roles_required is True
    assert conf.memcached_servers == ("127.0.0.1:11211",)
    assert (conf.http_connect_timeout, conf.http_request_max_retries) == (2.5, 0)
    assert conf.challenge_uri == "https://keystone.example/v3"


def test_defaults_are_keystonemiddleware_s() -> None:
    conf = config.KeystoneAuthtokenSettings(auth_url="http://k:5000/v3")
    assert (conf.token_cache_time, conf.service_token_roles,
            conf.service_token_roles_required, conf.interface,
            conf.http_request_max_retries) == (300, ("service",), False, "internal", 3)
    assert conf.challenge_uri == "http://k:5000/v3"  # www_authenticate_uri unset


@pytest.mark.parametrize(("option", "value"), [
    ("auth_url", "keystone:5000"), ("www_authenticate_uri", 5000),
    ("auth_type", "v3token"), ("interface", "private"), ("token_cache_time", -2),
    ("token_cache_time", "300"), ("http_connect_timeout", 0),
    ("http_connect_timeout", 301), ("http_request_max_retries", -1),
    ("http_request_max_retries", True), ("service_token_roles", "service"),
    ("memcached_servers", ("",)), ("service_token_roles_required", "yes"),
], ids=str)
def test_a_bad_value_names_its_option(option: str, value: object) -> None:
    with pytest.raises(ValueError, match=rf"\[keystone_authtoken\] {option} "):
        config.KeystoneAuthtokenSettings(**{option: value})  # type: ignore[arg-type]


def test_an_unknown_option_is_refused(tmp_path: Path) -> None:
    toml = tmp_path / "stowage.toml"
    toml.write_text("[keystone_authtoken]\nauth_uri = \"http://k/v3\"\n")
    with pytest.raises(ValueError, match=r"unknown setting\(s\) in \[keystone_authtoken\]"):
        config.load(str(toml))
