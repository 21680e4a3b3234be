"""What a service-user Send does when Keystone or the called service says no.

    Send ([placement] table) --token--> stowage Placement (auth_strategy keystone,
                                        token_cache_time -1: every token asked of Keystone)

- the token it holds is revoked: Placement answers 401, keystoneauth fetches
  a new token and sends the request once more -- the caller sees 200;
- Keystone refuses the password, or its catalog has no such service:
  ServiceUserError naming the table and what to change.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterator
from typing import Any

import pytest

from stowage.service_users import ServiceUser
from stowage.web import service_clients as sc
from stowage.web.service_client import close_send
from tests.functional.conftest import LiveServer
from tests.keystone.fixture import Keystone
from tests.keystone.service_users import PASSWORD, TokenLog, register, registered_placement

HEADERS = {"accept": "application/json", "openstack-api-version": "placement 1.39"}


@pytest.fixture(scope="module")
def placement(keystone: Keystone, tmp_path_factory: pytest.TempPathFactory
              ) -> Iterator[tuple[LiveServer, TokenLog]]:
    with registered_placement(keystone, tmp_path_factory.mktemp("failures"),
                              "token_cache_time = -1") as served:
        yield served


def _user(keystone: Keystone, **changes: Any) -> ServiceUser:
    options: dict[str, Any] = {
        "auth_type": "password", "auth_url": keystone.auth_url, "username": "placement",
        "password": PASSWORD, "project_name": "service", "user_domain_name": "Default",
        "project_domain_name": "Default", "region_name": keystone.region, "timeout": 10}
    options.update(changes)
    return ServiceUser("placement", options)


def test_a_revoked_token_is_replaced_and_the_request_sent_once_more(
        keystone: Keystone, placement: tuple[LiveServer, TokenLog]) -> None:
    _, log = placement
    send = sc.keystone_send(_user(keystone), HEADERS)
    try:
        assert send("GET", "/resource_providers", None, None).status == 200
        first = log.seen[-1][1]
        keystone.admin.revoke(first)
        before = len(log.seen)
        answer = send("GET", "/resource_providers", None, None)
        assert answer.status == 200, answer.body
        sent = [token for _, token in log.seen[before:]]
        assert sent[0] == first and len(sent) == 2 and sent[1] != first
        assert keystone.admin.validate(sent[1])["user"]["name"] == "placement"
    finally:
        close_send(send)


def test_a_refused_password_names_the_table_to_fix(keystone: Keystone,
                                                   placement: tuple[LiveServer, TokenLog]
                                                   ) -> None:
    send = sc.keystone_send(_user(keystone, password="wrong"), HEADERS)
    with pytest.raises(sc.ServiceUserError, match=r"refused the credentials; check "
                       r"\[placement\] username, password"):
        send("GET", "/resource_providers", None, None)


def test_a_service_missing_from_the_catalog_says_how_to_register_it(
        keystone: Keystone, placement: tuple[LiveServer, TokenLog]) -> None:
    send = sc.keystone_send(_user(keystone, service_type="no-such-service"), HEADERS)
    with pytest.raises(sc.ServiceUserError, match="no no-such-service endpoint .*"
                       "stowage manage keystone register"):
        send("GET", "/resource_providers", None, None)


def test_endpoint_override_skips_the_catalog(keystone: Keystone,
                                             placement: tuple[LiveServer, TokenLog]) -> None:
    live, _ = placement
    user = _user(keystone, service_type="no-such-service",
                 endpoint_override=f"{live.url}/placement")
    send = sc.keystone_send(user, HEADERS)
    try:
        assert send("GET", "/resource_providers", None, None).status == 200
    finally:
        close_send(send)


def test_register_prints_tables_stowage_reads(keystone: Keystone,
                                              placement: tuple[LiveServer, TokenLog]) -> None:
    live, _ = placement
    status, out, _ = register(keystone, live.url, "placement")
    assert status == 0
    tables = tomllib.loads(out)
    assert tables["placement"]["username"] == "placement"
    assert tables["placement"]["password"] == PASSWORD  # --service-password, set again
    assert tables["api"] == {"auth_strategy": "keystone"}
    assert tables["keystone_authtoken"]["auth_url"] == keystone.auth_url
