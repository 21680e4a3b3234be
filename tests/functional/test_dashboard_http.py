"""The dashboard's JSON routes over HTTP: paging, filters, moves, audit, and who may look.

The world of most tests::

    host1, host2, host3 (8 VCPU, 4096 MB, 40 GB each)
    vm-0 .. vm-4 (tiny: 1 VCPU, 256 MB, 1 GB), spread by the scheduler

Browsers get the page at `/`; API clients keep today's JSON there.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import httpx
import pytest

from stowage.compute.hosts import OVS, SRIOV, NetworkDevice
from tests.functional.conftest import Cloud, LiveServer
from tests.functional.servers import action, boot, flavor, flavor_id, host_of, image, server

BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


def _get(cloud: Cloud, path: str, **params: Any) -> httpx.Response:
    return httpx.get(f"{cloud.live.url}{path}", params=params, timeout=30)


@pytest.fixture
def world(cloud: Cloud) -> dict[str, str]:
    """Three hosts and five servers (names vm-0 .. vm-4, booted in that order)."""
    for name in ("host1", "host2", "host3"):
        cloud.add_host(name, vcpus=8, memory_mb=4096, disk_gb=40)
    flavor(cloud, "tiny", 1, 256, 1)
    tiny, img = flavor_id(cloud, "tiny"), image(cloud)
    return {f"vm-{n}": boot(cloud, f"vm-{n}", tiny, img) for n in range(5)}


def test_api_clients_keep_the_json_browsers_get_the_page(cloud: Cloud) -> None:
    for accept in ("application/json", "*/*", ""):
        resp = httpx.get(cloud.live.url + "/", headers={"accept": accept}, timeout=30)
        assert resp.status_code == 200 and "services" in resp.json(), accept
    page = httpx.get(cloud.live.url + "/", headers={"accept": BROWSER}, timeout=30)
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
    for section in ('id="hosts"', 'id="servers"', 'id="moves"', 'id="audit"',
                    'id="plan-drain"', 'id="capacity"'):
        assert section in page.text
    script = httpx.get(cloud.live.url + "/dashboard/static/dashboard.js", timeout=30)
    assert script.status_code == 200 and "/dashboard/part/" in script.text


def test_servers_are_paged_and_filtered_on_the_server(cloud: Cloud,
                                                      world: dict[str, str]) -> None:
    first = _get(cloud, "/dashboard/api/servers", per_page=2).json()
    assert (first["total"], first["pages"], first["page"]) == (5, 3, 1)
    assert [s["name"] for s in first["servers"]] == ["vm-4", "vm-3"]  # newest first
    last = _get(cloud, "/dashboard/api/servers", per_page=2, page=3).json()
    assert [s["name"] for s in last["servers"]] == ["vm-0"]
    named = _get(cloud, "/dashboard/api/servers", q="vm-2").json()
    assert [s["uuid"] for s in named["servers"]] == [world["vm-2"]]
    by_uuid = _get(cloud, "/dashboard/api/servers", q=world["vm-1"]).json()
    assert [s["name"] for s in by_uuid["servers"]] == ["vm-1"]
    host = host_of(cloud, world["vm-0"])
    on_host = _get(cloud, "/dashboard/api/servers", host=host).json()["servers"]
    assert on_host and all(s["host"] == host for s in on_host)
    assert world["vm-0"] in {s["uuid"] for s in on_host}
    action(cloud, world["vm-3"], {"os-stop": None})
    shutoff = _get(cloud, "/dashboard/api/servers", status="shutoff").json()
    assert [s["name"] for s in shutoff["servers"]] == ["vm-3"] and shutoff["total"] == 1
    view = shutoff["servers"][0]
    assert (view["vm_state"], view["flavor"], view["project"]) == ("stopped", "tiny", "admin")
    for bad in ({"per_page": "0"}, {"per_page": "201"}, {"page": "x"}, {"colour": "red"}):
        assert _get(cloud, "/dashboard/api/servers", **bad).status_code == 400, bad


def test_hosts_show_their_provider_trees_paged_and_filtered(cloud: Cloud,
                                                            world: dict[str, str]) -> None:
    page = _get(cloud, "/dashboard/api/hosts", per_page=2).json()
    assert (page["total"], page["pages"]) == (3, 2)
    assert [h["host"] for h in page["hosts"]] == ["host1", "host2"]
    host1 = page["hosts"][0]
    assert (host1["state"], host1["disabled"], host1["cell"]) == ("up", False, "cell1")
    vcpu = next(r for r in host1["tree"]["resources"] if r["class"] == "VCPU")
    on_host1 = sum(1 for uuid in world.values() if host_of(cloud, uuid) == "host1")
    assert (vcpu["total"], vcpu["used"]) == (8, on_host1)
    assert vcpu["capacity"] == int((vcpu["total"] - vcpu["reserved"])
                                   * vcpu["allocation_ratio"])
    assert "COMPUTE_STATUS_DISABLED" not in host1["tree"]["traits"]
    resp = cloud.compute.put("/os-services/" + _service_id(cloud, "host3"),
                             json={"status": "disabled", "disabled_reason": "maintenance"})
    assert resp.status_code == 200, resp.text
    disabled = _get(cloud, "/dashboard/api/hosts", state="disabled").json()
    assert [(h["host"], h["disabled_reason"]) for h in disabled["hosts"]] == [
        ("host3", "maintenance")]
    assert [h["host"] for h in _get(cloud, "/dashboard/api/hosts", q="ST2").json()["hosts"]] \
        == ["host2"]
    assert _get(cloud, "/dashboard/api/hosts", state="sleepy").status_code == 400


def test_device_and_sharing_providers_show_under_their_hosts(cloud: Cloud) -> None:
    """host1 has an OVS bridge and an SR-IOV PF, and shares storage ceph1 with host2::

        host1 ─┬─ host1:Open vSwitch agent ── ...:br-physnet0 (bandwidth)
               └─ host1:NIC Switch agent ──── ...:ens5 (bandwidth, VFs)
        ceph1 (DISK_GB, MISC_SHARES_VIA_AGGREGATE) in host1's and host2's aggregate
    """
    bridge = NetworkDevice("br-physnet0", OVS, "physnet0", egress_kbps=10_000_000)
    pf = NetworkDevice("ens5", SRIOV, "physnet1", egress_kbps=25_000_000, vfs=8)
    cloud.add_host("host1", network_devices=(bridge, pf), shared_storage="ceph1")
    cloud.add_host("host2", shared_storage="ceph1")
    hosts = {h["host"]: h for h in _get(cloud, "/dashboard/api/hosts").json()["hosts"]}
    tree = hosts["host1"]["tree"]
    agents = {c["name"]: c for c in tree["children"]}
    assert set(agents) == {"host1:Open vSwitch agent", "host1:NIC Switch agent"}
    [port] = agents["host1:NIC Switch agent"]["children"]
    assert port["name"] == "host1:NIC Switch agent:ens5"
    assert {r["class"]: r["total"] for r in port["resources"]}["SRIOV_NET_VF"] == 8
    [bridge_rp] = agents["host1:Open vSwitch agent"]["children"]
    assert "CUSTOM_PHYSNET_PHYSNET0" in bridge_rp["traits"]
    for name in ("host1", "host2"):
        [shared] = hosts[name]["sharing"]
        assert "MISC_SHARES_VIA_AGGREGATE" in shared["traits"]
        assert [r["class"] for r in shared["resources"]] == ["DISK_GB"]
    assert "DISK_GB" not in {r["class"] for r in tree["resources"]}
    page = httpx.get(cloud.live.url + "/", headers={"accept": BROWSER}, timeout=30).text
    assert 'data-provider="' + port["uuid"] + '"' in page and ">shared</span>" in page


def _service_id(cloud: Cloud, host: str) -> str:
    found = cloud.compute.get("/os-services", params={"host": host,
                                                      "binary": "nova-compute"}).json()
    return str(found["services"][0]["id"])


def test_a_resize_shows_who_owns_what_where(cloud: Cloud) -> None:
    nodes = {name: cloud.add_host(name, vcpus=8, memory_mb=4096, disk_gb=40)
             for name in ("host1", "host2")}
    flavor(cloud, "small", 1, 512, 5)
    flavor(cloud, "large", 2, 1024, 10)
    server_id = boot(cloud, "vm", flavor_id(cloud, "small"), image(cloud))
    assert _get(cloud, "/dashboard/api/moves").json() == {"moves": []}
    action(cloud, server_id, {"resize": {"flavorRef": flavor_id(cloud, "large")}})
    [move] = _get(cloud, "/dashboard/api/moves").json()["moves"]
    assert (move["type"], move["source"], move["dest"]) == ("resize", "host1", "host2")
    assert move["server"]["status"] == "VERIFY_RESIZE"
    assert move["migration_holds"] == [{"provider": nodes["host1"], "name": "host1",
                                        "resources": {"DISK_GB": 5, "MEMORY_MB": 512,
                                                      "VCPU": 1}}]
    assert move["instance_holds"] == [{"provider": nodes["host2"], "name": "host2",
                                       "resources": {"DISK_GB": 10, "MEMORY_MB": 1024,
                                                     "VCPU": 2}}]
    assert move["step"]["operation"] == "resize" and move["elapsed"] >= 0
    audit = _get(cloud, "/dashboard/api/audit", wait="1").json()
    assert (audit["available"], audit["ok"], audit["violations"]) == (True, True, [])
    action(cloud, server_id, {"confirmResize": None}, status=204)
    assert _get(cloud, "/dashboard/api/moves").json() == {"moves": []}
    assert server(cloud, server_id)["status"] == "ACTIVE"


def test_the_audit_lists_violations_with_links(cloud: Cloud) -> None:
    node = cloud.add_host("host1", vcpus=8, memory_mb=4096, disk_gb=40)
    orphan = "6f1c2f3e-1111-4222-8333-444455556666"
    resp = cloud.placement.put(f"/allocations/{orphan}", json={
        "allocations": {node: {"resources": {"VCPU": 1}}}, "project_id": "p",
        "user_id": "u", "consumer_generation": None, "consumer_type": "INSTANCE"})
    assert resp.status_code == 204, resp.text
    audit = _get(cloud, "/dashboard/api/audit", wait="1").json()
    assert audit["ok"] is False
    assert [v for v in audit["violations"] if orphan in v]
    part = _get(cloud, "/dashboard/part/audit").text
    assert 'id="audit-bad"' in part and f'href="?servers_q={orphan}"' in part


def test_non_admins_are_refused(cloud: Cloud) -> None:
    for path in ("/dashboard/api/hosts", "/dashboard/part/servers"):
        resp = httpx.get(cloud.live.url + path, headers={"x-auth-token": "demo:p1"},
                         timeout=30)
        assert resp.status_code == 403, path
    member = httpx.get(cloud.live.url + "/", timeout=30,
                       headers={"accept": BROWSER, "x-auth-token": "demo:p1",
                                "x-roles": "member,reader"})
    assert member.status_code == 403 and "administrators" in member.text
    admin = httpx.get(cloud.live.url + "/dashboard/api/moves", timeout=30,
                      headers={"x-auth-token": "admin"})
    assert admin.status_code == 200


def _from(app: Any, address: str, path: str, **headers: str) -> httpx.Response:
    """GET `path` of the server's own ASGI app as a client at `address` would."""
    async def ask() -> httpx.Response:
        transport = httpx.ASGITransport(app=app, client=(address, 4242))
        async with httpx.AsyncClient(transport=transport, base_url="http://cloud.example",
                                     timeout=30) as client:
            return await client.get(path, headers=headers)
    return asyncio.run(ask())


