"""The dashboard's drain plans and capacity over HTTP: the Compute routes' answers, read only.

The drain plan is asked of the varied world of `drain_world.py` (host1 holds
every server; groups, a zone, a paused and a stopped server, a forced-down
host); the dashboard's plan must be the route's plan, its page must show each
planned destination, and asking it must change nothing. Capacity is the
world of test_capacity.py, smaller.
"""

from __future__ import annotations

import re
from html import unescape
from typing import Any

import httpx

from tests.functional.conftest import Cloud
from tests.functional.drain_world import varied
from tests.functional.servers import boot, flavor, image
from tests.functional.test_drain import plan, world_state

BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
RATIO_1 = {"cpu_allocation_ratio": 1.0, "ram_allocation_ratio": 1.0}


def _get(cloud: Cloud, path: str, **params: Any) -> httpx.Response:
    return httpx.get(f"{cloud.live.url}{path}", params=params, timeout=60,
                     headers={"accept": BROWSER})


def _rows(page: str) -> dict[str, tuple[str, str]]:
    """server id -> (move, planned destination) as the drain plan page shows them."""
    found = {}
    for row in re.findall(r'<tr class="planned action-[a-z]+" data-server="([^"]+)">(.*?)</tr>',
                          page):
        server, cells = row
        move = re.search(r'<td class="action"><span[^>]*>([^<]*)</span>', cells)
        dest = re.search(r'<td class="destination">([^<]*)</td>', cells)
        assert move and dest, cells
        found[server] = (unescape(move.group(1)), unescape(dest.group(1)))
    return found


def test_the_dashboards_plan_is_the_routes_and_changes_nothing(cloud: Cloud) -> None:
    ids = varied(cloud)
    before = world_state(cloud)
    route = plan(cloud, "host1", verbose=True)
    mine = _get(cloud, "/dashboard/api/drain-plan/host1", verbose="1")
    assert mine.status_code == 200, mine.text
    assert mine.json()["drain"] == route
    page = _get(cloud, "/dashboard/drain/host1")
    assert page.status_code == 200 and "frame-ancestors 'none'" in \
        page.headers["content-security-policy"]
    shown = _rows(page.text)
    assert shown == {s["id"]: (s["action"], s["destination"] or "-")
                     for s in route["servers"]}
    assert shown[ids["paused"]][0] == "live" and shown[ids["stopped"]][0] == "cold"
    assert {dest for _, dest in shown.values()} - {"-"} <= {"host2", "host3", "host5"}
    for name, count in route["totals"].items():
        assert f'<span data-total="{name}">{name} <b>{count}</b></span>' in page.text
    verbose = _get(cloud, "/dashboard/drain/host1", verbose="1").text
    assert "rejected by IgnoreHostsFilter" in verbose
    assert world_state(cloud) == before, "a plan from the dashboard changed something"


def test_the_page_links_each_hosts_plan(cloud: Cloud) -> None:
    cloud.add_host("host1")
    page = _get(cloud, "/").text
    assert '<a class="plan-drain" href="/dashboard/drain/host1">Plan drain</a>' in page
    assert 'id="plan-drain-form"' in page and 'data-part="capacity"' in page
    form = httpx.get(f"{cloud.live.url}/dashboard/drain", params={"host": "host1"},
                     timeout=30)
    assert (form.status_code, form.headers["location"]) == (303, "/dashboard/drain/host1")
    empty = _get(cloud, "/dashboard/drain/host1").text
    assert 'id="no-servers"' in empty and 'data-total="servers">servers <b>0</b>' in empty
    assert _get(cloud, "/dashboard/drain/nohost").status_code == 404
    assert _get(cloud, "/dashboard/api/drain-plan/nohost").json() == {
        "error": "Compute host nohost could not be found."}
    assert _get(cloud, "/dashboard/drain/host1", bogus="1").status_code == 400


def test_capacity_is_the_routes(cloud: Cloud) -> None:
    cloud.add_host("hostA", vcpus=4, memory_mb=4096, disk_gb=40, **RATIO_1)
    small = flavor(cloud, "small", 1, 512, 5)
    flavor(cloud, "big", 4, 4096, 40)
    boot(cloud, "vm", small, image(cloud))
    cloud.add_host("hostD", vcpus=1, memory_mb=256, disk_gb=3, **RATIO_1)
    route = cloud.compute.get("/os-stowage-capacity").json()["capacity"]
    mine = _get(cloud, "/dashboard/api/capacity", wait="1").json()
    assert {k: mine[k] for k in ("flavors", "fragmentation")} == route
    assert {f["flavor"]: f["total"] for f in mine["flavors"]} == {"small": 3, "big": 0}
    part = _get(cloud, "/dashboard/part/capacity").text
    assert f'data-flavor="{route["flavors"][0]["flavorid"]}"' in part
    assert '<td class="more">3</td>' in part and '<td class="more">0</td>' in part
    assert '<li data-host="hostD"><b>hostD</b>: DISK_GB 3, MEMORY_MB 256, VCPU 1</li>' in part


def test_plans_and_capacity_are_for_admins_only(cloud: Cloud) -> None:
    cloud.add_host("host1")
    member = {"x-auth-token": "demo:p1", "x-roles": "member,reader", "accept": BROWSER}
    for path in ("/dashboard/drain/host1", "/dashboard/api/drain-plan/host1",
                 "/dashboard/api/capacity", "/dashboard/part/capacity"):
        resp = httpx.get(cloud.live.url + path, headers=member, timeout=30)
        assert resp.status_code == 403, path
    admin = httpx.get(cloud.live.url + "/dashboard/api/drain-plan/host1", timeout=30,
                      headers={"x-auth-token": "admin"})
    assert admin.status_code == 200 and admin.json()["drain"]["host"] == "host1"
