"""Upstream's placement.conf mapped onto stowage's settings (stowage/placement_conf.py).

Two files in the shapes deployment tools write (placement_confs/): DevStack's
(Keystone, MySQL, debug) and kolla-ansible's (a log file, pool sizes, a
policy file beside the configuration, CORS, `[profiler]`, the 2025.1
candidate options). Then: what is refused, what is only mentioned, and how
the file layers under stowage's own settings file, the environment and flags.
"""

from __future__ import annotations

import logging
import textwrap
from pathlib import Path

import pytest

from stowage import config
from stowage.oslo_ini import IniError
from stowage.placement_conf import PlacementConf, read

CONFS = Path(__file__).parent / "placement_confs"


def _write(tmp_path: Path, text: str, name: str = "placement.conf") -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return str(path)


def _warnings(conf: PlacementConf) -> list[str]:
    return [text for level, text in conf.notes if level == logging.WARNING]


def test_devstack_file() -> None:
    conf = read(str(CONFS / "devstack.conf"))
    assert conf.settings == {
        "database": "mysql+pymysql://root:devstack-db-secret@127.0.0.1/placement?charset=utf8",
        "api": {"auth_strategy": "keystone"},
        "placement": {"randomize_allocation_candidates": False},
        "policy": {"enforce_new_defaults": True},
        "keystone_authtoken": {
            "memcached_servers": ["localhost:11211"], "project_domain_name": "Default",
            "project_name": "service", "user_domain_name": "Default",
            "password": "devstack-service-secret", "username": "placement",
            "auth_url": "https://192.0.2.10/identity", "interface": "public",
            "auth_type": "password", "www_authenticate_uri": "https://192.0.2.10/identity",
            "service_token_roles_required": True, "cafile": "/opt/stack/data/ca-bundle.pem"},
    }
    assert conf.keystone_authtoken == {
        "memcached_servers": ["localhost:11211"], "cafile": "/opt/stack/data/ca-bundle.pem",
        "project_domain_name": "Default", "project_name": "service",
        "user_domain_name": "Default", "password": "devstack-service-secret",
        "username": "placement", "auth_url": "https://192.0.2.10/identity",
        "interface": "public", "auth_type": "password",
        "www_authenticate_uri": "https://192.0.2.10/identity",
        "service_token_roles_required": True}
    assert conf.log.debug is True and conf.log.log_file is None
    assert _warnings(conf) == []
    [(level, ignored)] = [note for note in conf.notes if note[0] != logging.WARNING]
    assert level == logging.INFO
    assert "[DEFAULT] use_syslog, [DEFAULT] logging_context_format_string" in ignored


def test_kolla_file() -> None:
    conf = read(str(CONFS / "kolla.conf"))
    assert {k: v for k, v in conf.settings.items() if k != "keystone_authtoken"} == {
        "database": "mysql+pymysql://placement:kolla-db-secret@192.0.2.20:3306/placement"
                    "?read_default_group=placement",
        "api": {"auth_strategy": "keystone"},
        "placement": {"randomize_allocation_candidates": True,
                      "max_allocation_candidates": 100000},
        "policy": {"file": str(CONFS / "placement-policy.yaml")},
        "cors": {"allowed_origin": ["https://dashboard.example.org",
                                    "https://horizon.example.org"],
                 "max_age": 600, "allow_credentials": False},
    }
    auth = conf.keystone_authtoken
    # Deprecated names under their current ones; types as keystonemiddleware's.
    assert auth["memcached_servers"] == ["192.0.2.31:11211", "192.0.2.32:11211"]
    assert auth["token_cache_time"] == 600
    assert auth["service_token_roles"] == ["service", "admin"]  # a continued line
    assert auth["cafile"] == "" and auth["memcache_security_strategy"] == "ENCRYPT"
    assert "memcache_servers" not in auth
    assert conf.log.debug is False
    assert conf.log.log_file == "/var/log/kolla/placement/placement-api.log"
    # Only what stowage implements reaches the settings; `cafile =` (empty) is unset.
    assert conf.settings["keystone_authtoken"] == {
        "www_authenticate_uri": "http://192.0.2.30:5000", "auth_url": "http://192.0.2.30:5000",
        "auth_type": "password", "project_domain_id": "default", "user_domain_id": "default",
        "project_name": "service", "username": "placement", "password": "kolla-service-secret",
        "region_name": "RegionOne", "memcached_servers": ["192.0.2.31:11211",
                                                          "192.0.2.32:11211"],
        "token_cache_time": 600, "service_token_roles": ["service", "admin"]}
    assert [w.split(": ", 1)[1].split(" is not")[0] for w in _warnings(conf)] == [
        "[keystone_authtoken] service_type", "[keystone_authtoken] memcache_security_strategy",
        "[keystone_authtoken] memcache_secret_key"]
    [(_, ignored)] = [note for note in conf.notes if note[0] != logging.WARNING]
    for option in ("[oslo_concurrency] lock_path", "[placement_database] max_pool_size",
                   "[workarounds] optimize_for_wide_provider_trees", "[profiler] hmac_keys",
                   "[oslo_middleware] enable_proxy_headers_parsing"):
        assert option in ignored