def test_noauth2_answers_only_loopback_unless_opened(cloud: Cloud) -> None:
    app = cloud.live.server.config.app
    assert _from(app, "192.0.2.7", "/dashboard/api/hosts").status_code == 403
    page = _from(app, "192.0.2.7", "/", accept=BROWSER)
    assert page.status_code == 403 and "loopback" in page.text
    assert "services" in _from(app, "192.0.2.7", "/").json()  # the API document stays open
    assert _from(app, "127.0.0.1", "/dashboard/api/hosts").status_code == 200
    assert _from(app, "::1", "/dashboard/api/hosts").status_code == 200
    relayed = _from(app, "127.0.0.1", "/dashboard/api/hosts", **{"x-forwarded-for": "192.0.2.7"})
    assert relayed.status_code == 403
    world = app.fallback.dashboard.world
    settings = world.settings
    world.settings = dataclasses.replace(settings, api=dataclasses.replace(
        settings.api, dashboard_beyond_loopback=True))
    try:
        assert _from(app, "192.0.2.7", "/dashboard/api/hosts").status_code == 200
    finally:
        world.settings = settings


def test_state_changes_need_a_post_with_the_form_value(cloud: Cloud) -> None:
    assert httpx.post(cloud.live.url + "/dashboard/api/hosts", timeout=30).status_code == 405
    assert httpx.get(cloud.live.url + "/dashboard/logout", timeout=30).status_code == 405


