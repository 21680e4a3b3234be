"""The service-user tables ([placement], [network], [nova]) and the client factory's choice.

Settings are read from TOML text as an operator writes them; the factory is
asked for each peer and answers in-process, keystoneauth or explicit URL.
Keystone itself is not needed here: failures to reach it are real refused
or silent sockets on loopback (tests/keystone/ has the real Keystone).
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from stowage import config
from stowage.service_users import ADAPTER_OPTIONS, SESSION_OPTIONS, ServiceUser
from stowage.web import service_clients as sc
from stowage.web.service_client import close_send

PASSWORD_TABLE = """
[placement]
randomize_allocation_candidates = true
auth_type = "password"
auth_url = "http://127.0.0.1:9/v3"
username = "placement"
password = "s3cret"
project_name = "service"
user_domain_name = "Default"
project_domain_name = "Default"
region_name = "RegionOne"
valid_interfaces = ["internal"]
"""


def _load(tmp_path: Path, text: str) -> config.Settings:
    path = tmp_path / "stowage.toml"
    path.write_text(text)
    return config.load(str(path))


def test_a_placement_table_holds_both_placement_settings_and_its_service_user(
        tmp_path: Path) -> None:
    settings = _load(tmp_path, PASSWORD_TABLE)
    assert settings.placement.randomize_allocation_candidates is True
    user = settings.service_user("placement")
    assert user.configured and user.service_type == "placement"
    assert user.options["username"] == "placement" and user.interfaces() == ["internal"]
    assert "s3cret" not in repr(settings)
    assert not settings.service_user("network").configured


def test_nova_table_takes_neutrons_endpoint_type_and_defaults_to_public(
        tmp_path: Path) -> None:
    base = ('[nova]\nauth_type = "password"\nauth_url = "http://k/v3"\nusername = "nova"\n'
            'password = "p"\n')
    assert _load(tmp_path, base).service_user("nova").interfaces() == ["public"]
    chosen = _load(tmp_path, base + 'endpoint_type = "internal"\n').service_user("nova")
    assert chosen.interfaces() == ["internal"] and chosen.service_type == "compute"
    assert _load(tmp_path, "[network]\nauth_type = \"password\"\nauth_url = \"http://k\"\n")\
        .service_user("network").interfaces() == ["internal", "public"]  # Nova's default


@pytest.mark.parametrize(("text", "message"), [
    ('[placement]\nauth_type = "password"\nusername = "p"\n', "needs auth_url"),
    ('[placement]\nauth_type = "passwrd"\nauth_url = "http://k"\n', "not a keystoneauth plugin"),
    ('[placement]\nusername = "p"\npassword = "x"\n', "without auth_type"),
    ('[placement]\nauth_type = "password"\nauth_url = "http://k"\nusernme = "p"\n',
     "unknown setting(s) in [placement]: ['usernme']"),
    ('[nova]\nauth_type = "password"\nauth_url = "http://k"\nvalid_interfaces = ["public"]\n',
     "unknown setting(s) in [nova]"),
    ('[nova]\nauth_type = "password"\nauth_url = "http://k"\nendpoint_type = "publicURL"\n',
     "endpoint_type takes public, internal, admin"),
    ('[network]\nauth_type = "password"\nauth_url = "http://k"\ntimeout = 0\n',
     "timeout must be a positive number"),
    ('[placement]\nauth_type = "password"\nauth_url = "http://k"\nversion = "1.39"\n',
     "unknown setting(s) in [placement]: ['version']"),
])
def test_a_bad_service_user_table_is_refused_naming_the_table(tmp_path: Path, text: str,
                                                              message: str) -> None:
    with pytest.raises(ValueError, match=None) as caught:
        _load(tmp_path, text)
    assert message in str(caught.value)


def test_the_option_names_are_keystoneauths_own() -> None:
    """Written out (keystoneauth lists them through oslo.config only); never drifting."""
    pytest.importorskip("oslo_config")
    from keystoneauth1 import loading

    assert set(SESSION_OPTIONS) == {o.dest for o in loading.get_session_conf_options()}
    adapter = {o.dest for o in loading.get_adapter_conf_options(include_deprecated=False)}
    assert set(ADAPTER_OPTIONS) == adapter - {"version", "min_version", "max_version"}


def test_the_factory_picks_in_process_then_service_user_then_explicit_url(
        tmp_path: Path) -> None:
    settings = _load(tmp_path, PASSWORD_TABLE + '[compute]\nnetwork_url = "http://n:1/x"\n')
    clients = sc.ServiceClients(settings)
    assert clients.way(sc.PLACEMENT, served_here=True) == "in-process"
    assert "service user placement ([placement])" in clients.way(sc.PLACEMENT, False)
    assert "catalog's placement endpoint" in clients.way(sc.PLACEMENT, False)
    assert clients.way(sc.NETWORK, False) == "http://n:1/x"
    assert clients.way(sc.COMPUTE, False) == "nowhere"
    assert clients.send(sc.COMPUTE, {}) is None
    keystone = clients.send(sc.PLACEMENT, {"x-auth-token": "admin"})
    assert type(keystone).__name__ == "_KeystoneSend"
    plain = clients.send(sc.NETWORK, {"x-auth-token": "admin"})
    assert plain is not None and str(plain.http.base_url) == "http://n:1/x/"  # type: ignore
    for send in (keystone, plain):
        assert send is not None
        close_send(send)


def test_an_explicit_url_under_keystone_tokens_needs_a_service_user() -> None:
    """No token table to mint into: a Keystone-checked Placement takes Keystone's tokens."""
    settings = config.Settings(
        compute=config.ComputeSettings(placement_url="http://p:1"),
        api=config.ApiSettings(auth_strategy="keystone"),
        keystone_authtoken=config.KeystoneAuthtokenSettings(
            auth_url="http://k/v3", username="placement", password="x",
            project_name="service"))
    with pytest.raises(ValueError, match=r"\[placement\] auth_type"):
        sc.ServiceClients(settings).send(sc.PLACEMENT, {})


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A loopback port that accepts connections and never answers (a hung Keystone)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        yield int(sock.getsockname()[1])


def _user(auth_url: str, timeout: float) -> config.Settings:
    return config.Settings(service_users={"placement": ServiceUser(
        "placement", {"auth_type": "password", "auth_url": auth_url, "username": "placement",
                      "password": "x", "project_name": "service", "timeout": timeout,
                      "user_domain_name": "Default", "project_domain_name": "Default"})})


def test_a_keystone_that_refuses_connections_is_unreachable_at_once() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again below: nothing listens there
    send = sc.ServiceClients(_user(f"http://127.0.0.1:{port}/v3", 5)).send(sc.PLACEMENT, {})
    assert send is not None
    with pytest.raises(sc.Unreachable, match=r"\[placement\]'s service user placement"):
        send("GET", "/resource_providers", None, None)


def test_a_keystone_that_never_answers_fails_within_the_tables_timeout(
        silent_port: int) -> None:
    send = sc.ServiceClients(_user(f"http://127.0.0.1:{silent_port}/v3", 1)).send(
        sc.PLACEMENT, {})
    assert send is not None
    started = time.monotonic()
    with pytest.raises(sc.Unreachable) as caught:
        send("GET", "/resource_providers", None, None)
    assert time.monotonic() - started < 5, "bounded by [placement] timeout = 1"
    assert "cannot reach Keystone" in str(caught.value)