def test_the_kolla_file_builds_settings_with_its_policy_override() -> None:
    conf = read(str(CONFS / "kolla.conf"))
    settings = config.load(None, {}, placement=conf.settings)
    assert settings.api.auth_strategy == "keystone"
    assert settings.keystone_authtoken.user_domain_id == "default"
    assert settings.keystone_authtoken.memcached_servers == ("192.0.2.31:11211",
                                                             "192.0.2.32:11211")
    assert settings.keystone_authtoken.token_cache_time == 600
    assert settings.placement.max_allocation_candidates == 100000
    assert settings.placement.randomize_allocation_candidates is True
    assert settings.policy.overrides == {"placement:resource_providers:list": "role:reader"}
    assert settings.cors.allowed_origin == ("https://dashboard.example.org",
                                            "https://horizon.example.org")
    assert settings.database.endswith("?read_default_group=placement")


def test_keystone_authtoken_options_stowage_lacks_are_warned_once_and_dropped(
        tmp_path: Path) -> None:
    conf = read(_write(tmp_path, """
        [placement_database]
        connection = sqlite:///placement.db
        [keystone_authtoken]
        auth_uri = http://127.0.0.1:5000/v3
        auth_url = http://127.0.0.1:5000/v3
        username = placement
        password = pw
        project_name = service
        insecure = true
        delay_auth_decision = true
        memcache_pool_maxsize = 20
        region_name =
        """))
    assert conf.settings["keystone_authtoken"] == {
        "www_authenticate_uri": "http://127.0.0.1:5000/v3",
        "auth_url": "http://127.0.0.1:5000/v3", "username": "placement", "password": "pw",
        "project_name": "service", "insecure": True}
    warned = _warnings(conf)
    assert [w.split(": ", 1)[0].rsplit(":", 1)[1] for w in warned] == ["10", "11"]
    assert "always refused (401)" in warned[0]
    assert warned[1].endswith("[keystone_authtoken] memcache_pool_maxsize is not "
                              "implemented by stowage, ignored")
    settings = config.load(None, {}, placement=conf.settings)
    assert settings.api.auth_strategy == "keystone"
    assert settings.keystone_authtoken.challenge_uri == "http://127.0.0.1:5000/v3"
    assert settings.keystone_authtoken.verify is False


def test_keystone_strategy_without_its_login_is_refused(tmp_path: Path) -> None:
    conf = read(_write(tmp_path, """
        [placement_database]
        connection = sqlite:///placement.db
        [keystone_authtoken]
        cafile = /etc/ssl/ca.pem
        """))
    with pytest.raises(ValueError, match=r"needs \[keystone_authtoken\] auth_url, username"):
        config.load(None, {}, placement=conf.settings)


def test_auth_strategy_defaults_to_keystone_and_reads_the_deprecated_spelling(
        tmp_path: Path) -> None:
    plain = read(_write(tmp_path, "[placement_database]\nconnection = sqlite://\n"))
    assert plain.settings["api"] == {"auth_strategy": "keystone"}
    old = read(_write(tmp_path, "[DEFAULT]\nauth_strategy = noauth2\n"))
    assert old.settings["api"] == {"auth_strategy": "noauth2"}
    assert any("deprecated, read as [api] auth_strategy" in w for w in _warnings(old))