def test_a_sign_in_body_over_the_forms_size_is_refused_unread(cloud: Cloud) -> None:
    """The sign-in form is read by the services' bounded reader: a body past its
    16 KiB is a 413 that closes the connection, before any of it is looked at."""
    big = {"username": "admin", "password": "x" * 20_000, "project": "admin", "csrf": "c"}
    resp = httpx.post(cloud.live.url + "/dashboard/login", data=big, timeout=30)
    assert resp.status_code == 413, resp.text
    assert resp.headers["connection"] == "close"
    assert "16384 bytes" in resp.json()["error"]
    assert "set-cookie" not in resp.headers


@pytest.fixture
def identity_live(live_identity: LiveServer) -> LiveServer:
    return live_identity


def sign_in(url: str, user: str, password: str, project: str,
           client: httpx.Client) -> httpx.Response:
    form = client.get(url + "/dashboard/login")
    assert form.status_code == 200 and 'name="password"' in form.text
    csrf = client.cookies["stowage_dashboard_csrf"]
    return client.post(url + "/dashboard/login", data={
        "username": user, "password": password, "project": project, "csrf": csrf})


def test_sign_in_with_the_builtin_identity(identity_live: LiveServer) -> None:
    url = identity_live.url
    with httpx.Client(timeout=30, headers={"accept": BROWSER}) as browser:
        first = browser.get(url + "/")
        assert first.status_code == 303 and first.headers["location"] == "/dashboard/login"
        assert browser.get(url + "/dashboard/api/hosts").status_code == 401
        wrong = sign_in(url, "admin", "not-it", "admin", browser)
        assert wrong.status_code == 401 and "not accepted" in wrong.text
        assert "stowage_dashboard_token" not in browser.cookies
        forged = browser.post(url + "/dashboard/login", data={
            "username": "admin", "password": "admin-pw", "project": "admin", "csrf": "guess"})
        assert forged.status_code == 403
        signed = sign_in(url, "admin", "admin-pw", "admin", browser)
        assert signed.status_code == 303 and signed.headers["location"] == "/"
        cookie = signed.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
        page = browser.get(url + "/")
        assert page.status_code == 200 and 'id="hosts"' in page.text
        assert browser.get(url + "/dashboard/api/moves").json() == {"moves": []}
        token = browser.cookies["stowage_dashboard_token"]
        csrf = browser.cookies["stowage_dashboard_csrf"]
        assert browser.post(url + "/dashboard/logout", data={"csrf": "x"}).status_code == 403
        out = browser.post(url + "/dashboard/logout", data={"csrf": csrf})
        assert out.status_code == 303 and "Max-Age=0" in out.headers["set-cookie"]
        assert browser.get(url + "/dashboard/api/hosts").status_code == 401
    header = httpx.get(url + "/dashboard/api/moves", headers={"x-auth-token": token},
                       timeout=30)
    assert header.status_code == 200
    with httpx.Client(timeout=30, headers={"accept": BROWSER}) as member:
        assert sign_in(url, "alice", "alice-pw", "alpha", member).status_code == 303
        refused = member.get(url + "/")
        assert refused.status_code == 403 and "administrators" in refused.text
