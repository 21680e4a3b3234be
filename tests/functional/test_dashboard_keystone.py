"""Signing in to the dashboard with `auth_strategy = "keystone"`: the form's password goes
to the real Keystone (tests/keystone) for a project-scoped token, which stowage then
validates like any API token. SQLite only: what differs from builtin-identity is where
the token comes from, not the database."""

from __future__ import annotations

import httpx

from tests.functional.keystone_deploy import keystone_stowage
from tests.functional.test_dashboard_http import BROWSER, sign_in
from tests.keystone.fixture import Keystone


def test_sign_in_with_keystone(keystone: Keystone) -> None:
    with keystone_stowage(keystone) as live, \
            httpx.Client(timeout=30, headers={"accept": BROWSER}) as browser:
        first = browser.get(live.url + "/")
        assert first.status_code == 303 and first.headers["location"] == "/dashboard/login"
        wrong = sign_in(live.url, keystone.admin_username, "not-it", keystone.admin_project,
                        browser)
        assert wrong.status_code == 401
        signed = sign_in(live.url, keystone.admin_username, keystone.admin_password,
                         keystone.admin_project, browser)
        assert signed.status_code == 303, signed.text
        page = browser.get(live.url + "/")
        assert page.status_code == 200 and 'id="servers"' in page.text
        assert browser.get(live.url + "/dashboard/api/moves").json() == {"moves": []}
