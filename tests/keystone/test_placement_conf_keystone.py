"""`stowage serve --services placement --placement-config F`, F asking for Keystone.

The operator's placement.conf, in the shape kolla-ansible writes it
(`[api] auth_strategy = keystone`, a `[keystone_authtoken]` section with
domains by id and options stowage does not implement), is all the process
is given: it starts, sends a client without a token to Keystone with a 401,
and serves a token the real Keystone fixture issued.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import httpx

from tests.dbs import throwaway_database
from tests.functional.conftest import free_port
from tests.functional.keystone_deploy import service_user
from tests.functional.processes import StowageProcess, answers_http
from tests.keystone.fixture import Keystone

VERSION = {"openstack-api-version": "placement 1.39"}


def _conf(tmp_path: Path, keystone: Keystone, url: str) -> Path:
    user, project = service_user(keystone)
    path = tmp_path / "placement.conf"
    path.write_text(textwrap.dedent(f"""\
        [api]
        auth_strategy = keystone

        [placement_database]
        connection = {url}

        [keystone_authtoken]
        service_type = placement
        www_authenticate_uri = {keystone.auth_url}
        auth_url = {keystone.auth_url}
        auth_type = password
        project_domain_id = default
        user_domain_id = default
        project_name = {project}
        username = {user.name}
        password = {user.password}
        region_name = {keystone.region}
        cafile =
        memcache_security_strategy = ENCRYPT
        memcache_secret_key = not-used-here
        http_connect_timeout = 5
        """))
    return path


def test_serves_with_the_files_keystone_authtoken(tmp_path: Path, keystone: Keystone) -> None:
    keystone.ensure_running()
    with throwaway_database("sqlite") as url:
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        serve = StowageProcess("serve", ["serve", "--services", "placement",
                                         "--placement-config",
                                         str(_conf(tmp_path, keystone, url)),
                                         "--bind", f"127.0.0.1:{port}"],
                               tmp_path, answers_http(f"{base}/"))
        serve.start()
        try:
            serve.wait_ready()
            refused = httpx.get(f"{base}/resource_providers", headers=VERSION)
            assert refused.status_code == 401
            assert refused.headers["www-authenticate"] == f'Keystone uri="{keystone.auth_url}"'
            token = keystone.admin.admin_token()
            made = httpx.post(f"{base}/resource_providers", json={"name": "conf-keystone"},
                              headers={**VERSION, "x-auth-token": token})
            assert made.status_code == 200, made.text
            listed = httpx.get(f"{base}/resource_providers",
                               headers={**VERSION, "x-auth-token": token})
            assert [p["name"] for p in listed.json()["resource_providers"]] == [
                "conf-keystone"]
        finally:
            serve.stop()
        log = serve.log()
        assert f"tokens validated by Keystone at {keystone.auth_url}" in log
        for option in ("service_type", "memcache_security_strategy", "memcache_secret_key"):
            assert log.count(f"[keystone_authtoken] {option} is not implemented") == 1, log
        assert "cafile" not in log
