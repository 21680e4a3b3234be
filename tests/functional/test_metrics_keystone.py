"""`GET /metrics` with `auth_strategy = "keystone"`: the real Keystone (tests/keystone)
validates the token, and only an admin's scrapes.

    no token                         401
    a token Keystone never issued    401
    a member's (project-scoped)      403
    the admin's                      200, Placement's and Nova's gauges

SQLite only: what differs from the other strategies is who validates the token, not
the database (test_metrics_access.py covers the backends).
"""

from __future__ import annotations

from tests.functional.keystone_deploy import client, keystone_stowage
from tests.functional.metrics_scrape import scrape, value
from tests.keystone.fixture import Keystone


def test_only_a_keystone_admin_token_scrapes(keystone: Keystone) -> None:
    member = keystone.admin.user("member")
    with keystone_stowage(keystone) as live:
        with client(live, None) as anonymous:
            assert anonymous.get("/metrics").status_code == 401
        with client(live, "gAAAAAnot-a-keystone-token") as forged:
            assert forged.get("/metrics").status_code == 401
        with client(live, keystone.admin.token(member)) as as_member:
            refused = as_member.get("/metrics")
            assert refused.status_code == 403, refused.text
        with client(live, keystone.admin.admin_token()) as admin:
            samples = scrape(admin)
    assert value(samples, "openstack_placement_up") == 1
    assert value(samples, "openstack_nova_up") == 1