@pytest.mark.parametrize(("text", "where", "why"), [
    ("[DEFAULT]\ndebug = maybe\n", r":2: \[DEFAULT\] debug", "unexpected boolean value"),
    ("[api]\nauth_strategy = password\n", r":2: \[api\] auth_strategy",
     r"valid values are \[keystone, noauth2\]"),
    ("[placement]\n\nmax_allocation_candidates = many\n",
     r":3: \[placement\] max_allocation_candidates", "is not an integer"),
    ("[placement]\nallocation_candidates_generation_strategy = random\n",
     r":2: \[placement\] allocation_candidates_generation_strategy", "valid values are"),
    ("[cors]\nmax_age = 1h\n", r":2: \[cors\] max_age", "is not an integer"),
    ("[keystone_authtoken]\ntoken_cache_time = soon\n",
     r":2: \[keystone_authtoken\] token_cache_time", "is not an integer"),
    ("[oslo_policy]\npolicy_file = /nonexistent/policy.yaml\n",
     r":2: \[oslo_policy\] policy_file", "not found"),
])
def test_an_invalid_value_names_file_line_section_and_option(
        tmp_path: Path, text: str, where: str, why: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(IniError, match=rf"^{path}{where}: .*{why}"):
        read(path)


def test_unknown_options_and_sections_are_warnings_each_once(tmp_path: Path) -> None:
    conf = read(_write(tmp_path, """
        [placement]
        randomise_allocation_candidates = true
        [database]
        connection = mysql+pymysql://x@db/placement
        max_pool_size = 4
        [placemnet_database]
        connection = sqlite://
        [placement]
        randomise_allocation_candidates = false
        """))
    warnings = _warnings(conf)
    assert len(warnings) == 3, warnings
    assert warnings[0].endswith(":9: unknown option [placement] "
                                "randomise_allocation_candidates ignored")
    assert ("unknown section [database] ignored with its options ['connection', "
            "'max_pool_size'] (Placement reads [placement_database], not [database])"
            ) in warnings[1]
    assert "unknown section [placemnet_database]" in warnings[2]
    assert "database" not in conf.settings  # [database] is not a fallback


def test_what_stowage_does_not_do_is_a_warning(tmp_path: Path) -> None:
    conf = read(_write(tmp_path, """
        [placement]
        allocation_candidates_generation_strategy = breadth-first
        [oslo_policy]
        enforce_scope = false
        """))
    assert [w.split(": ", 1)[1] for w in _warnings(conf)] == [
        "[placement] allocation_candidates_generation_strategy = breadth-first is not "
        "supported: candidates are generated depth-first",
        "[oslo_policy] enforce_scope = false is not supported: scope is always enforced"]


def test_policy_file_is_found_beside_the_file_and_the_legacy_option_is_read(
        tmp_path: Path) -> None:
    assert "policy" not in read(_write(tmp_path, "[api]\n")).settings  # no policy.yaml
    (tmp_path / "policy.yaml").write_text("{}\n")
    found = read(_write(tmp_path, "[api]\n")).settings["policy"]
    assert found == {"file": str(tmp_path / "policy.yaml")}
    (tmp_path / "legacy.yaml").write_text("{}\n")
    legacy = read(_write(tmp_path, "[placement]\npolicy_file = legacy.yaml\n"))
    assert legacy.settings["policy"] == {"file": str(tmp_path / "legacy.yaml")}
    both = read(_write(tmp_path, "[placement]\npolicy_file = legacy.yaml\n"
                                 "[oslo_policy]\npolicy_file = policy.yaml\n"))
    assert both.settings["policy"] == {"file": str(tmp_path / "policy.yaml")}


def test_log_options(tmp_path: Path) -> None:
    conf = read(_write(tmp_path, """
        [DEFAULT]
        logdir = /var/log/placement
        logfile = api.log
        log_date_format = %H:%M:%S
        use_stderr = yes
        log_config = /etc/placement/logging.conf
        """))
    assert conf.log.log_file == "/var/log/placement/api.log"
    assert conf.log.log_date_format == "%H:%M:%S"
    assert conf.log.use_stderr is True and conf.log.debug is None
    assert conf.log.log_config_append == "/etc/placement/logging.conf"


def test_stowage_file_environment_and_flags_win_over_placement_conf(
        tmp_path: Path) -> None:
    conf = read(_write(tmp_path, """
        [api]
        auth_strategy = noauth2
        [placement_database]
        connection = sqlite:///from-placement-conf.db
        [placement]
        randomize_allocation_candidates = true
        max_allocation_candidates = 50
        """))
    toml = tmp_path / "stowage.toml"
    toml.write_text('database = "sqlite:///from-toml.db"\n'
                    "[placement]\nmax_allocation_candidates = 7\n")
    only = config.load(None, {}, placement=conf.settings)
    assert only.database == "sqlite:///from-placement-conf.db"
    both = config.load(str(toml), {}, placement=conf.settings)
    assert both.database == "sqlite:///from-toml.db"
    # Table by table, key by key: the TOML file's [placement] keeps the other key.
    assert both.placement.max_allocation_candidates == 7
    assert both.placement.randomize_allocation_candidates is True
    env = config.load(str(toml), {"STOWAGE_DATABASE": "sqlite:///env.db"},
                      placement=conf.settings)
    assert env.database == "sqlite:///env.db"
    flag = config.load(str(toml), {"STOWAGE_DATABASE": "sqlite:///env.db"},
                       placement=conf.settings, database="sqlite:///flag.db")
    assert flag.database == "sqlite:///flag.db"


def test_a_placement_conf_without_a_database_is_refused_unless_one_is_given(
        tmp_path: Path) -> None:
    conf = read(_write(tmp_path, "[api]\nauth_strategy = noauth2\n"))
    with pytest.raises(ValueError, match=r"connection in group \[placement_database\]"):
        config.load(None, {}, placement=conf.settings)
    given = config.load(None, {}, placement=conf.settings, database="sqlite:///x.db")
    assert given.database == "sqlite:///x.db"
