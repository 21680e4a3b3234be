"""Who may read `GET /metrics`: an admin's token, or a client of an allowed network.

    noauth2            no token 401, a member's 403, admin 200
    builtin-identity   no token 401, alice (member of alpha) 403, admin (admin role) 200
    [metrics] allow_unauthenticated_from = ["127.0.0.1/32"]    no token 200

Every scrape, answered or refused, is a line of the request log, as any other request is.
"""

from __future__ import annotations

import logging

import httpx
import pytest

from stowage import config
from tests.conftest import BACKENDS
from tests.functional.conftest import MEMBER, LiveServer, api_client, serving
from tests.functional.identity import login, token_client
from tests.functional.metrics_scrape import scrape, value


def test_noauth2_needs_an_admin_token(live_stowage: LiveServer) -> None:
    url = f"{live_stowage.url}/metrics"
    assert httpx.get(url).status_code == 401
    with api_client(live_stowage.url, token="demo:p1", roles=MEMBER) as member:
        assert member.get("/metrics").status_code == 403
    with api_client(live_stowage.url) as admin:
        assert value(scrape(admin), "openstack_placement_up") == 1


def test_builtin_identity_needs_a_token_with_the_admin_role(live_identity: LiveServer) -> None:
    assert httpx.get(f"{live_identity.url}/metrics").status_code == 401
    with token_client(live_identity, "not-a-token") as forged:
        assert forged.get("/metrics").status_code == 401
    with token_client(live_identity, login(live_identity, "alice", "alpha")) as alice:
        assert alice.get("/metrics").status_code == 403
    with token_client(live_identity, login(live_identity, "admin", "admin")) as admin:
        assert value(scrape(admin), "openstack_nova_up") == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_allowed_network_scrapes_without_a_token(backend: str) -> None:
    allowed = config.MetricsSettings(allow_unauthenticated_from=("127.0.0.1/32",))
    with serving(backend, ("placement",), metrics=allowed) as live, \
            httpx.Client(base_url=live.url) as anonymous:
        samples = scrape(anonymous)
        assert value(samples, "openstack_placement_up") == 1
        # Placement alone: its gauges, not Compute's.
        assert not any(name.startswith("openstack_nova_") for name, _ in samples)
        assert anonymous.get("/resource_providers").status_code == 401


def test_scrapes_are_in_the_request_log(live_stowage: LiveServer,
                                        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="stowage.web.requestlog"):
        refused = httpx.get(f"{live_stowage.url}/metrics?x=1")
        with api_client(live_stowage.url) as admin:
            answered = admin.get("/metrics")
    lines = [r.getMessage() for r in caplog.records if r.name == "stowage.web.requestlog"]
    for resp, status in ((refused, 401), (answered, 200)):
        assert resp.status_code == status
        request_id = resp.headers["x-openstack-request-id"]
        mine = [line for line in lines if line.startswith(f"[{request_id}] ")]
        assert len(mine) == 1, lines
        uri = "/metrics?x=1" if status == 401 else "/metrics"
        assert f'"GET {uri}" status: {status} len: {len(resp.content)} ' \
               "microversion: - time: " in mine[0]
